#!/bin/sh
# Regenerates the golden state directories under testdata/states from real runs of
# testdata/campaign/campaign.hcl on the simulator. Run from the repository root:
#   sh steps/report/testdata/make-states.sh && go test ./steps/report -update
# The states are checked in; the goldens are computed from them, so they only
# change when the states are regenerated or the report changes.
set -e
T=steps/report/testdata
RIGOR=${RIGOR:-go run ./cmd/rigor}
rm -rf "$T/states"
mkdir -p "$T/states"
run() {
	name=$1; shift
	$RIGOR plan apply "$T/campaign/campaign.hcl" --state "$T/states/$name" --log-level warn \
		--var time_scale=0.004 --var block_seconds=0.1 "$@" || true
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
	--var time_scale=0.004 --var block_seconds=0.1
rm -rf "$T/amend" "$T/states/amended/lock"
