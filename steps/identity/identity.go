package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step checks a target's identity.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}
var _ engine.Refresher = Step{}
var _ engine.Placer = Step{}
var _ engine.PinnedInputs = Step{}

var spec = hcldec.ObjectSpec{
	"target":       &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
	"image":        &hcldec.AttrSpec{Name: "image", Type: cty.String},
	"container_id": &hcldec.AttrSpec{Name: "container_id", Type: cty.String},
	"incarnation":  &hcldec.AttrSpec{Name: "incarnation", Type: cty.String},
}

var outputType = cty.Object(map[string]cty.Type{
	"container_id":  cty.String,
	"name":          cty.String,
	"image_id":      cty.String,
	"created":       cty.String,
	"started_at":    cty.String,
	"incarnation":   cty.String,
	"restart_count": cty.Number,
	"oom_killed":    cty.Bool,
	"status":        cty.String,
	"health":        cty.String,
	"endpoint":      cty.String,
})

// DataReferences says target names a target block, so plan validate refuses a
// string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"target": {Kind: "target"}}
}

// Spec is the schema of an identity step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType is the identity record.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds an inspect.
func (Step) DefaultTimeout() time.Duration { return time.Minute }

// Check is one comparison of identity.json.
type Check struct {
	Name     string `json:"name"`
	OK       bool   `json:"ok"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
}

// Report is identity.json.
type Report struct {
	Target   string          `json:"target"`
	Runtime  string          `json:"runtime"`
	Host     string          `json:"host"`
	Identity docker.Identity `json:"identity"`
	Checks   []Check         `json:"checks"`
	// ProtectedFiles are the sha256 of the target's protected files, by pin name, as
	// this check read them (the engine pins the first digest it sees).
	ProtectedFiles map[string]string `json:"protected_files,omitempty"`
	// Pods are the pods a kubernetes target's identity was read from.
	Pods []kube.Pod `json:"pods,omitempty"`
}

// Run inspects and compares.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	t, err := target.FromValue(sc.Config.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	rep := Report{Target: t.Name, Runtime: t.Runtime, Host: t.Host}
	if t.Runtime == target.RuntimeDocker {
		rep.Host = docker.HostURL(t.DockerHost)
	}
	var id docker.Identity
	switch t.Runtime {
	case target.RuntimeDocker:
		c, err := target.Docker(ctx, t)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "%v", err)
		}
		var raw []byte
		id, raw, err = c.Inspect(ctx, t.Container)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "target %s: %v", t.Name, err)
		}
		// The full inspect stays as evidence with secret env values redacted.
		if m, err := docker.NewManifest(c.Host(), id, raw, t.APIKey); err == nil {
			_ = os.WriteFile(sc.Path("inspect.json"), append(m.Inspect, '\n'), 0o644)
		}
	case target.RuntimeKubernetes:
		c, err := target.Kube(ctx, t)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "%v", err)
		}
		rep.Host = c.Server + " namespace " + c.Namespace
		if id, rep.Pods, err = c.Inspect(ctx, target.KubeRef(t)); err != nil {
			return engine.Failed(engine.ClassIdentity, "target %s: %v", t.Name, err)
		}
	default:
		id, err = target.Inspect(ctx, t)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "target %s: %v", t.Name, err)
		}
	}
	var bad []string
	id.Endpoint = t.Endpoint // what blocks on this target match the record by
	rep.Identity = id
	sums, unreadable := target.Digests(sc.BaseDir, t.ProtectedFiles)
	if len(sums) > 0 {
		rep.ProtectedFiles = sums
	}
	check := func(name, want, got string) {
		ok := want == got
		rep.Checks = append(rep.Checks, Check{Name: name, OK: ok, Expected: want, Actual: got})
		if !ok {
			bad = append(bad, fmt.Sprintf("%s is %s, expected %s", name, got, want))
		}
	}
	want := target.Str(sc.Config, "image")
	if want == "" {
		if want, err = target.ExpectedImageID(ctx, t); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if want != "" {
		check("image_id", want, id.ImageID)
	}
	if v := target.Str(sc.Config, "container_id"); v != "" {
		check("container_id", v, id.ContainerID)
	}
	if v := target.Str(sc.Config, "incarnation"); v != "" {
		check("incarnation", v, id.Incarnation)
	}
	check("status", "running", id.Status)
	if id.OOMKilled {
		rep.Checks = append(rep.Checks, Check{Name: "oom_killed", OK: false, Expected: "false", Actual: "true"})
	}
	if err := writeJSON(sc.Path("identity.json"), rep); err != nil {
		return engine.Failed(engine.ClassInternal, "write identity.json: %v", err)
	}
	out := Value(id)
	if id.OOMKilled {
		return engine.FailedWith(engine.ClassOOM, out, "target %s: container %s was OOM-killed", t.Name, id.Name)
	}
	if len(bad) > 0 {
		return engine.FailedWith(engine.ClassIdentity, out, "target %s: container %s: %s", t.Name, t.Container, strings.Join(bad, "; "))
	}
	if unreadable != nil {
		// A protected file that cannot be read cannot be held unchanged until restore.
		return engine.FailedWith(engine.ClassConfig, out, "target %s: %v", t.Name, unreadable)
	}
	sc.Log.Info().Str("container", id.Name).Str("image", id.ImageID).Str("incarnation", id.Incarnation).Msg("identity confirmed")
	return engine.Succeeded(out)
}

// Value is the identity record as the step's output.
func Value(id docker.Identity) cty.Value {
	ts := func(t time.Time) cty.Value {
		if t.IsZero() {
			return cty.StringVal("")
		}
		return cty.StringVal(t.UTC().Format(time.RFC3339Nano))
	}
	return cty.ObjectVal(map[string]cty.Value{
		"container_id":  cty.StringVal(id.ContainerID),
		"name":          cty.StringVal(id.Name),
		"image_id":      cty.StringVal(id.ImageID),
		"created":       ts(id.Created),
		"started_at":    ts(id.StartedAt),
		"incarnation":   cty.StringVal(id.Incarnation),
		"restart_count": cty.NumberIntVal(int64(id.RestartCount)),
		"oom_killed":    cty.BoolVal(id.OOMKilled),
		"status":        cty.StringVal(id.Status),
		"health":        cty.StringVal(id.Health),
		"endpoint":      cty.StringVal(id.Endpoint),
	})
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// RefreshKey is the endpoint (on its runtime host) whose container identity vouched for.
func (Step) RefreshKey(config cty.Value) string { return target.RefreshKey(config) }

// Places names the target this step puts in place (engine.Placer).
func (Step) Places(config cty.Value) string { return target.Placement(config) }

// Refresh re-inspects the target and compares it with the recorded identity.
func (Step) Refresh(ctx context.Context, config, outputs cty.Value) error {
	return target.Refresh(ctx, config, outputs)
}

// PinnedInputs are the target's protected files, pinned at the first identity check
// (or deploy) and compared at restore.
func (Step) PinnedInputs(config cty.Value, baseDir string) (map[string]string, error) {
	return target.Pinned(config, baseDir)
}
