package target

import (
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func kubeTarget(host, extra map[string]cty.Value) cty.Value {
	h := map[string]cty.Value{"name": cty.StringVal("cluster"), "runtime": cty.StringVal("kubernetes")}
	for k, v := range host {
		h[k] = v
	}
	t := map[string]cty.Value{"name": cty.StringVal("inc"), "host": cty.ObjectVal(h), "endpoint": cty.StringVal("http://127.0.0.1:19210")}
	for k, v := range extra {
		t[k] = v
	}
	return cty.ObjectVal(t)
}

func TestFromValueReadsTheKubernetesRuntime(t *testing.T) {
	tg, err := FromValue(kubeTarget(
		map[string]cty.Value{"kubeconfig": cty.StringVal("/etc/k.yaml"), "context": cty.StringVal("ctx"), "namespace": cty.StringVal("ns")},
		map[string]cty.Value{"deployment": cty.StringVal("sim-incumbent"), "kube_container": cty.StringVal("sim"), "replicas": cty.NumberIntVal(2)}))
	if err != nil {
		t.Fatal(err)
	}
	if tg.Runtime != RuntimeKubernetes || tg.Kubeconfig != "/etc/k.yaml" || tg.KubeContext != "ctx" || tg.Namespace != "ns" ||
		tg.Container != "sim-incumbent" || tg.KubeContainer != "sim" || tg.Replicas != 2 {
		t.Fatalf("%+v", tg)
	}
	if k := RefreshKey(cty.ObjectVal(map[string]cty.Value{"target": kubeTarget(map[string]cty.Value{"namespace": cty.StringVal("ns")}, nil)})); k != "kubernetes #/ns http://127.0.0.1:19210" {
		t.Errorf("refresh key %q", k)
	}
	// Without deployment the Deployment is the target's container, else its name.
	if tg, _ := FromValue(kubeTarget(nil, nil)); tg.Container != "inc" || tg.Replicas != 1 {
		t.Errorf("defaults: %+v", tg)
	}
}

func TestFromValueRefusesBadKubernetesInput(t *testing.T) {
	cases := map[string]struct {
		host, target map[string]cty.Value
		want         string
	}{
		"relative kubeconfig": {map[string]cty.Value{"kubeconfig": cty.StringVal("k.yaml")}, nil,
			`target inc: host cluster: kubeconfig "k.yaml" must be an absolute path`},
		"no replicas": {nil, map[string]cty.Value{"replicas": cty.NumberIntVal(0)},
			"target inc: replicas must be at least 1, got 0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := FromValue(kubeTarget(tc.host, tc.target))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v; want %q", err, tc.want)
			}
		})
	}
	tg, _ := FromValue(kubeTarget(nil, map[string]cty.Value{"runtime": cty.StringVal("nomad")}))
	if err := UnknownRuntime(tg); !strings.Contains(err.Error(), `target inc: unknown runtime "nomad" (want one of docker, kubernetes, sim)`) {
		t.Errorf("%v", err)
	}
}
