#!/bin/sh
# Regenerates the golden state directories under testdata/states from real runs of
# testdata/campaign/*.hcl on the simulator. Run from the repository root:
#   sh steps/report/testdata/make-states.sh && go test ./steps/report -update
# The states are checked in; the goldens are computed from them, so they only
# change when the states are regenerated or the report changes. The verdict states
# need curl (the drift step posts to the simulator's /debug/faults).
set -e
T=steps/report/testdata
BIN=$(mktemp -d)
trap 'rm -rf "$BIN"' EXIT
go build -o "$BIN/rigor" ./cmd/rigor
RIGOR=${RIGOR:-$BIN/rigor}
rm -rf "$T/states"
mkdir -p "$T/states"
run() {
	name=$1; shift
	$RIGOR plan apply "$T/campaign/campaign.hcl" --state "$T/states/$name" --log-level warn \
		--var time_scale=0.01 --var block_seconds=0.2 "$@" || true
	rm -f "$T/states/$name/lock"
}
run clean
run failed-cell --var incumbent_exhaustion=0.1
run stop-blocked --var candidate_omit_usage=1
# An amendment after the freeze: the decision rule's minimum gain is lowered.
run amended
sed 's/min_gain                 = 0.05/min_gain                 = 0.03/' "$T/campaign/campaign.hcl" > "$T/campaign-amended.hcl.tmp"
mkdir -p "$T/amend" && mv "$T/campaign-amended.hcl.tmp" "$T/amend/campaign.hcl"
$RIGOR plan diff "$T/amend/campaign.hcl" --state "$T/states/amended" --record --reason "lower the minimum gain to 3% after review" \
	--var time_scale=0.01 --var block_seconds=0.2
rm -rf "$T/amend" "$T/states/amended/lock"

# The verdict's states (verdict.hcl): a candidate about 10% faster (the incumbent's
# delays × 1.1) measured with low noise (every request generates 64 tokens); the
# same effect with natural output and few requests per block (noise that makes the
# interval straddle the 5% threshold); and the low-noise campaign with the incumbent
# slowed × 1.3 between its before and after arms (drift).
verdict() {
	name=$1; shift
	$RIGOR plan apply "$T/campaign/verdict.hcl" --state "$T/states/$name" --log-level warn --var block_seconds=1 "$@" || true
	rm -f "$T/states/$name/lock"
}
verdict verdict-faster
verdict verdict-noisy --var max_tokens=2048 --var reasoning_effort=max --var max_requests=8
verdict verdict-drift --var after_slowdown=1.3
