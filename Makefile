# rigor: the two commands a new user needs are `make run` and `make test`.
GO ?= go
# go-nvml's header marks many functions deprecated; the warnings say nothing about rigor.
CGO_CFLAGS ?= -O2 -g -Wno-deprecated-declarations
export CGO_CFLAGS

.PHONY: build test bench run fuzz vet report-check

build:
	$(GO) build -o bin/rigor ./cmd/rigor

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Figures the issues ask for, each against a baseline measured in the same run.
bench:
	$(GO) test ./plans -run '^$$' -bench BenchmarkLoad10kInstances -benchtime 3x
	# plan validate on a 10 MB campaign, with a 1 MB one and a bare hclsyntax parse of
	# the 10 MB file measured in the same run: time, allocation and peak ratios; and
	# on chains of 2,000 and 20,000 steps declared last-first.
	$(GO) test ./plans -run '^$$' -bench 'BenchmarkValidate10MB|BenchmarkReversedChain' -benchtime 1x
	$(GO) test ./engine -run '^$$' -bench 'BenchmarkNoOpStep|BenchmarkHashGiB' -benchtime 2x
	$(GO) test ./steps/internal/loadgen -run '^$$' -bench . -benchtime 200x
	# Simulator throughput: server pinned to core 0; the benchmark runs its client as a
	# separate process on another core and reports server CPU per token.
	$(GO) test -c -o bin/sim.test ./steps/internal/sim
	taskset -c 0 bin/sim.test -test.run '^$$' -test.bench 'StreamC1024(Capacity)?$$' -test.cpu 1 -test.benchtime 3x
	# Client timing fidelity: the exact-schedule server on core 0 (the benchmark pins
	# it), the client on core 1; ratios are against the issue's aiohttp figures.
	$(GO) test -c -o bin/calibrate.test ./steps/calibrate
	cd steps/calibrate && taskset -c 1 ../../bin/calibrate.test -test.run '^$$' -test.bench Fidelity -test.benchtime 1x
	# Last: it writes and deletes ~570 MB, whose writeback would disturb the timing runs above.
	$(GO) test ./steps/report -run '^$$' -bench BenchmarkReport1M -benchtime 1x # bench-report: 1,000,000 records, < 10 s and < 1 GiB

run:
	$(GO) run ./cmd/rigor plan apply examples/quickstart/campaign.hcl --state runs/quickstart-$$(date +%Y%m%d-%H%M%S)

# Each target fuzzes for 60 s. Go minimises every new input it finds; with the
# default 60 s of minimising a run spent most of its minute on that, so it is 10 s.
# A crasher is kept in plans/testdata/fuzz/<target>, where plain `go test` replays it.
fuzz:
	$(GO) test ./plans -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime 60s -fuzzminimizetime 10s
	$(GO) test ./plans -run '^$$' -fuzz '^FuzzChunkedParse$$' -fuzztime 60s -fuzzminimizetime 10s

# Render report.html in headless Chromium (Debian: apt-get install chromium) and
# check that its tables and embedded charts are present; REPORT_CHECK_OUT=DIR keeps
# the screenshot and PDF.
report-check:
	$(GO) test -tags reportcheck -count=1 -run TestReportRendersInChromium -v ./steps/report
