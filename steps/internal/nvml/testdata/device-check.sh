#!/usr/bin/env bash
# Device check for a machine with NVIDIA GPUs. It builds nothing: give it a rigor
# binary built with cgo (CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" go build -o
# bin/rigor ./cmd/rigor) and it
#   1. prints the NVML identity of every GPU (`rigor gpus`, table and JSON);
#   2. runs a tiny campaign on a host with gpus = "nvml": a simulated serving target,
#      one block gated on the GPU count, driver and the power limit NVML reports, with
#      the sampler at 100 ms; then checks gpu.jsonl has a row for every GPU;
#   3. runs the same block gated on a limit 1 W off, which must fail with class gate.
# Usage: device-check.sh [path/to/rigor]   (default: bin/rigor). Exit 0 = all passed.
set -euo pipefail
RIGOR=${1:-bin/rigor}
RIGOR=$(cd "$(dirname "$RIGOR")" && pwd)/$(basename "$RIGOR")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== rigor gpus (NVML identity)"
"$RIGOR" gpus
"$RIGOR" gpus --json > "$work/gpus.json"
cat "$work/gpus.json"

count=$(grep -c '"uuid"' "$work/gpus.json")
driver=$(grep -m1 '"driver"' "$work/gpus.json" | sed 's/.*"driver": "\(.*\)".*/\1/')
limit=$(grep -m1 '"enforced_power_limit_w"' "$work/gpus.json" | sed 's/.*: \([0-9.]*\).*/\1/')
echo "count=$count driver=$driver limit=${limit} W"
[ "$count" -ge 1 ] || { echo "FAIL: no GPU"; exit 1; }

campaign() { # $1 = gate limit in watts, $2 = directory
  mkdir -p "$2"
  cat > "$2/campaign.hcl" <<HCL
campaign "device-check" {}
host "gpu" {
  runtime      = "sim"
  gpus         = "nvml"
  gpu_interval = "100ms"
}
target "sim" {
  host       = host.gpu
  container  = "device-check"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:18999"
  time_scale = 0.05
}
workload "w" {
  corpus_seed     = 1
  nominal_context = 1024
  max_tokens      = 2048
}
gate "gpus" {
  gpu_count         = $count
  driver            = "$driver"
  power_limit_watts = $1
}
step "deploy" "sim" {
  target  = target.sim
  timeout = "1m"
}
step "block" "b" {
  target      = target.sim
  workload    = workload.w
  concurrency = 2
  requests    = 8
  gates       = [gate.gpus]
  timeout     = "2m"
  depends_on  = [step.deploy.sim]
}
step "restore" "sim" {
  target  = target.sim
  always  = true
  timeout = "1m"
}
HCL
}

echo "== campaign gated on ${limit} W, gpus = \"nvml\""
campaign "$limit" "$work/ok"
"$RIGOR" plan apply "$work/ok/campaign.hcl" --state "$work/ok/st"
rows=$(find "$work/ok/st/attempts" -path '*block.b*' -name gpu.jsonl -exec cat {} + | grep -c '"uuid"')
devs=$(find "$work/ok/st/attempts" -path '*block.b*' -name gpu.jsonl -exec cat {} + | grep -o '"index":[0-9]*' | sort -u | wc -l)
echo "gpu.jsonl: $rows rows over $devs GPU(s)"
[ "$devs" -eq "$count" ] || { echo "FAIL: gpu.jsonl covers $devs of $count GPUs"; exit 1; }
find "$work/ok/st/attempts" -path '*block.b*' -name gpu-gate.json -exec cat {} +
"$RIGOR" verify --state "$work/ok/st"

echo "== campaign gated on a wrong limit must stop with class gate"
wrong=$(awk -v l="$limit" 'BEGIN { print l + 1 }')
campaign "$wrong" "$work/bad"
set +e
out=$("$RIGOR" plan apply "$work/bad/campaign.hcl" --state "$work/bad/st" 2>&1)
rc=$?
set -e
echo "$out" | tail -5
[ "$rc" -ne 0 ] && echo "$out" | grep -q 'class=gate\|(gate)\|"class":"gate"' || { echo "FAIL: wrong limit not stopped as gate (rc $rc)"; exit 1; }
echo "device check passed"
