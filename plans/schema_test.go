package plans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// badValues sets every attribute of every data block to a value that must fail,
// with the diagnostic it must fail with. An attribute the schemas accept without
// a row here fails TestEveryDataAttributeIsChecked: nothing may be accepted and
// then silently ignored.
var badValues = map[string]map[string]struct {
	value, summary, detail string
}{
	"host": {
		"docker":                {`"docker.sock"`, "Invalid value", `docker host "docker.sock"`},
		"dcgm_endpoint":         {`"10.0.0.5:9400"`, "Invalid value", `want the exporter's metrics URL`},
		"gpus":                  {`"simm"`, "Invalid value", `"simm" is not a GPU source: want "dcgm", "nvml" or "sim". Did you mean "sim"?`},
		"runtime":               {`"podman"`, "Invalid value", `"podman" is not a runtime: want "docker", "kubernetes" or "sim".`},
		"kubeconfig":            {`"kube/config"`, "Invalid value", `"kube/config" must be an absolute path`},
		"context":               {`["prod"]`, "Incorrect attribute value type", "Want a string"},
		"namespace":             {`""`, "Invalid value", "Must not be empty"},
		"sim_gpus":              {`0`, "Invalid value", "0 is out of range: want a whole number >= 1."},
		"sim_power_limit_watts": {`"300W"`, "Incorrect attribute value type", `Want a number greater than 0, got string "300W".`},
		"gpu_interval":          {`"10us"`, "Invalid duration", `"10us": want at least 1ms`},
		"sim_power_drift_at":    {`"0s"`, "Invalid duration", `"0s": want a positive duration such as "30s".`},
		"sim_power_drift_watts": {`-5`, "Invalid value", "-5 is out of range: want a number greater than 0."},
		"sim_dir":               {`"relative/dir"`, "Invalid value", `"relative/dir" must be an absolute path`},
	},
	"target": {
		"host":                        {`"node"`, "Incorrect attribute value type", "Want a host block reference such as host.node, got string."},
		"runtime":                     {`"podman"`, "Invalid value", `"podman" is not a runtime`},
		"container":                   {`""`, "Invalid value", "Must not be empty"},
		"image":                       {`42`, "Incorrect attribute value type", "Want a string such as \"sha256:...\", got number."},
		"endpoint":                    {`"127.0.0.1:8000"`, "Invalid URL", `"127.0.0.1:8000" is not a URL such as "http://127.0.0.1:8000"`},
		"metrics":                     {`"ftp://x/metrics"`, "Invalid URL", `the scheme must be "http" or "https"`},
		"model":                       {`""`, "Invalid value", "Must not be empty"},
		"profile":                     {`"flarre"`, "Invalid value", `Did you mean "flare"?`},
		"api_key":                     {`["k"]`, "Incorrect attribute value type", "Want a string"},
		"time_scale":                  {`0`, "Invalid value", "0 is out of range: want a number greater than 0."},
		"seed":                        {`-1`, "Invalid value", "-1 is out of range: want a whole number >= 0."},
		"faults":                      {`{ http_eror_rate = 0.5 }`, "Invalid value", `Did you mean "http_error_rate"?`},
		"reasoning_field":             {`"reasoning_contnet"`, "Invalid value", `Did you mean "reasoning_content"?`},
		"health_path":                 {`"health"`, "Invalid value", `"health" must start with "/"`},
		"health_timeout":              {`"forever"`, "Invalid duration", `invalid duration "forever"`},
		"command":                     {`"vllm serve"`, "Incorrect attribute value type", "Want a list such as"},
		"env":                         {`["A=1"]`, "Incorrect attribute value type", "Want a map such as"},
		"ports":                       {`8000`, "Incorrect attribute value type", "Want a list such as"},
		"mounts":                      {`"/models"`, "Incorrect attribute value type", "Want a list such as"},
		"shm_size":                    {`"big"`, "Invalid value", `"big" is not a size`},
		"memory":                      {`"lots"`, "Invalid value", `"lots" is not a size`},
		"cpus":                        {`0`, "Invalid value", "0 is out of range: want a number greater than 0."},
		"labels":                      {`{ team = 1 }`, "Incorrect attribute value type", `"team" is number`},
		"gpus":                        {`"every"`, "Invalid value", `"every": want "all", a count or a list of device IDs`},
		"deployment":                  {`""`, "Invalid value", "Must not be empty"},
		"statefulset":                 {`""`, "Invalid value", "Must not be empty"},
		"kube_container":              {`""`, "Invalid value", "Must not be empty"},
		"replicas":                    {`0`, "Invalid value", "0 is out of range: want a whole number >= 1."},
		"preflight":                   {`["true"]`, "Incorrect attribute value type", "Want a list such as [[\"sh\""},
		"protected_files":             {`"/etc/x"`, "Incorrect attribute value type", "Want a list such as"},
		"identity_header":             {`"X-Id: 1"`, "Invalid value", "is not a header name"},
		"engine":                      {`"vlm"`, "Invalid value", `"vlm" is not an engine: want "sglang" or "vllm". Did you mean "vllm"?`},
		"cache_reset":                 {`"GET /reset_prefix_cache"`, "Invalid value", "the reset call is a POST"},
		"running_metric":              {`""`, "Invalid value", "Must not be empty"},
		"waiting_metric":              {`""`, "Invalid value", "Must not be empty"},
		"kv_usage_metric":             {`""`, "Invalid value", "Must not be empty"},
		"prefix_cache_queries_metric": {`""`, "Invalid value", "Must not be empty"},
		"prefix_cache_hits_metric":    {`""`, "Invalid value", "Must not be empty"},
		"prompt_tokens_metric":        {`""`, "Invalid value", "Must not be empty"},
		"generation_tokens_metric":    {`""`, "Invalid value", "Must not be empty"},
		"preemptions_metric":          {`""`, "Invalid value", "Must not be empty"},
		"request_success_metric":      {`""`, "Invalid value", "Must not be empty"},
		"finished_reason_label":       {`""`, "Invalid value", "Must not be empty"},
		"requests_aborted_metric":     {`""`, "Invalid value", "Must not be empty"},
	},
	"workload": {
		"corpus":                   {`"synthetic-sumary"`, "Invalid value", `Did you mean "synthetic-summary"?`},
		"corpus_seed":              {`1.5`, "Invalid value", "1.5 is not a whole number >= 0."},
		"nominal_context":          {`0`, "Invalid value", "0 is out of range: want a whole number >= 1."},
		"prefixes":                 {`"uniq"`, "Invalid value", `Did you mean "unique"?`},
		"api":                      {`"chats"`, "Invalid value", `"chats" is not an API: want "chat" or "completions". Did you mean "chat"?`},
		"max_tokens":               {`"lots"`, "Incorrect attribute value type", `Want a whole number >= 1, got string "lots".`},
		"temperature":              {`-3`, "Invalid value", "-3 is out of range: want a number from 0 to 2."},
		"top_p":                    {`0`, "Invalid value", "0 is out of range: want a number greater than 0 and at most 1."},
		"seed":                     {`"7"`, "Incorrect attribute value type", `Want a whole number >= 0, got string "7".`},
		"reasoning_effort":         {`""`, "Invalid value", "Must not be empty"},
		"fresh_prefixes":           {`"yes"`, "Incorrect attribute value type", `Want true or false (without quotes), got string "yes".`},
		"min_tokens":               {`-1`, "Invalid value", "-1 is out of range: want a whole number >= 0."},
		"ignore_eos":               {`1`, "Incorrect attribute value type", "Want true or false (without quotes), got number."},
		"assert_prompt_tokens":     {`0`, "Invalid value", "0 is out of range: want a whole number >= 1."},
		"assert_completion_tokens": {`2.5`, "Invalid value", "2.5 is not a whole number >= 1."},
	},
	"gate": {
		"health":            {`1`, "Incorrect attribute value type", "Want true or false (without quotes), got number."},
		"idle":              {`"yes"`, "Incorrect attribute value type", `Want true or false (without quotes), got string "yes".`},
		"identity":          {`"true"`, "Incorrect attribute value type", `Want true or false (without quotes), got string "true".`},
		"power_limit_watts": {`"300W"`, "Incorrect attribute value type", `Want a number greater than 0, got string "300W".`},
		"gpu_count":         {`"2"`, "Incorrect attribute value type", `Want a whole number >= 1, got string "2".`},
		"driver":            {`""`, "Invalid value", "Must not be empty"},
	},
}

