package main

import "github.com/spf13/cobra"

// commandExamples are shown under every command's help. They live in one place so
// the help of the whole CLI reads alike; TestEveryCommandHasAnExample keeps it whole.
var commandExamples = map[string]string{
	"rigor": `  rigor plan apply examples/quickstart/campaign.hcl --state runs/q1
  rigor report --state runs/q1`,
	"rigor plan": `  rigor plan validate examples/flare-wave1`,
	"rigor plan validate": `  rigor plan validate examples/quickstart/campaign.hcl
  rigor plan validate campaign.hcl --var port=18090 --var-file prod.hcl`,
	"rigor plan show": `  rigor plan show examples/quickstart/campaign.hcl
  rigor plan show campaign.hcl --json | jq .campaign`,
	"rigor plan graph": `  rigor plan graph examples/flare-wave1 | dot -Tsvg > wave1.svg`,
	"rigor plan apply": `  rigor plan apply examples/quickstart/campaign.hcl --state runs/q1
  rigor plan apply examples/quickstart/campaign.hcl --state runs/q1 --var time_scale=0.01   # variables as --var
  # Applying again continues a held campaign, or retries a failed restore first.`,
	"rigor status": `  rigor status --state runs/q1
  rigor status --state runs/q1 --json | jq .lifecycle`,
	"rigor verify": `  rigor verify --state runs/q1
  rigor verify --state runs/q1 --head 68:3f2a…   # the head printed by plan apply
  rigor verify --state runs/q1 --allowed-signers reviewers.allowed`,
	"rigor sign":   `  rigor sign --state runs/q1 --key ~/.ssh/id_ed25519`,
	"rigor report": `  rigor report --state runs/q1 && open runs/q1/report/report.html`,
	"rigor bench": `  rigor sim serve --listen 127.0.0.1:18080 --model sim-incumbent &
  rigor bench --endpoint http://127.0.0.1:18080 --model sim-incumbent --concurrency 4 --requests 32 --max-tokens 256 --out runs/bench
  rigor bench --endpoint http://127.0.0.1:18080 --model sim-incumbent --concurrency 1,4,16,64 --requests 64 \
      --max-tokens 256 --goodput ttft:200ms,tpot:50ms --out runs/sweep   # one result per level, sweep.png
  rigor bench --endpoint http://127.0.0.1:18080 --model sim-incumbent --rate 2,4 --concurrency 32 --requests 100 \
      --dataset-name random --random-input-len 1024 --random-output-len 128 --ignore-eos --out runs/rates`,
	"rigor calibrate": `  rigor calibrate --concurrency 16 --tokens 64`,
	"rigor gpus": `  rigor gpus
  rigor gpus --host-kind dcgm --dcgm-endpoint http://10.0.0.5:9400/metrics   # a node's dcgm-exporter
  rigor gpus --host-kind sim --sim-gpus 2`,
	"rigor sim dcgm": `  rigor sim dcgm --listen 127.0.0.1:9400 --gpus 8 --power-limit-watts 700
  rigor gpus --host-kind dcgm --dcgm-endpoint http://127.0.0.1:9400/metrics`,
	"rigor fmt": `  rigor fmt examples/quickstart/campaign.hcl
  rigor fmt --check examples/   # non-zero if a file is not in canonical style`,
	"rigor sim": `  rigor sim serve --profile incumbent --listen 127.0.0.1:18080`,
	"rigor sim ps": `  rigor sim ps          # the simulator servers campaigns left running
  rigor sim ps --all --json`,
	"rigor sim stop": `  rigor sim stop quickstart-candidate
  rigor sim stop --all`,
	"rigor sim serve": `  rigor sim serve --profile flare --listen 127.0.0.1:18080 --time-scale 0.01`,
}

// addExamples sets each command's Example from commandExamples where it has none.
func addExamples(cmd *cobra.Command) {
	if cmd.Example == "" {
		cmd.Example = commandExamples[cmd.CommandPath()]
	}
	for _, c := range cmd.Commands() {
		addExamples(c)
	}
}
