package target

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

func TestFromValueReadsTheDockerRuntime(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{
		"name":           cty.StringVal("inc"),
		"host":           cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "runtime": cty.StringVal("docker"), "docker": cty.StringVal("tcp://127.0.0.1:2375")}),
		"image":          cty.StringVal("sha256:abc"),
		"endpoint":       cty.StringVal("http://127.0.0.1:18080/"),
		"command":        cty.TupleVal([]cty.Value{cty.StringVal("--x"), cty.StringVal("1")}),
		"env":            cty.ObjectVal(map[string]cty.Value{"A": cty.StringVal("1"), "N": cty.NumberIntVal(2)}),
		"memory":         cty.StringVal("32MiB"),
		"shm_size":       cty.StringVal("1g"),
		"cpus":           cty.NumberFloatVal(1.5),
		"gpus":           cty.TupleVal([]cty.Value{cty.StringVal("0"), cty.StringVal("1")}),
		"health_timeout": cty.StringVal("5s"),
	})
	tg, err := FromValue(v)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Runtime != RuntimeDocker || tg.DockerHost != "tcp://127.0.0.1:2375" || tg.Container != "inc" || tg.GPUs != "0,1" {
		t.Fatalf("%+v", tg)
	}
	s, err := DockerSpec(tg)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1:18080:18080"} // no ports: the endpoint's port, published as itself
	if diff := cmp.Diff(want, s.Ports); diff != "" {
		t.Error(diff)
	}
	if s.Memory != 32<<20 || s.ShmSize != 1<<30 || s.NanoCPUs != 1.5e9 || s.Env["N"] != "2" || len(s.Command) != 2 {
		t.Errorf("%+v", s)
	}
	tg.Memory = "lots"
	if _, err := DockerSpec(tg); err == nil {
		t.Error("a bad memory size must fail")
	}
	tg.Image = ""
	if _, err := DockerSpec(tg); err == nil {
		t.Error("a docker target without image must fail")
	}
}
