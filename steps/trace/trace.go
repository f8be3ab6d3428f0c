package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step captures one scheduler trace.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}

var spec = hcldec.ObjectSpec{
	"target":      &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
	"url":         &hcldec.AttrSpec{Name: "url", Type: cty.String},
	"method":      &hcldec.AttrSpec{Name: "method", Type: cty.String},
	"duration":    &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "duration", Type: cty.String, Required: true}, Func: plans.PositiveDuration("duration", 0, "1s")},
	"ranks":       &hcldec.AttrSpec{Name: "ranks", Type: cty.List(cty.Number), Required: true},
	"min_samples": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "min_samples", Type: cty.Number}, Func: plans.WholeAtLeast("min_samples", 1)},
}

var outputType = cty.Object(map[string]cty.Type{
	"samples":       cty.Number,
	"graphs":        cty.Number,
	"window_s":      cty.Number,
	"raw_sha256":    cty.String,
	"incarnation":   cty.String,
	"requested_s":   cty.Number,
	"queued_share":  cty.Number,
	"max_lanes":     cty.Number,
	"declared_rank": cty.List(cty.Number),
})

// DataReferences says target names a target block, so plan validate refuses a
// string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"target": {Kind: "target"}}
}

// Spec is the schema of a trace step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType lists what a later step may use.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds a capture whose plan sets no timeout.
func (Step) DefaultTimeout() time.Duration { return 5 * time.Minute }

// DefaultPath is where an instrumented server serves captures.
const DefaultPath = "/debug/scheduler-trace"

// maxCaptureBytes bounds what is read from the endpoint.
const maxCaptureBytes = 1 << 30

