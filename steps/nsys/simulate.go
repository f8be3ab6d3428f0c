package nsys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/rigor-bench/rigor/steps/nsys/nsysdb"
	"github.com/zclconf/go-cty/cty"
)

// SimPath is where a rigor-sim server takes its simulated Nsight capture.
const SimPath = "/debug/nsys-profile"

// simulate is the capture of a target on the simulator (where = "simulator", the
// default for runtime = "sim"): no CUDA runs, so the server profiles the frames it
// runs for the requests it serves during the window (steps/internal/sim/kernels.go)
// and answers with their kernels, NVTX ranges and GPUs. The step keeps that answer
// (sim-profile.json) and writes it as an export with `nsys export`'s tables and
// columns (<output>.sqlite, nsysdb), which the report analyses like any other.
// capture.json says simulated: true and names the simulator; the export's version
// and its one warning say so too, so neither file alone passes for a CUDA trace.
func (p plan) simulate(ctx context.Context, sc *engine.StepContext) engine.Result {
	t := *p.target
	u, err := url.Parse(t.Endpoint + SimPath)
	if err != nil || u.Host == "" {
		return engine.Failed(engine.ClassConfig, "target %s endpoint %q is not an http(s) URL", t.Name, t.Endpoint)
	}
	u.RawQuery = url.Values{"duration": {p.duration.String()}}.Encode()
	rec := captureRecord{Where: p.where, Container: t.Container, RequestedDurationS: p.duration.Seconds(),
		Profile: []string{http.MethodPost, u.String()}, Simulated: true}
	if sc.Instance != nil {
		rec.Control = ControlAddr(sc.Instance.Config())
	}
	info, err := target.SimInspect(t)
	if err != nil {
		return engine.Failed(engine.ClassIdentity, "container %s on host %s before the capture: %v", t.Container, t.Host, err)
	}
	if info.Status != sim.StatusRunning {
		return engine.Failed(engine.ClassIdentity, "container %s on host %s is %s before the capture, not running", t.Container, t.Host, info.Status)
	}
	finish := func(res engine.Result) engine.Result {
		// No nsys ran, so no tool printed a warning; the export carries its own.
		_ = os.WriteFile(sc.Path("warnings.txt"), nil, 0o644)
		_ = writeJSON(sc.Path("capture.json"), rec)
		return res
	}
	reqCtx, cancel := context.WithTimeout(ctx, p.duration+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, u.String(), nil)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "nsys request: %v", err)
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	start := time.Now()
	rec.Start = start.UTC().Format(time.RFC3339Nano)
	body, status, err := simFetch(req)
	end := time.Now()
	rec.End = end.UTC().Format(time.RFC3339Nano)
	rec.ElapsedS = end.Sub(start).Seconds()
	if len(body) > 0 {
		_ = os.WriteFile(sc.Path("sim-profile.json"), body, 0o644)
		rec.Report = "sim-profile.json"
	}
	// A stopped container is checked as well as a new incarnation: a restart seen
	// between its stop and its start has not changed the incarnation yet. A cut
	// connection is given a moment to show whether the server is going away, since
	// a stopping server closes its connections before its process exits.
	sameServer := func() (sim.ContainerInfo, error, bool) {
		after, ierr := target.SimInspect(t)
		return after, ierr, ierr == nil && after.Incarnation == info.Incarnation && after.Status == sim.StatusRunning
	}
	after, ierr, same := sameServer()
	for settle := time.Now().Add(2 * time.Second); err != nil && same && time.Now().Before(settle); {
		time.Sleep(100 * time.Millisecond)
		after, ierr, same = sameServer()
	}
	if !same {
		return finish(engine.Failed(engine.ClassRestart, "container %s changed incarnation during the capture (before %s running, after %s %s, %v): records of different incarnations are never compared", t.Container, info.Incarnation, after.Incarnation, after.Status, ierr))
	}
	switch {
	case err != nil:
		return finish(engine.Failed(engine.ClassInstrumentation, "simulated Nsight capture from %s failed: %v", u.Redacted(), err))
	case status != http.StatusOK:
		return finish(engine.Failed(engine.ClassInstrumentation, "simulator %s answered %d (body kept in sim-profile.json)", u.Redacted(), status))
	}
	var prof sim.NsysProfile
	if err := json.Unmarshal(body, &prof); err != nil || prof.Format != sim.NsysProfileFormat || !prof.Simulated {
		return finish(engine.Failed(engine.ClassInstrumentation, "simulator %s answered no simulated Nsight capture (format %q, %v)", u.Redacted(), prof.Format, err))
	}
	if prof.Incarnation.Before != prof.Incarnation.After {
		return finish(engine.Failed(engine.ClassRestart, "the simulator's incarnation changed during the capture (%s, then %s)", prof.Incarnation.Before, prof.Incarnation.After))
	}
	rec.Source, rec.Frames, rec.RequestsCompleted, rec.Incarnation = prof.Source, prof.Frames, prof.RequestsCompleted, prof.Incarnation.Before
	rec.Export = []string{"nsysdb.Write", p.output + ".sqlite"}
	if err := nsysdb.Write(sc.Path(p.output+".sqlite"), prof.Export); err != nil {
		return finish(engine.Failed(engine.ClassInternal, "write the simulated export %s.sqlite: %v", p.output, err))
	}
	rec.SQLite = p.output + ".sqlite"
	finish(engine.Result{})
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{
		"report":     cty.StringVal(rec.Report),
		"sqlite":     cty.StringVal(rec.SQLite),
		"warnings":   cty.NumberIntVal(0), // lines of warnings.txt: no tool ran
		"duration_s": cty.NumberFloatVal(rec.ElapsedS),
	}))
}

// maxSimProfileBytes bounds the simulator's answer: a 60 s capture at C4 is a few
// hundred thousand kernels.
const maxSimProfileBytes = 1 << 30

func simFetch(req *http.Request) ([]byte, int, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxSimProfileBytes+1))
	if err == nil && len(b) > maxSimProfileBytes {
		err = fmt.Errorf("answer larger than %d bytes", maxSimProfileBytes)
	}
	return b, resp.StatusCode, err
}
