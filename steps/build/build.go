package build

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/docker/go-units"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step builds an image.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}
var _ engine.FileInputs = Step{}
var _ plans.PublicArguments = Step{}

// LabelInputs is the image label that carries the step's input hash.
const LabelInputs = "rigor.inputs_sha256"

var spec = hcldec.ObjectSpec{
	"host":       &hcldec.AttrSpec{Name: "host", Type: cty.DynamicPseudoType, Required: true},
	"context":    &hcldec.AttrSpec{Name: "context", Type: cty.String, Required: true},
	"dockerfile": &hcldec.AttrSpec{Name: "dockerfile", Type: cty.String},
	"tags":       &hcldec.AttrSpec{Name: "tags", Type: cty.List(cty.String)},
	"build_args": &hcldec.AttrSpec{Name: "build_args", Type: cty.Map(cty.String)},
	"labels":     &hcldec.AttrSpec{Name: "labels", Type: cty.Map(cty.String)},
	"cpus":       &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "cpus", Type: cty.Number}, Func: plans.Above("cpus", 0)},
	"memory":     &hcldec.AttrSpec{Name: "memory", Type: cty.String},
}

var outputType = cty.Object(map[string]cty.Type{
	"image_id":       cty.String,
	"context_sha256": cty.String,
})

// PublicArguments refuses secrets in what the image keeps: build arguments stay in
// its history and labels and tags in its configuration, for anyone who can pull or
// inspect it.
func (Step) PublicArguments() map[string]string {
	kept := "The image keeps it (docker history, docker inspect) for anyone who can pull or inspect it; keep secrets out of images."
	return map[string]string{"build_args": kept, "labels": kept, "tags": kept}
}

// DataReferences says host names a host block, so plan validate refuses a string
// or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"host": {Kind: "host"}}
}

// Spec is the schema of a build step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType is the built image ID and the hash of the context sent.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds a build that declares no timeout.
func (Step) DefaultTimeout() time.Duration { return 30 * time.Minute }

// Files lists the context's files when the context path is absolute (see doc.go).
func (Step) Files(cfg cty.Value) []string {
	dir := target.Str(cfg, "context")
	if dir == "" || !filepath.IsAbs(dir) {
		return nil
	}
	rel, err := docker.ContextFiles(dir)
	if err != nil {
		return nil // Run names the missing directory
	}
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(dir, filepath.FromSlash(r))
	}
	return out
}

// Record is build.json.
type Record struct {
	DockerHost    string            `json:"docker_host"`
	Context       string            `json:"context"`
	ContextSHA256 string            `json:"context_sha256"`
	Dockerfile    string            `json:"dockerfile"`
	Tags          []string          `json:"tags,omitempty"`
	Labels        map[string]string `json:"labels"`
	NanoCPUs      int64             `json:"nano_cpus,omitempty"`
	MemoryBytes   int64             `json:"memory_bytes,omitempty"`
	ImageID       string            `json:"image_id,omitempty"`
	Error         string            `json:"error,omitempty"`
}

// Run builds the image and keeps build.log and build.json.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	cfg := sc.Config
	dir := target.Str(cfg, "context")
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(sc.BaseDir, dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return engine.Failed(engine.ClassConfig, "build context directory %s does not exist", dir)
	}
	o := docker.BuildOptions{Context: dir, Dockerfile: target.Str(cfg, "dockerfile"), Labels: map[string]string{}}
	var err error
	if o.Tags, err = target.StrList(cfg, "tags"); err != nil {
		return engine.Failed(engine.ClassConfig, "tags: %v", err)
	}
	if o.BuildArgs, err = target.StrMap(cfg, "build_args"); err != nil {
		return engine.Failed(engine.ClassConfig, "build_args: %v", err)
	}
	labels, err := target.StrMap(cfg, "labels")
	if err != nil {
		return engine.Failed(engine.ClassConfig, "labels: %v", err)
	}
	for k, v := range labels {
		o.Labels[k] = v
	}
	o.Labels[LabelInputs] = sc.InputsSHA256
	if c := target.Num(cfg, "cpus", 0); c > 0 {
		o.NanoCPUs = int64(c * 1e9)
	}
	if m := target.Str(cfg, "memory"); m != "" {
		if o.Memory, err = units.RAMInBytes(m); err != nil {
			return engine.Failed(engine.ClassConfig, "memory %q: %v", m, err)
		}
	}
	host := ""
	if h := cfg.GetAttr("host"); !h.IsNull() && h.Type().IsObjectType() {
		host = target.Str(h, "docker")
	} else if !h.IsNull() && h.Type() == cty.String {
		host = h.AsString()
	}
	rec := Record{DockerHost: docker.HostURL(host), Context: dir, Dockerfile: o.Dockerfile, Tags: o.Tags, Labels: o.Labels, NanoCPUs: o.NanoCPUs, MemoryBytes: o.Memory}
	if rec.Dockerfile == "" {
		rec.Dockerfile = "Dockerfile"
	}
	c, err := docker.Connect(ctx, host)
	if err != nil {
		rec.Error = err.Error()
		_ = writeJSON(sc.Path("build.json"), rec)
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	log, err := os.Create(sc.Path("build.log"))
	if err != nil {
		return engine.Failed(engine.ClassInternal, "create build.log: %v", err)
	}
	res, err := c.Build(ctx, o, log)
	log.Close()
	rec.ContextSHA256, rec.ImageID = res.ContextSHA256, res.ImageID
	if err != nil {
		rec.Error = err.Error()
		_ = writeJSON(sc.Path("build.json"), rec)
		if errors.Is(err, docker.ErrContextMissing) {
			return engine.Failed(engine.ClassConfig, "build context directory %s does not exist", dir)
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.Canceled) {
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: err.Error()}
		}
		return engine.Failed(engine.ClassExec, "%v (see build.log)", err)
	}
	if err := writeJSON(sc.Path("build.json"), rec); err != nil {
		return engine.Failed(engine.ClassInternal, "write build.json: %v", err)
	}
	sc.Log.Info().Str("image", res.ImageID).Str("context_sha256", res.ContextSHA256).Msg("image built")
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{
		"image_id":       cty.StringVal(res.ImageID),
		"context_sha256": cty.StringVal(res.ContextSHA256),
	}))
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