// Run takes the capture and judges it.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	cfg := sc.Config
	t, err := target.FromValue(cfg.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	d, err := time.ParseDuration(target.Str(cfg, "duration"))
	if err != nil || d <= 0 {
		return engine.Failed(engine.ClassConfig, "duration = %q: want a positive duration such as \"1s\"", target.Str(cfg, "duration"))
	}
	var ranks []int
	for _, v := range cfg.GetAttr("ranks").AsValueSlice() {
		i, acc := v.AsBigFloat().Int64()
		if acc != big.Exact || i < 0 {
			return engine.Failed(engine.ClassConfig, "ranks: %s is not a rank number", v.AsBigFloat().String())
		}
		ranks = append(ranks, int(i))
	}
	if len(ranks) == 0 {
		return engine.Failed(engine.ClassConfig, "ranks is empty: declare the ranks the capture must contain, e.g. [0, 1]")
	}
	method := strings.ToUpper(target.Str(cfg, "method"))
	if method == "" {
		method = http.MethodPost
	}
	raw := target.Str(cfg, "url")
	if raw == "" {
		raw = t.Endpoint + DefaultPath
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return engine.Failed(engine.ClassConfig, "url = %q is not an http(s) URL", raw)
	}
	q := u.Query()
	q.Set("duration", d.String())
	u.RawQuery = q.Encode()

	rec := captureRecord{Target: t.Name, URL: u.String(), Method: method, RequestedDurationNS: int64(d), DeclaredRanks: ranks}
	inspect := t.Runtime == "sim"
	if inspect {
		info, err := target.SimInspect(t)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "container %s on host %s before the capture: %v", t.Container, t.Host, err)
		}
		if info.Status != sim.StatusRunning {
			return engine.Failed(engine.ClassIdentity, "container %s on host %s is %s before the capture, not running", t.Container, t.Host, info.Status)
		}
		rec.RuntimeIncarnation.Before = info.Incarnation
	}

	// The capture itself is bounded by its duration; the request gets that plus
	// time to serialise, never the step's whole bound.
	reqCtx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, method, u.String(), nil)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "trace request: %v", err)
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	sent := time.Now()
	rec.Client.Before = anchorOf(sent)
	body, status, httpErr := fetch(req)
	got := time.Now()
	rec.Client.After = anchorOf(got)
	rec.Client.ElapsedNS = int64(got.Sub(sent))
	rec.HTTPStatus = status
	rec.Bytes = len(body)
	sum := sha256.Sum256(body)
	rec.SHA256 = hex.EncodeToString(sum[:])
	if len(body) > 0 {
		name := "raw.json"
		if status != http.StatusOK {
			name = "response.txt"
		}
		if err := os.WriteFile(sc.Path(name), body, 0o644); err != nil {
			return engine.Failed(engine.ClassInternal, "write %s: %v", name, err)
		}
	}
	if inspect {
		info, err := target.SimInspect(t)
		if err == nil {
			rec.RuntimeIncarnation.After = info.Incarnation
		}
		if err != nil || info.Incarnation != rec.RuntimeIncarnation.Before {
			_ = writeJSON(sc.Path("capture.json"), rec)
			return engine.Failed(engine.ClassRestart, "container %s changed incarnation during the capture (before %s, after %s, %v): records of different incarnations are never compared", t.Container, rec.RuntimeIncarnation.Before, rec.RuntimeIncarnation.After, err)
		}
	}
	_ = writeJSON(sc.Path("capture.json"), rec)
	if httpErr != nil {
		return engine.Failed(engine.ClassInstrumentation, "trace capture from %s failed: %v", u.Redacted(), httpErr)
	}
	if status != http.StatusOK {
		return engine.Failed(engine.ClassInstrumentation, "trace endpoint %s answered %d (body kept in response.txt)", u.Redacted(), status)
	}

	v := Validate(body, ranks, Options{MinSamples: target.Int(cfg, "min_samples", 1)})
	_ = writeJSON(sc.Path("validation.json"), v)
	if v.IncarnationChanged {
		return engine.Failed(engine.ClassRestart, "%s", v.Summary())
	}
	if !v.Complete {
		return engine.Failed(engine.ClassInstrumentation, "%s", v.Summary())
	}
	declared := make([]cty.Value, len(ranks))
	for i, r := range ranks {
		declared[i] = cty.NumberIntVal(int64(r))
	}
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{
		"samples":       cty.NumberIntVal(int64(v.Samples)),
		"graphs":        cty.NumberIntVal(int64(v.Graphs)),
		"window_s":      cty.NumberFloatVal(v.WindowS),
		"raw_sha256":    cty.StringVal(rec.SHA256),
		"incarnation":   cty.StringVal(v.Incarnation),
		"requested_s":   cty.NumberFloatVal(d.Seconds()),
		"queued_share":  cty.NumberFloatVal(v.QueuedShare),
		"max_lanes":     cty.NumberIntVal(int64(v.MaxLanes)),
		"declared_rank": cty.ListVal(declared),
	}))
}

func fetch(req *http.Request) ([]byte, int, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxCaptureBytes+1))
	if err == nil && len(b) > maxCaptureBytes {
		err = fmt.Errorf("capture larger than %d bytes", maxCaptureBytes)
	}
	return b, resp.StatusCode, err
}

type anchor struct {
	UTC string `json:"utc"`
}

func anchorOf(t time.Time) anchor { return anchor{UTC: t.UTC().Format(time.RFC3339Nano)} }

// captureRecord is capture.json: how the capture was taken.
type captureRecord struct {
	Target              string `json:"target"`
	URL                 string `json:"url"`
	Method              string `json:"method"`
	RequestedDurationNS int64  `json:"requested_duration_ns"`
	DeclaredRanks       []int  `json:"declared_ranks"`
	Client              struct {
		Before    anchor `json:"before"`
		After     anchor `json:"after"`
		ElapsedNS int64  `json:"elapsed_ns"` // monotonic
	} `json:"client"`
	RuntimeIncarnation struct {
		Before string `json:"before,omitempty"`
		After  string `json:"after,omitempty"`
	} `json:"runtime_incarnation"`
	HTTPStatus int    `json:"http_status"`
	Bytes      int    `json:"bytes"`
	SHA256     string `json:"sha256"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
