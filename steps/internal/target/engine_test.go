package target

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/zclconf/go-cty/cty"
)

func TestEnginePresetAndOverrides(t *testing.T) {
	vllm, _ := promscrape.Preset("vllm")
	sglang, _ := promscrape.Preset("sglang")
	overridden := sglang
	overridden.Waiting, overridden.PrefixCacheHits = "my:queue", "my:hits_total"
	cases := map[string]struct {
		attrs     map[string]cty.Value
		engine    string
		names     promscrape.Names
		reset     string
		errSubstr string
	}{
		"default is vllm":  {attrs: nil, engine: "vllm", names: vllm},
		"sglang preset":    {attrs: map[string]cty.Value{"engine": cty.StringVal("sglang")}, engine: "sglang", names: sglang},
		"override by name": {attrs: map[string]cty.Value{"engine": cty.StringVal("sglang"), "waiting_metric": cty.StringVal("my:queue"), "prefix_cache_hits_metric": cty.StringVal("my:hits_total")}, engine: "sglang", names: overridden},
		"cache reset path": {attrs: map[string]cty.Value{"cache_reset": cty.StringVal("/reset_prefix_cache")}, engine: "vllm", names: vllm, reset: "/reset_prefix_cache"},
		"cache reset POST": {attrs: map[string]cty.Value{"engine": cty.StringVal("sglang"), "cache_reset": cty.StringVal("POST /flush_cache")}, engine: "sglang", names: sglang, reset: "/flush_cache"},
		"unknown engine":   {attrs: map[string]cty.Value{"engine": cty.StringVal("sglng")}, errSubstr: `engine "sglng" has no metric preset (valid: sglang, vllm)`},
		"reset not a POST": {attrs: map[string]cty.Value{"cache_reset": cty.StringVal("GET /flush_cache")}, errSubstr: "the reset call is a POST"},
		"reset not a path": {attrs: map[string]cty.Value{"cache_reset": cty.StringVal("flush")}, errSubstr: `want a path such as "/reset_prefix_cache"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			attrs := map[string]cty.Value{"name": cty.StringVal("t"), "endpoint": cty.StringVal("http://127.0.0.1:1")}
			for k, v := range tc.attrs {
				attrs[k] = v
			}
			got, err := FromValue(cty.ObjectVal(attrs))
			if tc.errSubstr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSubstr) {
					t.Fatalf("err = %v, want %q", err, tc.errSubstr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Engine != tc.engine || got.CacheReset != tc.reset {
				t.Errorf("engine %q reset %q, want %q %q", got.Engine, got.CacheReset, tc.engine, tc.reset)
			}
			if diff := cmp.Diff(tc.names, got.Native); diff != "" {
				t.Errorf("names (-want +got):\n%s", diff)
			}
			if got.RunningMetric != tc.names.Running || got.WaitingMetric != tc.names.Waiting {
				t.Errorf("gauges %q/%q, want the native names", got.RunningMetric, got.WaitingMetric)
			}
		})
	}
}

// Every attribute this package reads for the engine is one the language accepts on a
// target block: a campaign setting all of them loads without a diagnostic.
func TestEngineAttributesAreInTheLanguage(t *testing.T) {
	var b strings.Builder
	b.WriteString("campaign \"c\" {}\ntarget \"t\" {\n  endpoint = \"http://127.0.0.1:1\"\n  engine = \"sglang\"\n  cache_reset = \"/flush_cache\"\n")
	for _, a := range MetricAttributes() {
		fmt.Fprintf(&b, "  %s = \"x\"\n", a)
	}
	b.WriteString("}\n")
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, diags := plans.Load(path, plans.Options{StepTypes: plans.StepTypes{}, Env: []string{}}); diags.HasErrors() {
		t.Errorf("target attributes refused: %s", diags.Error())
	}
}
