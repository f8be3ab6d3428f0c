package block

import (
	"fmt"
	"sort"
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// readValues holds, for every data attribute the language accepts, a valid value
// that differs from the default. TestEveryDataAttributeIsRead sets each one alone
// and expects what the step reads to change: an attribute nothing reads would be
// accepted by plan validate and then silently ignored.
var readValues = map[string]map[string]cty.Value{
	"target": {
		"host":                        cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node")}),
		"runtime":                     cty.StringVal("docker"),
		"container":                   cty.StringVal("c1"),
		"image":                       cty.StringVal("sha256:abc"),
		"endpoint":                    cty.StringVal("http://127.0.0.1:19010"),
		"metrics":                     cty.StringVal("http://127.0.0.1:19011/metrics"),
		"model":                       cty.StringVal("m"),
		"profile":                     cty.StringVal("flare"),
		"api_key":                     cty.StringVal("k"),
		"time_scale":                  cty.NumberFloatVal(0.5),
		"seed":                        cty.NumberIntVal(7),
		"faults":                      cty.ObjectVal(map[string]cty.Value{"http_error_rate": cty.NumberFloatVal(0.5)}),
		"reasoning_field":             cty.StringVal("reasoning"),
		"health_path":                 cty.StringVal("/ready"),
		"health_timeout":              cty.StringVal("5s"),
		"command":                     cty.TupleVal([]cty.Value{cty.StringVal("serve")}),
		"env":                         cty.ObjectVal(map[string]cty.Value{"A": cty.StringVal("1")}),
		"ports":                       cty.TupleVal([]cty.Value{cty.StringVal("8000:8000")}),
		"mounts":                      cty.TupleVal([]cty.Value{cty.StringVal("/m:/m")}),
		"shm_size":                    cty.StringVal("1g"),
		"memory":                      cty.StringVal("2g"),
		"cpus":                        cty.NumberIntVal(2),
		"labels":                      cty.ObjectVal(map[string]cty.Value{"team": cty.StringVal("x")}),
		"gpus":                        cty.StringVal("all"),
		"protected_files":             cty.TupleVal([]cty.Value{cty.StringVal("/etc/x")}),
		"identity_header":             cty.StringVal("X-Other"),
		"engine":                      cty.StringVal("sglang"),
		"cache_reset":                 cty.StringVal("/flush_cache"),
		"running_metric":              cty.StringVal("x_running"),
		"waiting_metric":              cty.StringVal("x_waiting"),
		"kv_usage_metric":             cty.StringVal("x_kv"),
		"prefix_cache_queries_metric": cty.StringVal("x_q"),
		"prefix_cache_hits_metric":    cty.StringVal("x_h"),
		"prompt_tokens_metric":        cty.StringVal("x_p"),
		"generation_tokens_metric":    cty.StringVal("x_g"),
		"preemptions_metric":          cty.StringVal("x_pre"),
		"request_success_metric":      cty.StringVal("x_ok"),
		"finished_reason_label":       cty.StringVal("why"),
		"requests_aborted_metric":     cty.StringVal("x_ab"),
		"deployment":                  cty.StringVal("d1"),
		"statefulset":                 cty.StringVal("s1"),
		"kube_container":              cty.StringVal("server"),
		"replicas":                    cty.NumberIntVal(2),
	},
	"host": {
		"docker":  cty.StringVal("tcp://127.0.0.1:2375"),
		"runtime": cty.StringVal("docker"),
		"sim_dir": cty.StringVal("/var/lib/rigor-sim"),
		// read where the host's runtime is kubernetes: the reader's target inherits it
		"kubeconfig": cty.StringVal("/etc/rigor/kubeconfig"),
		"context":    cty.StringVal("prod"),
		"namespace":  cty.StringVal("serving"),
	},
	"workload": {
		"corpus":                   cty.StringVal("synthetic-repeated-code"),
		"corpus_seed":              cty.NumberIntVal(9),
		"nominal_context":          cty.NumberIntVal(2048),
		"prefixes":                 cty.StringVal("repeated"),
		"max_tokens":               cty.NumberIntVal(64),
		"temperature":              cty.NumberIntVal(1),
		"top_p":                    cty.NumberFloatVal(0.9),
		"seed":                     cty.NumberIntVal(3),
		"reasoning_effort":         cty.StringVal("low"),
		"fresh_prefixes":           cty.True,
		"min_tokens":               cty.NumberIntVal(8),
		"ignore_eos":               cty.True,
		"assert_prompt_tokens":     cty.NumberIntVal(100),
		"assert_completion_tokens": cty.NumberIntVal(8),
	},
	"gate": {
		"power_limit_watts": cty.NumberIntVal(300),
		"gpu_count":         cty.NumberIntVal(2),
		"driver":            cty.StringVal("580.82.07"),
	},
}

// readElsewhere are attributes read outside the functions this test can call
// alone, each with its reader and the test that shows it acts.
var readElsewhere = map[string]map[string]string{
	"target": {"preflight": "restore.preflightCommands; cmd/rigor testdata/script/lifecycle.txtar (a failing preflight fails the restore)"},
	"host": {
		"gpus": "gpuSource", "dcgm_endpoint": "gpuSource", "gpu_interval": "gpuSource", "sim_gpus": "gpuSource", "sim_power_limit_watts": "gpuSource",
		"sim_power_drift_at": "gpuSource", "sim_power_drift_watts": "gpuSource; gpu_test.go",
	},
	"workload": {"api": "loadConfig (lc.API)"},
	"gate":     {"health": "checkGates", "idle": "checkGates", "identity": "checkGates"},
}

// readers return what the step reads from one object, as text to compare.
var readers = map[string]func(cty.Value) string{
	"target": func(v cty.Value) string {
		t, err := target.FromValue(v)
		return fmt.Sprintf("%+v %v", t, err)
	},
	"host": func(h cty.Value) string {
		t, err := target.FromValue(cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("t"), "endpoint": cty.StringVal("http://127.0.0.1:19012"), "host": h,
		}))
		return fmt.Sprintf("%+v %v", t, err)
	},
	"workload": func(w cty.Value) string {
		wl, name, err := workloadOf(cty.ObjectVal(map[string]cty.Value{"workload": w}))
		if err == nil {
			err = fixedOutput(&wl, w)
		}
		return fmt.Sprintf("%s %s %v", describeWorkload(wl), name, err)
	},
	"gate": func(g cty.Value) string {
		spec, err := gpuGate(g)
		return fmt.Sprintf("%s %v", describeGate(spec.Driver, spec.PowerLimitW, spec.Count), err)
	},
}

