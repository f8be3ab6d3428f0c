package restore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/rigor-bench/rigor/steps/vocab"
	"github.com/zclconf/go-cty/cty"
)

// Step restores the incumbent.
type Step struct{}

var _ engine.Step = Step{}
var _ plans.VocabularyProvider = Step{}
var _ engine.DefaultTimeout = Step{}
var _ engine.FileInputs = Step{}
var _ engine.PinnedInputs = Step{}
var _ engine.Refresher = Step{}
var _ engine.Placer = Step{}
var _ plans.PublicArguments = Step{}

var spec = hcldec.ObjectSpec{
	"target":          &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
	"protected_files": &hcldec.AttrSpec{Name: "protected_files", Type: cty.List(cty.String)},
	// preflight lists commands run after health, e.g. [["sh", "-c", "curl -fsS $RIGOR_ENDPOINT/v1/models"]];
	// without it the target's preflight applies. They get RIGOR_ENDPOINT, RIGOR_MODEL,
	// RIGOR_TARGET and RIGOR_API_KEY (the target's api_key), not rigor's environment.
	"preflight": &hcldec.AttrSpec{Name: "preflight", Type: cty.List(cty.List(cty.String))},
}

// preflightAdvice says why a secret may not be in a preflight command and where it
// goes instead; plans says the same for a target's preflight.
const preflightAdvice = "Preflight commands are command lines, visible to every user of the host. A preflight reads the target's api_key from $RIGOR_API_KEY (and RIGOR_ENDPOINT, RIGOR_MODEL, RIGOR_TARGET) instead."

// PublicArguments refuses secrets in preflight command lines, which every user of
// the host can see.
func (Step) PublicArguments() map[string]string {
	return map[string]string{"preflight": preflightAdvice}
}

// DataReferences says target names a target block, so plan validate refuses a
// string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"target": {Kind: "target"}}
}

// Spec is the schema of a restore step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// Vocabulary is what the step knows of the data blocks it reads (targets, their
// hosts, workloads, gates), so the language checks their values at validate time.
func (Step) Vocabulary() plans.Vocabulary { return vocab.Vocabulary() }

// OutputType is the identity of the restored container.
func (Step) OutputType() cty.Type { return deploy.Identity }

// DefaultTimeout is the restore bound when the plan sets none.
func (Step) DefaultTimeout() time.Duration { return 10 * time.Minute }

// Files are the protected files, the target's then the step's, each once: their
// content is part of the restore's inputs, and verifyRestored compares each with the
// digest the engine pinned.
func (Step) Files(cfg cty.Value) []string {
	var out []string
	if t, err := target.FromValue(cfg.GetAttr("target")); err == nil {
		out = append(out, t.ProtectedFiles...)
	}
	if v := cfg.GetAttr("protected_files"); !v.IsNull() && v.IsKnown() {
		for _, e := range v.AsValueSlice() {
			if !e.IsNull() {
				out = append(out, e.AsString())
			}
		}
	}
	seen := map[string]bool{}
	uniq := out[:0]
	for _, f := range out {
		if k := filepath.Clean(f); !seen[k] {
			seen[k] = true
			uniq = append(uniq, f)
		}
	}
	return uniq
}

// PinnedInputs are the protected files. An unreadable one is left out rather than
// refused: restore must run whatever happened, and its verification names the file.
func (s Step) PinnedInputs(config cty.Value, baseDir string) (map[string]string, error) {
	sums, _ := target.Digests(baseDir, s.Files(config))
	return sums, nil
}

// RefreshKey is the endpoint (on its runtime host) the restore put the incumbent on.
func (Step) RefreshKey(config cty.Value) string { return target.RefreshKey(config) }

// Places names the target this step puts in place (engine.Placer).
func (Step) Places(config cty.Value) string { return target.Placement(config) }

// Refresh re-inspects the restored incumbent and compares it with the recorded outputs.
func (Step) Refresh(ctx context.Context, config, outputs cty.Value) error {
	return target.Refresh(ctx, config, outputs)
}

// Check is one verification of the receipt: something compared with what it must be.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Unchecked is a fact the receipt records without having had anything to compare it
// with (a protected file first seen at restore), so that it is never read as checked.
type Unchecked struct {
	Name   string `json:"name"`
	Detail string `json:"detail"`
}