// kubernetesOnly are the attributes only the kubernetes runtime reads: their bad
// values are tried on a kubernetes host or target.
var kubernetesOnly = map[string]bool{"kubeconfig": true, "context": true, "namespace": true, "deployment": true, "statefulset": true, "kube_container": true, "replicas": true}

// TestAttributesOfAnotherRuntime: an attribute its runtime does not read is an
// error at its name, whether the runtime is the block's own or its host's.
func TestAttributesOfAnotherRuntime(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"docker setting on a kubernetes target": {
			"host \"k\" {\n  runtime = \"kubernetes\"\n}\ntarget \"x\" {\n  host     = host.k\n  endpoint = \"http://127.0.0.1:8000\"\n  command = [\"vllm\"]\n}\n",
			`target "x" runs on runtime "kubernetes", which does not read command: the workload's pod template sets the container's command`,
		},
		"kubernetes setting on a sim target": {
			"target \"x\" {\n  endpoint = \"http://127.0.0.1:8000\"\n  replicas = 2\n}\n",
			`target "x" runs on runtime "sim", which does not read replicas`,
		},
		"cluster setting on a docker host": {
			"host \"d\" {\n  runtime = \"docker\"\n  namespace = \"serving\"\n}\n",
			`host "d" runs on runtime "docker", which does not read namespace`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := "campaign \"c\" {\n  outage {\n    budget  = \"90m\"\n    reserve = \"20m\"\n  }\n}\n" + tc.body
			path := filepath.Join(t.TempDir(), "c.hcl")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := load(t, path, plans.Options{})
			errs := errorsOf(diags)
			if len(errs) != 1 || errs[0].Summary != "Argument not read by this runtime" || !strings.Contains(errs[0].Detail, tc.want) {
				t.Fatalf("want one error %q, got:\n%s", tc.want, diags.Error())
			}
			// At the attribute's name, on the last line of the block but one.
			if l := strings.Count(src, "\n") - 1; errs[0].Subject == nil || errs[0].Subject.Start.Line != l || errs[0].Subject.Start.Column != 3 {
				t.Errorf("diagnostic at %v, want line %d col 3", errs[0].Subject, l)
			}
		})
	}
	// The same settings where their runtime reads them pass.
	src := "campaign \"c\" {\n  outage {\n    budget  = \"90m\"\n    reserve = \"20m\"\n  }\n}\nhost \"k\" {\n  runtime = \"kubernetes\"\n  namespace = \"serving\"\n}\ntarget \"x\" {\n  host     = host.k\n  endpoint = \"http://127.0.0.1:8000\"\n  replicas = 2\n}\n"
	path := filepath.Join(t.TempDir(), "ok.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, diags := load(t, path, plans.Options{}); diags.HasErrors() {
		t.Fatalf("kubernetes settings on kubernetes blocks: %s", diags.Error())
	}
}

