# rigor: the two commands a new user needs are `make run` and `make test`.
GO ?= go

.PHONY: build test bench run fuzz vet

build:
	$(GO) build -o bin/rigor ./cmd/rigor

test:
	$(GO) vet ./...
	$(GO) test -count=1 ./...

# Figures the issues ask for, each against a baseline measured in the same run.
bench:
	$(GO) test ./plans -run '^$$' -bench BenchmarkLoad10kInstances -benchtime 3x
	$(GO) test ./engine -run '^$$' -bench 'BenchmarkNoOpStep|BenchmarkHashGiB' -benchtime 2x
	$(GO) test ./steps/internal/loadgen -run '^$$' -bench . -benchtime 200x
	$(GO) test ./steps/internal/sim -run '^$$' -bench StreamC1024 -cpu 1,2 -benchtime 3x

run:
	$(GO) run ./cmd/rigor plan apply examples/quickstart/campaign.hcl --state runs/quickstart-$$(date +%Y%m%d-%H%M%S)

fuzz:
	$(GO) test ./plans -run '^$$' -fuzz FuzzLoad -fuzztime 60s