// Receipt is the restore receipt artefact.
type Receipt struct {
	Target  string `json:"target"`
	Runtime string `json:"runtime,omitempty"`
	// DockerHost and Manifest (relative to the state directory) are set on docker.
	DockerHost string `json:"docker_host,omitempty"`
	Manifest   string `json:"manifest,omitempty"`
	// KubeServer and Namespace are set on kubernetes.
	KubeServer string `json:"kube_server,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	// Action: already-running, restarted-by-id, recreated (sim), recreated-from-manifest
	// or recreated-from-plan (docker), reapplied-from-manifest, recreated-from-manifest
	// or scaled-from-plan (kubernetes).
	Action      string      `json:"action"`
	Stopped     []string    `json:"stopped,omitempty"`
	Container   any         `json:"container"` // sim.ContainerInfo, docker.Identity or deploy.KubeEvidence
	Checks      []Check     `json:"checks"`
	NotCompared []Unchecked `json:"not_compared,omitempty"`
	Outcome     string      `json:"outcome"`
	OutageOpen  bool        `json:"outage_open"`
	OutageS     float64     `json:"outage_elapsed_s"`
	BudgetS     float64     `json:"outage_budget_s"`
	ReserveS    float64     `json:"outage_reserve_s"`
	WithinBudge bool        `json:"within_budget"`
}

// Run restores the incumbent and writes receipt.json whatever the outcome.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	t, err := target.FromValue(sc.Config.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	switch t.Runtime {
	case target.RuntimeSim, target.RuntimeDocker, target.RuntimeKubernetes:
	default:
		return engine.Failed(engine.ClassConfig, "%v", target.UnknownRuntime(t))
	}
	rc := &Receipt{Target: t.Name, Outcome: "failed"}
	defer func() {
		o := sc.Outage()
		rc.OutageOpen, rc.OutageS, rc.BudgetS, rc.ReserveS = o.Open, o.Elapsed.Seconds(), o.Budget.Seconds(), o.Reserve.Seconds()
		rc.WithinBudge = !o.Open || o.Elapsed <= o.Budget
		_ = deploy.WriteJSON(sc.Path("receipt.json"), rc)
	}()
	check := func(name string, ok bool, format string, args ...any) bool {
		rc.Checks = append(rc.Checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
		return ok
	}
	switch t.Runtime {
	case target.RuntimeDocker:
		return runDocker(ctx, sc, t, rc, check)
	case target.RuntimeKubernetes:
		return runKube(ctx, sc, t, rc, check)
	}
	h, err := target.SimHost(t)
	if err != nil {
		check("runtime", false, "%v", err)
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	spec, err := target.SimSpec(t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	occ, ok, err := target.SimOccupant(h, t.Endpoint)
	if err != nil {
		check("stop candidate", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	if ok && occ.Name != t.Container {
		if err := h.Stop(occ.ID); err != nil {
			check("stop candidate", false, "%s: %v", occ.Name, err)
			return engine.Failed(engine.ClassHealth, "stop %s: %v", occ.Name, err)
		}
		rc.Stopped = append(rc.Stopped, occ.Name+" ("+occ.ID[:12]+")")
	}
	info, err := h.Inspect(t.Container)
	switch {
	case err != nil:
		rc.Action = "recreated"
		if _, err := h.Create(spec); err != nil {
			check("recreate", false, "%v", err)
			return engine.Failed(engine.ClassHealth, "recreate %s: %v", t.Container, err)
		}
		if err := h.Start(t.Container); err != nil {
			return startFailed(sc, t, spec.Listen, check, "start", "start "+t.Container, err)
		}
	case info.Status != sim.StatusRunning:
		rc.Action = "restarted-by-id"
		if err := h.Start(info.ID); err != nil {
			return startFailed(sc, t, spec.Listen, check, "start by id", "start "+info.ID+" by ID", err)
		}
	default:
		rc.Action = "already-running"
	}
	info, err = h.Inspect(t.Container)
	if err != nil {
		check("inspect", false, "%v", err)
		return engine.Failed(engine.ClassIdentity, "inspect %s: %v", t.Container, err)
	}
	rc.Container = info
	wantImage := spec.Config.Profile.ImageID()
	if strings.HasPrefix(t.Image, "sha256:") {
		wantImage = t.Image
	}
	if !check("image identity", info.ImageID == wantImage, "running %s, expected %s", info.ImageID, wantImage) {
		return engine.Failed(engine.ClassIdentity, "restored %s runs image %s, expected %s", t.Container, info.ImageID, wantImage)
	}
	if err := target.WaitHealthy(ctx, t); err != nil {
		check("health", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "restored %s: %v", t.Name, err)
	}
	check("health", true, "%s%s answered 2xx", t.Endpoint, t.HealthPath)
	if r := verifyRestored(ctx, sc, t, rc, check); r != nil {
		return *r
	}
	rc.Outcome = "restored"
	return engine.Succeeded(deploy.IdentityValue(info))
}

// startFailed records a failed start in the receipt and fails the restore. A port
// that another process holds is said as such, with where the port comes from
// (target.PortTaken): on Docker the engine's error names the published address, on
// the sim runtime it is the target's listen address.
func startFailed(sc *engine.StepContext, t target.Target, listen string, check func(string, bool, string, ...any) bool, name, what string, err error) engine.Result {
	msg := fmt.Sprintf("%s: %v", what, err)
	var taken *docker.PortTakenError
	switch {
	case errors.As(err, &taken):
		msg = fmt.Sprintf("%s (%v)", target.PortTaken(sc.Plan, t, taken.Addr), err)
	case errors.Is(err, sim.ErrPortInUse):
		msg = target.PortTaken(sc.Plan, t, listen)
	}
	check(name, false, "%s", msg)
	return engine.Failed(engine.ClassHealth, "%s", msg)
}