// TestEveryDataAttributeIsChecked sets each accepted attribute, alone, to a
// failing value and expects its own diagnostic, at the value, naming the block
// and the attribute.
func TestEveryDataAttributeIsChecked(t *testing.T) {
	accepted := plans.DataAttributes()
	var kinds []string
	for kind := range accepted {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		var inTable []string
		for name := range badValues[kind] {
			inTable = append(inTable, name)
		}
		sort.Strings(inTable)
		if diff := cmp.Diff(accepted[kind], inTable); diff != "" {
			t.Errorf("%s attributes accepted (-) but without a failing value here (+ means a row for an attribute not accepted):\n%s", kind, diff)
		}
		for _, name := range accepted[kind] {
			tc, ok := badValues[kind][name]
			if !ok {
				continue
			}
			t.Run(kind+"/"+name, func(t *testing.T) {
				src := "campaign \"c\" {\n  outage {\n    budget  = \"90m\"\n    reserve = \"20m\"\n  }\n}\n"
				src += fmt.Sprintf("%s \"x\" {\n", kind)
				if kind == "target" && name != "endpoint" {
					src += "  endpoint = \"http://127.0.0.1:8000\"\n"
				}
				if kubernetesOnly[name] {
					src += "  runtime = \"kubernetes\"\n"
				}
				line := strings.Count(src, "\n") + 1
				src += fmt.Sprintf("  %s = %s\n}\n", name, tc.value)
				path := filepath.Join(t.TempDir(), "c.hcl")
				if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				_, diags := load(t, path, plans.Options{})
				errs := errorsOf(diags)
				if len(errs) != 1 {
					t.Fatalf("want exactly one error, got %d:\n%s", len(errs), diags.Error())
				}
				e := errs[0]
				wantCol := len("  "+name+" = ") + 1
				if name == "faults" {
					wantCol += len("{ ") // at the unknown key, inside the value
				}
				if e.Subject == nil || e.Subject.Start.Line != line || e.Subject.Start.Column != wantCol {
					t.Errorf("diagnostic at %v, want line %d col %d (the value)", e.Subject, line, wantCol)
				}
				if e.Summary != tc.summary {
					t.Errorf("summary %q, want %q", e.Summary, tc.summary)
				}
				prefix := fmt.Sprintf("%s \"x\", %s: ", kind, name)
				if !strings.HasPrefix(e.Detail, prefix) || !strings.Contains(e.Detail, tc.detail) {
					t.Errorf("detail %q, want it to start with %q and contain %q", e.Detail, prefix, tc.detail)
				}
			})
		}
	}
}

