package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/rigor-bench/rigor/steps/vocab"
	"github.com/zclconf/go-cty/cty"
)

// Step deploys a target.
type Step struct{}

var _ engine.Step = Step{}
var _ plans.VocabularyProvider = Step{}
var _ engine.DefaultTimeout = Step{}
var _ engine.Refresher = Step{}
var _ engine.Placer = Step{}
var _ engine.PinnedInputs = Step{}

var spec = hcldec.ObjectSpec{
	"target": &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
}

// Identity is the output type shared by deploy and restore: who is serving now.
var Identity = cty.Object(map[string]cty.Type{
	"container_id": cty.String,
	"image_id":     cty.String,
	"incarnation":  cty.String,
	"started_at":   cty.String,
	"endpoint":     cty.String,
})

// DataReferences says target names a target block, so plan validate refuses a
// string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"target": {Kind: "target"}}
}

// Spec is the schema of a deploy step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// Vocabulary is what the step knows of the data blocks it reads (targets, their
// hosts, workloads, gates), so the language checks their values at validate time.
func (Step) Vocabulary() plans.Vocabulary { return vocab.Vocabulary() }

// OutputType is the identity of the deployed container.
func (Step) OutputType() cty.Type { return Identity }

// DefaultTimeout bounds a deploy that declares no timeout.
func (Step) DefaultTimeout() time.Duration { return 10 * time.Minute }

// Run deploys on the target's runtime.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	t, err := target.FromValue(sc.Config.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	switch t.Runtime {
	case target.RuntimeDocker:
		return runDocker(ctx, sc, t)
	case target.RuntimeKubernetes:
		return runKube(ctx, sc, t)
	case target.RuntimeSim:
	default:
		return engine.Failed(engine.ClassConfig, "%v", target.UnknownRuntime(t))
	}
	h, err := target.SimHost(t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	spec, err := target.SimSpec(t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	occ, ok, err := target.SimOccupant(h, t.Endpoint)
	if err != nil {
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	if ok && occ.Name != t.Container {
		// The restore manifest is written before anything is touched: if the stop
		// below half-works, restore still knows exactly what to bring back.
		if err := WriteJSON(sc.Path("restore-manifest.json"), occ); err != nil {
			return engine.Failed(engine.ClassInternal, "write restore manifest: %v", err)
		}
		sc.Log.Info().Str("container", occ.Name).Str("id", occ.ID[:12]).Msg("taking the current occupant out of service")
		if err := h.Stop(occ.ID); err != nil {
			return engine.Failed(engine.ClassHealth, "stop %s: %v", occ.Name, err)
		}
	}
	info, err := h.Inspect(t.Container)
	switch {
	case err == nil && (info.Spec != spec.SHA256() || info.Endpoint != "http://"+spec.Listen):
		// A container of that name made from another image, serving another address
		// or configured otherwise (a time scale, a seed, faults) is not this target:
		// replace it rather than measure a server the plan does not describe.
		if err := h.Stop(info.ID); err != nil {
			return engine.Failed(engine.ClassHealth, "stop stale container %s: %v", t.Container, err)
		}
		if err := h.Remove(info.ID); err != nil {
			return engine.Failed(engine.ClassHealth, "remove stale container %s: %v", t.Container, err)
		}
		fallthrough
	case err != nil:
		if _, err := h.Create(spec); err != nil {
			return engine.Failed(engine.ClassConfig, "create container %s: %v", t.Container, err)
		}
	}
	if info, _ := h.Inspect(t.Container); info.Status != sim.StatusRunning {
		if err := h.Start(t.Container); err != nil {
			if errors.Is(err, sim.ErrPortInUse) {
				// A configuration problem, as on Docker: another port, or the
				// process that holds it stopped.
				return engine.Failed(engine.ClassConfig, "%s", target.PortTaken(sc.Plan, t, spec.Listen))
			}
			return engine.Failed(engine.ClassHealth, "start container %s: %v", t.Container, err)
		}
	}
	if err := target.WaitHealthy(ctx, t); err != nil {
		if errors.Is(err, context.Canceled) {
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: err.Error()}
		}
		return engine.Failed(engine.ClassHealth, "target %s: %v", t.Name, err)
	}
	info, err = h.Inspect(t.Container)
	if err != nil {
		return engine.Failed(engine.ClassIdentity, "inspect %s after start: %v", t.Container, err)
	}
	if err := WriteJSON(sc.Path("identity.json"), info); err != nil {
		return engine.Failed(engine.ClassInternal, "write identity: %v", err)
	}
	return engine.Succeeded(IdentityValue(info))
}

// IdentityValue turns an inspect record into the Identity output.
func IdentityValue(info sim.ContainerInfo) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"container_id": cty.StringVal(info.ID),
		"image_id":     cty.StringVal(info.ImageID),
		"incarnation":  cty.StringVal(info.Incarnation),
		"started_at":   cty.StringVal(info.StartedAt.UTC().Format(time.RFC3339Nano)),
		"endpoint":     cty.StringVal(info.Endpoint),
	})
}

// WriteJSON writes an indented JSON artefact.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// RefreshKey is the endpoint (on its runtime host) the deploy put a target on.
func (Step) RefreshKey(config cty.Value) string { return target.RefreshKey(config) }

// Places names the target this step puts in place (engine.Placer).
func (Step) Places(config cty.Value) string { return target.Placement(config) }

// Refresh re-inspects the deployed target and compares it with the recorded outputs.
func (Step) Refresh(ctx context.Context, config, outputs cty.Value) error {
	return target.Refresh(ctx, config, outputs)
}

// PinnedInputs are the target's protected files: pinned at the first deploy or
// identity check, compared at restore.
func (Step) PinnedInputs(config cty.Value, baseDir string) (map[string]string, error) {
	return target.Pinned(config, baseDir)
}