func describeWorkload(wl loadgen.Workload) string {
	deref := func(p any) string {
		switch x := p.(type) {
		case *int:
			if x != nil {
				return fmt.Sprint(*x)
			}
		case *float64:
			if x != nil {
				return fmt.Sprint(*x)
			}
		case *int64:
			if x != nil {
				return fmt.Sprint(*x)
			}
		case *string:
			if x != nil {
				return *x
			}
		}
		return "-"
	}
	return fmt.Sprintf("%+v max=%s temp=%s top_p=%s seed=%s effort=%s min=%s ap=%s ac=%s", wl, deref(wl.MaxTokens), deref(wl.Temperature),
		deref(wl.TopP), deref(wl.Seed), deref(wl.ReasoningEffort), deref(wl.MinTokens), deref(wl.AssertPromptTokens), deref(wl.AssertCompletionTokens))
}

func describeGate(driver string, watts *float64, count *int) string {
	s := "driver=" + driver
	if watts != nil {
		s += fmt.Sprintf(" watts=%g", *watts)
	}
	if count != nil {
		s += fmt.Sprintf(" count=%d", *count)
	}
	return s
}

func TestEveryDataAttributeIsRead(t *testing.T) {
	accepted := plans.DataAttributes()
	kinds := make([]string, 0, len(accepted))
	for k := range accepted {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		base := map[string]cty.Value{"name": cty.StringVal("x")}
		if kind == "target" {
			base["endpoint"] = cty.StringVal("http://127.0.0.1:19013")
		}
		read := readers[kind]
		before := read(cty.ObjectVal(base))
		for _, name := range accepted[kind] {
			v, ok := readValues[kind][name]
			if !ok {
				if _, elsewhere := readElsewhere[kind][name]; !elsewhere {
					t.Errorf("%s accepts %q, but this test has no value for it: add one, or name its reader", kind, name)
				}
				continue
			}
			t.Run(kind+"/"+name, func(t *testing.T) {
				obj := map[string]cty.Value{}
				for k, x := range base {
					obj[k] = x
				}
				obj[name] = v
				if after := read(cty.ObjectVal(obj)); after == before {
					t.Errorf("setting %s = %#v changes nothing the step reads:\n%s", name, v, after)
				}
			})
		}
	}
}