// TestLateValueCheckedBeforeTheStep: a data value that is a step's output passes
// validation (it is unknown then) and is checked by Instance.Evaluate once the
// output exists, before the step that reads it starts, with the same diagnostic.
func TestLateValueCheckedBeforeTheStep(t *testing.T) {
	src := `campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "freeze" "choice" {
  values = { profile = "flarre" }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  profile  = step.freeze.choice.values.profile
}
step "deploy" "t" {
  target = target.t
}
`
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, path, plans.Options{})
	deploy, ok := p.Instance("deploy.t")
	if !ok {
		t.Fatal("no instance deploy.t")
	}
	for name, profile := range map[string]string{"bad": "flarre", "good": "flare"} {
		t.Run(name, func(t *testing.T) {
			ctx, diags := p.Context(plans.Outputs{"freeze.choice": cty.ObjectVal(map[string]cty.Value{
				"values": cty.ObjectVal(map[string]cty.Value{"profile": cty.StringVal(profile)}),
			})})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			_, diags = deploy.Evaluate(ctx)
			errs := errorsOf(diags)
			if name == "good" {
				if len(errs) != 0 {
					t.Fatalf("a valid late value was refused: %s", diags.Error())
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("want one error, got %s", diags.Error())
			}
			e := errs[0]
			if e.Summary != "Invalid value" || !strings.Contains(e.Detail, `target "t", profile: "flarre" is not a simulator profile`) ||
				!strings.Contains(e.Detail, `Did you mean "flare"?`) {
				t.Errorf("got %q: %q", e.Summary, e.Detail)
			}
			if e.Subject == nil || e.Subject.Start.Line != 12 || e.Subject.Start.Column != 14 {
				t.Errorf("diagnostic at %v, want c.hcl line 12 col 14 (the value)", e.Subject)
			}
		})
	}
}

// An endpoint's port must be one a socket can have: 99999999 parsed as a URL, so
// validate passed it and apply failed at the deploy, with the outage open.
func TestEndpointPortInRange(t *testing.T) {
	for port, ok := range map[string]bool{"0": false, "65536": false, "99999999": false, "1": true, "65535": true} {
		src := "campaign \"c\" {}\ntarget \"x\" {\n  endpoint = \"http://127.0.0.1:" + port + "\"\n}\n"
		path := filepath.Join(t.TempDir(), "c.hcl")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, diags := load(t, path, plans.Options{})
		errs := errorsOf(diags)
		switch {
		case ok && len(errs) > 0:
			t.Errorf("port %s: %s", port, diags.Error())
		case !ok && (len(errs) != 1 || errs[0].Summary != "Invalid URL" || !strings.Contains(errs[0].Detail, "port "+port+" is not between 1 and 65535") ||
			errs[0].Subject == nil || errs[0].Subject.Start.Line != 3):
			t.Errorf("port %s: want one Invalid URL error at line 3 naming the port, got:\n%s", port, diags.Error())
		}
	}
}
