package target

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Target is a target block as a step sees it.
type Target struct {
	Name          string
	Host          string
	Runtime       string // "sim" (default), "docker" or "kubernetes"
	Container     string
	Image         string
	Endpoint      string
	Metrics       string
	Model         string
	APIKey        string
	TimeScale     float64
	Seed          uint64
	Faults        sim.Faults
	HealthPath    string
	HealthTimeout time.Duration
	RunningMetric string // Native.Running, kept for the gates that read it
	WaitingMetric string // Native.Waiting
	Reasoning     string

	// The serving engine: its native metric names (the engine's preset, each name
	// overridable) and the path POSTed to reset its prefix cache, when declared.
	Engine     string
	Native     promscrape.Names
	CacheReset string

	// Docker runtime: the engine URL of the host ("" = DOCKER_HOST) and the declared
	// container configuration.
	DockerHost string
	Command    []string
	Env        map[string]string
	Ports      []string
	Mounts     []string
	ShmSize    string
	Memory     string
	CPUs       float64
	GPUs       string
	Labels     map[string]string

	// Kubernetes runtime (kubernetes.go): the host's cluster and namespace, the kind
	// of workload Container names (kube.KindDeployment or kube.KindStatefulSet), and
	// the container of its pod template the target's image goes into.
	KubeKind      string
	Kubeconfig    string
	KubeContext   string
	Namespace     string
	KubeContainer string
	Replicas      int

	// Identity (identity.go): where the sim runtime keeps its containers (host
	// attribute sim_dir; "" = sim.DefaultRoot()/<host>), the response header that
	// names the incarnation that answered ("" = none is checked), and the files
	// that must not change while the target is measured.
	SimDir         string
	IdentityHeader string
	ProtectedFiles []string
}

// ServedModel is the model name the stack serves: the target's model, or, for a
// simulated stack that names none, its profile's. Requests and restore preflights
// (RIGOR_MODEL) use it. Model itself stays as declared: the simulator's spec, and
// so its digest, holds only what the plan says.
func (t Target) ServedModel() string {
	if name, ok := strings.CutPrefix(t.Image, "sim:"); ok && t.Model == "" {
		if p, err := sim.LookupProfile(name); err == nil {
			return p.ServedModelName
		}
	}
	return t.Model
}

// FromValue reads a target object.
func FromValue(v cty.Value) (Target, error) {
	if v.IsNull() || !v.Type().IsObjectType() {
		return Target{}, fmt.Errorf("target must be a target block reference such as target.incumbent")
	}
	t := Target{
		Name: Str(v, "name"), Container: Str(v, "container"), Image: Str(v, "image"),
		Endpoint: strings.TrimRight(Str(v, "endpoint"), "/"), Metrics: Str(v, "metrics"), Model: Str(v, "model"),
		APIKey: Str(v, "api_key"), HealthPath: Str(v, "health_path"), Runtime: Str(v, "runtime"),
		Reasoning: Str(v, "reasoning_field"),
		TimeScale: Num(v, "time_scale", 1), Seed: uint64(Num(v, "seed", 0)),
	}
	if h := attr(v, "host"); h != cty.NilVal && !h.IsNull() {
		if h.Type().IsObjectType() {
			t.Host = Str(h, "name")
			t.DockerHost = Str(h, "docker")
			if t.Runtime == "" {
				t.Runtime = Str(h, "runtime")
			}
		} else if h.Type() == cty.String {
			t.Host = h.AsString()
		}
	}
	if t.Host == "" {
		t.Host = "local"
	}
	if t.Runtime == "" {
		t.Runtime = "sim"
	}
	if t.Container == "" {
		t.Container = t.Name
	}
	if p := Str(v, "profile"); p != "" && t.Image == "" {
		t.Image = "sim:" + p
	}
	if t.HealthPath == "" {
		t.HealthPath = "/health"
	}
	if err := t.readEngine(v); err != nil {
		return t, err
	}
	t.HealthTimeout = 60 * time.Second
	if s := Str(v, "health_timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return t, fmt.Errorf("target %s: health_timeout: %v", t.Name, err)
		}
		t.HealthTimeout = d
	}
	if f := attr(v, "faults"); f != cty.NilVal && !f.IsNull() {
		var err error
		if t.Faults, err = ParseFaults(f); err != nil {
			return t, fmt.Errorf("target %s: faults: %v", t.Name, err)
		}
	}
	if err := t.readDocker(v); err != nil {
		return t, err
	}
	if err := t.readKube(v); err != nil {
		return t, err
	}
	if err := t.readIdentity(v); err != nil {
		return t, err
	}
	if t.Endpoint == "" {
		return t, fmt.Errorf("target %s has no endpoint", t.Name)
	}
	if t.Metrics == "" {
		t.Metrics = t.Endpoint + "/metrics"
	}
	return t, nil
}

// ParseFaults reads a faults object as the simulator takes it: every key a field
// of sim.Faults, every value of its type and range.
func ParseFaults(f cty.Value) (sim.Faults, error) {
	var out sim.Faults
	b, err := ctyjson.Marshal(f, f.Type())
	if err != nil {
		return out, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return out, err
	}
	return out, out.Validate()
}

// Listen is the host:port the endpoint names, which the simulator binds.
func (t Target) Listen() (string, error) {
	u, err := url.Parse(t.Endpoint)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("target %s: endpoint %q is not a URL such as http://127.0.0.1:8000", t.Name, t.Endpoint)
	}
	return u.Host, nil
}

func attr(v cty.Value, name string) cty.Value {
	if v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
		return cty.NilVal
	}
	return v.GetAttr(name)
}

// Str reads an optional string attribute ("" when absent or null).
func Str(v cty.Value, name string) string {
	a := attr(v, name)
	if a == cty.NilVal || a.IsNull() || !a.IsKnown() {
		return ""
	}
	if a.Type() == cty.String {
		return a.AsString()
	}
	if a.Type() == cty.Number {
		return a.AsBigFloat().Text('f', -1)
	}
	return ""
}

// Num reads an optional number attribute.
func Num(v cty.Value, name string, def float64) float64 {
	a := attr(v, name)
	if a == cty.NilVal || a.IsNull() || !a.IsKnown() || a.Type() != cty.Number {
		return def
	}
	f, _ := a.AsBigFloat().Float64()
	return f
}

// Int reads an optional whole-number attribute.
func Int(v cty.Value, name string, def int) int {
	a := attr(v, name)
	if a == cty.NilVal || a.IsNull() || !a.IsKnown() || a.Type() != cty.Number {
		return def
	}
	i, acc := a.AsBigFloat().Int64()
	if acc != big.Exact {
		return def
	}
	return int(i)
}

// Bool reads an optional bool attribute.
func Bool(v cty.Value, name string) bool {
	a := attr(v, name)
	return a != cty.NilVal && !a.IsNull() && a.IsKnown() && a.Type() == cty.Bool && a.True()
}

// WaitHealthy polls the health endpoint until it answers 2xx or the bound passes.
func WaitHealthy(ctx context.Context, t Target) error { return waitHealthy(ctx, t, nil) }

// waitHealthy is the one health poll: alive, when set, is asked first on every
// round and ends the wait with its error (a container that exited will never turn
// healthy, so waiting out the bound would only delay restore).
func waitHealthy(ctx context.Context, t Target, alive func(context.Context) error) error {
	deadline := time.Now().Add(t.HealthTimeout)
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for {
		if alive != nil {
			if err := alive(ctx); err != nil {
				return err
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, t.Endpoint+t.HealthPath, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s%s not healthy within %s (last answer: %s)", t.Endpoint, t.HealthPath, t.HealthTimeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
