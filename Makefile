# rigor: the two commands a new user needs are `make quickstart` and `make test`.
GO ?= go
# go-nvml's header marks many functions deprecated, and cgo compiles calls to them:
# about 150 lines of gcc warnings that say nothing about rigor. A package's #cgo
# directives cannot change another package's flags, and go-nvml has no option of its
# own, so the flag is added here, to whatever CGO_CFLAGS the Go environment has.
CGO_CFLAGS := $(filter-out -Wno-deprecated-declarations,$(shell $(GO) env CGO_CFLAGS)) -Wno-deprecated-declarations
export CGO_CFLAGS
# What make builds lives inside the tree's fixed layout: the binary and benchmark
# executables next to the command's source, and each example's state directories
# next to its campaign (both ignored by git).
BIN := cmd/rigor/bin
# The quickstart's state directory: a new one per run (a completed campaign is closed).
STATE ?= examples/quickstart/runs/$(shell date +%Y%m%d-%H%M%S)

.PHONY: deps cgo-cflags build test bench run quickstart fuzz vet report-check docker-local docker-local-context docker-local-clean

# Every module at once, in parallel and silently: a build that downloads modules as
# it meets their imports fetches them as it goes and prints a line for each.
deps:
	@$(GO) mod download

# The CGO_CFLAGS the Makefile's Go commands use (steps/internal/nvml's test checks
# that they silence go-nvml).
cgo-cflags:
	@echo $(CGO_CFLAGS)

# The commit `rigor --version`, the journal and every result name. go build stamps
# it only from a .git directory and without GOFLAGS=-buildvcs=false, so it misses
# git worktrees and environments that set that flag; the commit is passed from git
# as well (cmd/rigor/version.go). Expanded only by the targets that build rigor.
VERSION_LDFLAGS = $(if $(COMMIT),-X main.buildCommit=$(COMMIT)$(if $(DIRTY), -X main.buildModified=true))
COMMIT = $(shell git rev-parse HEAD 2>/dev/null)
DIRTY = $(shell git status --porcelain 2>/dev/null | head -n 1)

build: deps
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BIN)/rigor ./cmd/rigor

test: deps
	$(GO) vet ./...
	# cmd/rigor runs every script of the CLI against real processes: minutes, more
	# than go test's default 10-minute bound on a loaded 2-core machine.
	$(GO) test -count=1 -timeout 30m ./...

# Figures the issues ask for, each against a baseline measured in the same run.
bench:
	$(GO) test ./plans -run '^$$' -bench BenchmarkLoad10kInstances -benchtime 3x
	# plan validate on a 10 MB campaign, with a 1 MB one and two bare hclsyntax parses
	# of the 10 MB file (whole, and in pieces as plan validate parses it) measured in
	# the same run: time, allocation and peak ratios, and each against issue 8's
	# bounds; and on chains of 2,000 and 20,000 steps declared last-first.
	$(GO) test ./plans -run '^$$' -bench 'BenchmarkValidate10MB|BenchmarkReversedChain' -benchtime 1x
	$(GO) test ./engine -run '^$$' -bench 'BenchmarkNoOpStep|BenchmarkHashGiB' -benchtime 2x
	$(GO) test ./steps/internal/loadgen -run '^$$' -bench . -benchtime 200x
	# Simulator throughput: server pinned to core 0; the benchmark runs its client as a
	# separate process on another core and reports server CPU per token.
	$(GO) test -c -o $(BIN)/sim.test ./steps/internal/sim
	taskset -c 0 $(BIN)/sim.test -test.run '^$$' -test.bench 'StreamC1024(Capacity)?$$' -test.cpu 1 -test.benchtime 3x
	# Client timing fidelity: the exact-schedule server on core 0 (the benchmark pins
	# it), the client on core 1; ratios are against the issue's aiohttp figures.
	$(GO) test -c -o $(BIN)/calibrate.test ./steps/calibrate
	cd steps/calibrate && taskset -c 1 $(abspath $(BIN))/calibrate.test -test.run '^$$' -test.bench Fidelity -test.benchtime 1x
	# Last: it writes and deletes ~570 MB, whose writeback would disturb the timing runs above.
	$(GO) test ./steps/report -run '^$$' -bench BenchmarkReport1M -benchtime 1x # bench-report: 1,000,000 records, < 10 s and < 1 GiB

# The README's first command: the quickstart campaign on the built-in simulator.
quickstart: build
	$(BIN)/rigor plan apply examples/quickstart/campaign.hcl --state $(STATE)

run: quickstart

# examples/docker-local runs the whole cycle on the local Docker Engine with images
# built FROM scratch from a static rigor binary. docker-local-context makes their
# build context (the campaign's context/ directory by default); docker-local builds
# it and applies the campaign (DOCKER_LOCAL_STATE, VARS="--var port=18091" ...);
# docker-local-clean removes every container and image the campaign created, by its
# label (LABEL, the campaign's default labels).
DOCKER_LOCAL_CONTEXT ?= examples/docker-local/context
DOCKER_LOCAL_STATE ?= examples/docker-local/runs/$(shell date +%Y%m%d-%H%M%S)
LABEL ?= rigor.example=docker-local

docker-local-context: deps
	@mkdir -p $(DOCKER_LOCAL_CONTEXT)
	CGO_ENABLED=0 $(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(DOCKER_LOCAL_CONTEXT)/rigor ./cmd/rigor
	@cp examples/docker-local/Dockerfile.incumbent examples/docker-local/Dockerfile.candidate examples/docker-local/Dockerfile.agent $(DOCKER_LOCAL_CONTEXT)/

docker-local: docker-local-context build
	$(BIN)/rigor plan apply examples/docker-local/campaign.hcl --state $(DOCKER_LOCAL_STATE) \
		$(if $(filter-out examples/docker-local/context,$(DOCKER_LOCAL_CONTEXT)),--var context=$(abspath $(DOCKER_LOCAL_CONTEXT))) $(VARS)

docker-local-clean:
	@ids=$$(docker ps -aq --filter label=$(LABEL)); [ -z "$$ids" ] || docker rm -f $$ids
	@ids=$$(docker images -q --filter label=$(LABEL) | sort -u); [ -z "$$ids" ] || docker rmi -f $$ids

# Each target fuzzes for 60 s. Go minimises every new input it finds; with the
# default 60 s of minimising a run spent most of its minute on that, so it is 10 s.
# A crasher is kept in plans/testdata/fuzz/<target>, where plain `go test` replays it.
fuzz:
	$(GO) test ./plans -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 60s -fuzzminimizetime 10s
	$(GO) test ./plans -run '^$$' -fuzz '^FuzzChunkedParse$$' -fuzztime 60s -fuzzminimizetime 10s

# Render report.html in headless Chromium (Debian: apt-get install chromium) and hold
# it to what the generator wrote: every table, row and heading parsed, every chart
# decoded at its PNG's size and laid out readable, no console message, no Markdown
# shown as text, a sane screenshot and PDF (steps/report/chromium_test.go). .ci/run
# installs chromium and makes this check mandatory. REPORT_CHECK_OUT=DIR keeps each
# state's report.html, screenshot and PDF.
report-check:
	$(GO) test -tags reportcheck -count=1 -run TestReportRendersInChromium -v ./steps/report
