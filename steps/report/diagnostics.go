package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/nsys"
	"github.com/rigor-bench/rigor/steps/trace"
)

// The diagnostics: every trace and nsys capture step of the plan, what each attempt
// kept, and the analysis seed 000 asks for (steps/trace/analyze.go,
// steps/nsys/analyze.go). Every file read is hashed against the journal's record of
// it; a difference is an integrity problem, as for requests.jsonl.
//
//   - Scheduler traces are pooled per target over the complete captures of one
//     container incarnation: the one with the most complete captures, then the most
//     samples, then the earliest. Captures of any other incarnation are listed and
//     counted, never pooled.
//   - overlap.json (schemas/overlap.schema.json), written by the engine for a capture
//     declared with during = a block, is shown beside the capture, and its
//     overlapped flag (the capture ran within the block's load) is checked against
//     its two windows; without it the capture says "overlap not recorded".
//   - The observer-overhead comparison of an Nsight capture needs both blocks: the
//     profiled one (overlap.json's block, when the capture ran within its load) and
//     the control the nsys step names (capture.json "control"). The difference is
//     shown against the block-to-block range of the unprofiled blocks (no capture's
//     window intersected them) of the same arm, concurrency, corpus and container
//     incarnation as the control.

// OverlapNotRecorded is what a capture without overlap.json says.
const OverlapNotRecorded = "overlap not recorded"

// ObserverCaveat is seed 000's caveat on the observer-overhead comparison.
const ObserverCaveat = "A small difference does not prove negligible observer overhead."

// NsightCaveats are said beside every Nsight analysis (seed 000, seed 001).
var NsightCaveats = []string{
	"Summed kernel times overlap (kernels on different streams and devices run at once): they are not shares of a critical path.",
	"Hardware samples cover the entire device: SM, tensor and DRAM activity cannot be assigned to one kernel without a further isolated component measurement.",
	"A module is assigned by the plan's kernel-name patterns; kernel time no pattern matches is unmapped and counted as such.",
	ObserverCaveat,
}

// Diagnostics is summary.json's diagnostics section.
type Diagnostics struct {
	TraceCaptures  []TraceCaptureRow `json:"trace_captures"`
	TraceAnalyses  []TracePool       `json:"trace_analyses"`
	TraceGaps      []string          `json:"trace_gaps"`
	NsightCaptures []NsightCapture   `json:"nsight_captures"`
	NsightCaveats  []string          `json:"nsight_caveats"`
}

// UTCWindow is a window on UTC.
type UTCWindow struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Overlap is a capture's overlap with the block it was declared to run during
// (overlap.json, written by the engine for `during`).
type Overlap struct {
	Recorded bool   `json:"recorded"`
	Note     string `json:"note"`
	Block    string `json:"block,omitempty"`
	Declared string `json:"declared,omitempty"`
	// BlockWindow is the block's load (first request to its end); a side is ""
	// when the block sent nothing, or was still running when the capture ended.
	BlockWindow   *UTCWindow `json:"block_window,omitempty"`
	CaptureWindow *UTCWindow `json:"capture_window,omitempty"`
	// Overlapped is the engine's word that the capture ran within the block's load;
	// Consistent says whether the windows agree. OverlapS is how long the two
	// windows intersect (a block still running counts as running to the capture's
	// end), and RequestsDone the block's requests completed by the capture's end.
	Overlapped   bool    `json:"overlapped"`
	Consistent   bool    `json:"consistent"`
	OverlapS     float64 `json:"overlap_s"`
	RequestsDone int     `json:"block_requests_completed_at_capture_end"`
	Detail       string  `json:"detail,omitempty"`
}

// TraceCaptureRow is one attempt of a trace step.
type TraceCaptureRow struct {
	Step        string        `json:"step"`
	Attempt     int           `json:"attempt"`
	Status      string        `json:"status"`
	Class       string        `json:"class,omitempty"`
	Message     string        `json:"message,omitempty"`
	Target      string        `json:"target"`
	Incarnation string        `json:"incarnation,omitempty"`
	Complete    bool          `json:"complete"`
	Samples     int           `json:"samples"`
	Dropped     int           `json:"dropped_samples"`
	Window      *trace.Window `json:"window,omitempty"`
	Overlap     Overlap       `json:"overlap"`
	Pooled      bool          `json:"pooled"`
	NotPooled   string        `json:"not_pooled,omitempty"`
	Raw         *ArtefactRef  `json:"raw,omitempty"`
	capture     *trace.Capture
}

// TracePool is the pooled analysis of one target's captures of one incarnation.
type TracePool struct {
	Target               string   `json:"target"`
	Incarnation          string   `json:"incarnation"`
	Basis                string   `json:"incarnation_basis"`
	Captures             []string `json:"captures"`
	ExcludedCaptures     int      `json:"excluded_captures"`
	ExcludedSamples      int      `json:"excluded_samples"`
	ExcludedIncarnations []string `json:"excluded_incarnations"`
	// Overlapping names pooled captures whose windows overlap: their samples may be
	// the same frames twice.
	Overlapping []string       `json:"overlapping_captures"`
	Analysis    trace.Analysis `json:"analysis"`
}

// NsightCapture is one attempt of an nsys step.
type NsightCapture struct {
	Step       string     `json:"step"`
	Attempt    int        `json:"attempt"`
	Status     string     `json:"status"`
	Class      string     `json:"class,omitempty"`
	Message    string     `json:"message,omitempty"`
	Target     string     `json:"target,omitempty"`
	StepWindow *UTCWindow `json:"step_window,omitempty"` // capture.json: around `nsys profile`
	// Simulated: no nsys ran; the export was built from a rigor-sim server's own
	// frames (steps/nsys/simulate.go). SimulatedBy names the simulator and profile.
	Simulated     bool           `json:"simulated"`
	SimulatedBy   string         `json:"simulated_by,omitempty"`
	SQLite        *ArtefactRef   `json:"sqlite,omitempty"`
	Analysis      *nsys.Analysis `json:"analysis,omitempty"`
	AnalysisError string         `json:"analysis_error,omitempty"`
	ToolWarnings  []string       `json:"tool_warnings"`
	Overlap       Overlap        `json:"overlap"`
	Control       string         `json:"control,omitempty"`
	Overhead      *Overhead      `json:"observer_overhead,omitempty"`
	// OverheadNote says why there is no comparison, or what limits it.
	OverheadNote string `json:"observer_overhead_note"`
}

// Overhead compares a profiled block with its unprofiled control.
type Overhead struct {
	Profiled        string           `json:"profiled"`
	Control         string           `json:"control"`
	SameArm         bool             `json:"same_arm"`
	SameConcurrency bool             `json:"same_concurrency"`
	SameCorpus      bool             `json:"same_corpus"`
	Adjacent        bool             `json:"adjacent"`
	NoiseBlocks     []string         `json:"noise_blocks"`
	Metrics         []OverheadMetric `json:"metrics"`
	Caveat          string           `json:"caveat"`
}

// OverheadMetric is one figure of both blocks. Difference is profiled/control − 1;
// NoiseRange is (max − min)/mean of the unprofiled blocks (null with fewer than 2).
type OverheadMetric struct {
	Metric      string   `json:"metric"`
	Profiled    float64  `json:"profiled"`
	Control     float64  `json:"control"`
	Difference  float64  `json:"difference"`
	NoiseRange  *float64 `json:"noise_range"`
	WithinNoise *bool    `json:"within_noise"`
}

// captureAttempt is one attempt of a capture step as the journal records it.
type captureAttempt struct {
	addr  string
	in    *instanceDoc
	n     int
	dir   string
	end   *engine.Record
	order int // journal position of its start
}

func (ev *evidence) captureAttempts(typ string) []captureAttempt {
	var out []captureAttempt
	for i := range ev.plan.Instances {
		in := &ev.plan.Instances[i]
		if in.Type != typ {
			continue
		}
		for _, st := range ev.startRecs[in.Addr] {
			if st.Attempt == 0 {
				continue
			}
			out = append(out, captureAttempt{addr: in.Addr, in: in, n: st.Attempt, dir: st.Dir, end: ev.ends[in.Addr+"#"+strconv.Itoa(st.Attempt)], order: st.Seq})
		}
	}
	return out
}

func (c captureAttempt) status() (status, class, msg string) {
	if c.end == nil {
		return "open", "", "the apply died before this attempt ended"
	}
	return string(c.end.Status), string(c.end.Class), firstLine(c.end.Message)
}

// readAttemptFile reads a file of an attempt and checks it against the journal. ok
// is false when the file is absent.
func (ev *evidence) readAttemptFile(c captureAttempt, name string) ([]byte, *ArtefactRef, bool) {
	rel := c.dir + "/" + name
	b, err := os.ReadFile(filepath.Join(ev.dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, nil, false
	}
	ref := &ArtefactRef{Path: rel, SHA256: plans.SHA256Hex(b), Bytes: int64(len(b))}
	var want *engine.Artefact
	if c.end != nil {
		for i := range c.end.Artefacts {
			if c.end.Artefacts[i].Path == rel {
				want = &c.end.Artefacts[i]
			}
		}
	}
	switch {
	case want == nil:
		ev.problems = append(ev.problems, fmt.Sprintf("%s: not among the artefacts the journal recorded for %s attempt %d (sha256 %s)", rel, c.addr, c.n, ref.SHA256))
	case want.SHA256 != ref.SHA256:
		ev.problems = append(ev.problems, fmt.Sprintf("%s: sha256 %s, journal recorded %s", rel, ref.SHA256, want.SHA256))
	}
	return b, ref, true
}

// overlap reads overlap.json of a capture attempt.
func (ev *evidence) overlap(c captureAttempt) Overlap {
	b, _, ok := ev.readAttemptFile(c, "overlap.json")
	if !ok {
		return Overlap{Note: OverlapNotRecorded}
	}
	o, err := parseOverlap(b)
	if err != nil {
		ev.problems = append(ev.problems, fmt.Sprintf("%s/overlap.json: %v", c.dir, err))
		return Overlap{Note: "overlap.json unreadable: " + err.Error()}
	}
	if !o.Consistent {
		ev.problems = append(ev.problems, fmt.Sprintf("%s/overlap.json: %s", c.dir, o.Note))
	}
	return o
}

// parseOverlap validates an overlap.json and checks its flag against its windows:
// the capture ran within the block's load when it started no earlier than the
// block's first request and the block had not ended before the capture did.
func parseOverlap(b []byte) (Overlap, error) {
	if err := schemas.Validate("overlap", b); err != nil {
		return Overlap{}, err
	}
	var doc struct {
		Block         string                          `json:"block"`
		Declared      string                          `json:"declared"`
		BlockWindow   struct{ Start, End *time.Time } `json:"block_window"`
		CaptureWindow struct{ Start, End time.Time }  `json:"capture_window"`
		Requests      int                             `json:"block_requests_completed_at_capture_end"`
		Overlapped    bool                            `json:"overlapped"`
		Detail        string                          `json:"detail"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Overlap{}, err
	}
	bs, be, cs, ce := doc.BlockWindow.Start, doc.BlockWindow.End, doc.CaptureWindow.Start, doc.CaptureWindow.End
	if ce.Before(cs) || (bs != nil && be != nil && be.Before(*bs)) {
		return Overlap{}, fmt.Errorf("a window ends before it starts")
	}
	str := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	o := Overlap{Recorded: true, Block: doc.Block, Declared: doc.Declared, Overlapped: doc.Overlapped, RequestsDone: doc.Requests, Detail: doc.Detail,
		BlockWindow: &UTCWindow{Start: str(bs), End: str(be)}, CaptureWindow: &UTCWindow{Start: str(&cs), End: str(&ce)}}
	within := false
	if bs != nil {
		end := ce // a block still running when the capture ended
		if be != nil {
			end = *be
		}
		o.OverlapS = max(time.Duration(0), minTime(end, ce).Sub(maxTime(*bs, cs))).Seconds()
		within = !cs.Before(*bs) && (be == nil || !be.Before(ce))
	}
	o.Consistent = doc.Overlapped == within
	switch {
	case o.Consistent && within:
		o.Note = fmt.Sprintf("ran within %s's load (%s): %s s, %d of its requests completed by the capture's end", doc.Block, doc.Declared, fmtF(ce.Sub(cs).Seconds(), 3), doc.Requests)
	case o.Consistent:
		o.Note = fmt.Sprintf("did not run within %s's load: %s; not a capture under load", doc.Block, doc.Detail)
	case doc.Overlapped:
		o.Note = fmt.Sprintf("says it ran within %s's load, but its windows say otherwise", doc.Block)
	default:
		o.Note = fmt.Sprintf("says it did not run within %s's load, but its windows say it did", doc.Block)
	}
	return o, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func targetName(in *instanceDoc) string {
	t, _ := in.Config["target"].(map[string]any)
	return text(t["name"])
}

// diagnostics builds the section; nil when the plan has no capture step.
func (ev *evidence) diagnostics() *Diagnostics {
	traces, nsight := ev.captureAttempts("trace"), ev.captureAttempts("nsys")
	hasCaptureStep := false
	for _, in := range ev.plan.Instances {
		hasCaptureStep = hasCaptureStep || in.Type == "trace" || in.Type == "nsys"
	}
	if !hasCaptureStep {
		return nil
	}
	d := &Diagnostics{TraceCaptures: []TraceCaptureRow{}, TraceAnalyses: []TracePool{}, TraceGaps: trace.Gaps,
		NsightCaptures: []NsightCapture{}, NsightCaveats: NsightCaveats}
	for _, c := range traces {
		d.TraceCaptures = append(d.TraceCaptures, ev.traceCapture(c))
	}
	d.TraceAnalyses = poolTraces(d.TraceCaptures)
	for _, c := range nsight {
		d.NsightCaptures = append(d.NsightCaptures, ev.nsightCapture(c))
	}
	// A block any capture's window intersected was observed: it is never an
	// unprofiled block, and never clean data (markObserved). The evidence is the
	// capture's overlap.json (the block it was declared to run during), or its UTC
	// window against the block attempts' anchors on the same container, for a
	// capture that overlapped a block it did not declare.
	observed := map[string]bool{}
	mark := func(capture string, b *blockRef) {
		if b == nil {
			return
		}
		observed[b.Addr] = true
		if !slices.Contains(b.observedBy, capture) {
			b.observedBy = append(b.observedBy, capture)
		}
	}
	for i, c := range d.TraceCaptures {
		if c.Overlap.OverlapS > 0 {
			mark(c.Step, ev.blockByAddr(c.Overlap.Block))
		}
		if c.Window != nil {
			for _, b := range ev.blocksWithin(traces[i].in, c.Window.StartUTC, c.Window.EndUTC) {
				mark(c.Step, b)
			}
		}
	}
	for i, c := range d.NsightCaptures {
		if c.Overlap.OverlapS > 0 {
			mark(c.Step, ev.blockByAddr(c.Overlap.Block))
		}
		if c.StepWindow != nil {
			for _, b := range ev.blocksWithin(nsight[i].in, c.StepWindow.Start, c.StepWindow.End) {
				mark(c.Step, b)
			}
		}
	}
	for i := range d.NsightCaptures {
		c := &d.NsightCaptures[i]
		c.Overhead, c.OverheadNote = ev.overhead(*c, observed)
	}
	return d
}

func (ev *evidence) traceCapture(c captureAttempt) TraceCaptureRow {
	row := TraceCaptureRow{Step: c.addr, Attempt: c.n, Target: targetName(c.in)}
	row.Status, row.Class, row.Message = c.status()
	row.Overlap = ev.overlap(c)
	raw, ref, ok := ev.readAttemptFile(c, "raw.json")
	if !ok {
		row.NotPooled = "no capture kept"
		return row
	}
	row.Raw = ref
	p, err := trace.Parse(raw)
	if err != nil {
		row.NotPooled = "raw.json does not parse: " + err.Error()
		return row
	}
	w := p.Window()
	row.capture, row.Window, row.Incarnation, row.Samples = p, &w, p.Incarnation(), p.Samples()
	var v trace.Validation
	if b, _, ok := ev.readAttemptFile(c, "validation.json"); ok {
		_ = json.Unmarshal(b, &v)
	}
	row.Complete, row.Dropped = v.Complete, v.Dropped
	switch {
	case row.Status != string(engine.StatusSucceeded):
		row.NotPooled = "the step " + row.Status + ": " + row.Message
	case !v.Complete:
		row.NotPooled = "incomplete capture"
	}
	return row
}

// poolTraces pools the complete captures of each target, one incarnation each.
func poolTraces(rows []TraceCaptureRow) []TracePool {
	var targets []string
	for _, r := range rows {
		if !slices.Contains(targets, r.Target) {
			targets = append(targets, r.Target)
		}
	}
	out := []TracePool{}
	for _, tg := range targets {
		type inc struct {
			name              string
			captures, samples int
			first             int
		}
		var incs []*inc
		for i, r := range rows {
			if r.Target != tg || r.NotPooled != "" {
				continue
			}
			j := slices.IndexFunc(incs, func(x *inc) bool { return x.name == r.Incarnation })
			if j < 0 {
				incs = append(incs, &inc{name: r.Incarnation, first: i})
				j = len(incs) - 1
			}
			incs[j].captures++
			incs[j].samples += r.Samples
		}
		if len(incs) == 0 {
			continue
		}
		ref := slices.MaxFunc(incs, func(a, b *inc) int {
			switch {
			case a.captures != b.captures:
				return a.captures - b.captures
			case a.samples != b.samples:
				return a.samples - b.samples
			}
			return b.first - a.first // the earlier wins
		})
		pool := TracePool{Target: tg, Incarnation: ref.name, Captures: []string{}, ExcludedIncarnations: []string{}, Overlapping: []string{},
			Basis: "the incarnation with the most complete captures (then the most samples, then the earliest); records of another incarnation are never pooled with it"}
		var caps []*trace.Capture
		for i := range rows {
			r := &rows[i]
			if r.Target != tg || r.NotPooled != "" {
				continue
			}
			if r.Incarnation != ref.name {
				r.NotPooled = "another incarnation (" + r.Incarnation + ") than the pooled " + ref.name
				pool.ExcludedCaptures++
				pool.ExcludedSamples += r.Samples
				if !slices.Contains(pool.ExcludedIncarnations, r.Incarnation) {
					pool.ExcludedIncarnations = append(pool.ExcludedIncarnations, r.Incarnation)
				}
				continue
			}
			r.Pooled = true
			name := fmt.Sprintf("%s attempt %d", r.Step, r.Attempt)
			for j, c := range caps {
				if c.Overlaps(r.capture) {
					pool.Overlapping = append(pool.Overlapping, pool.Captures[j]+" and "+name)
				}
			}
			pool.Captures = append(pool.Captures, name)
			caps = append(caps, r.capture)
		}
		pool.Analysis = trace.Analyze(caps)
		out = append(out, pool)
	}
	return out
}

func (ev *evidence) nsightCapture(c captureAttempt) NsightCapture {
	row := NsightCapture{Step: c.addr, Attempt: c.n, Target: targetName(c.in), ToolWarnings: []string{}}
	row.Status, row.Class, row.Message = c.status()
	row.Overlap = ev.overlap(c)
	var rec struct {
		Start     string `json:"start_utc"`
		End       string `json:"end_utc"`
		SQLite    string `json:"sqlite"`
		Control   string `json:"control"`
		Simulated bool   `json:"simulated"`
		Source    string `json:"source"`
	}
	if b, _, ok := ev.readAttemptFile(c, "capture.json"); ok {
		_ = json.Unmarshal(b, &rec)
		if rec.Start != "" {
			row.StepWindow = &UTCWindow{Start: rec.Start, End: rec.End}
		}
		row.Control = rec.Control
		row.Simulated, row.SimulatedBy = rec.Simulated, rec.Source
	}
	if b, _, ok := ev.readAttemptFile(c, "warnings.txt"); ok {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				row.ToolWarnings = append(row.ToolWarnings, l)
			}
		}
	}
	if rec.SQLite != "" {
		if _, ref, ok := ev.readAttemptFile(c, rec.SQLite); ok {
			row.SQLite = ref
			m, err := nsys.MappingFromPlan(c.in.Config)
			if err == nil {
				row.Analysis, err = nsys.Analyze(filepath.Join(ev.dir, filepath.FromSlash(ref.Path)), m)
			}
			if err != nil {
				row.AnalysisError = err.Error()
			}
		}
	}
	return row
}

// overhead compares the profiled block with the control the nsys step names, against
// the unprofiled blocks like the control: no capture ran during them.
func (ev *evidence) overhead(row NsightCapture, observed map[string]bool) (*Overhead, string) {
	switch {
	case observed[row.Control]:
		return nil, row.Control + " is not an unprofiled control: a capture ran during it"
	case row.Control == "":
		return nil, "no control block named (control = step.block.X on the nsys step)"
	case !row.Overlap.Recorded:
		return nil, "no profiled block: " + OverlapNotRecorded
	case !row.Overlap.Overlapped || !row.Overlap.Consistent:
		return nil, "no profiled block: the capture did not run within the load of " + row.Overlap.Block
	}
	prof, ctrl := ev.blockByAddr(row.Overlap.Block), ev.blockByAddr(row.Control)
	switch {
	case prof == nil || ctrl == nil:
		return nil, fmt.Sprintf("%s or %s is not a block of the plan", row.Overlap.Block, row.Control)
	case prof.stats == nil || ctrl.stats == nil || prof.stats.OK == 0 || ctrl.stats.OK == 0:
		return nil, "the profiled or the control block has no visible success to compare"
	}
	o := &Overhead{Profiled: prof.Addr, Control: ctrl.Addr, Caveat: ObserverCaveat, NoiseBlocks: []string{}}
	o.SameArm = armOf(prof) == armOf(ctrl)
	o.SameConcurrency = prof.Conc == ctrl.Conc
	pc, cc := ev.corpusOf(prof), ev.corpusOf(ctrl)
	o.SameCorpus = pc != "" && pc == cc
	o.Adjacent = ev.adjacent(prof, ctrl)
	var noise []*blockRef
	inc := text(ev.stepOutputs(ctrl.Addr)["incarnation"])
	for _, b := range ev.blocks {
		if b != prof && !observed[b.Addr] && b.stats != nil && b.stats.OK > 0 && armOf(b) == armOf(ctrl) && b.Conc == ctrl.Conc && ev.corpusOf(b) == cc && b.Phase != "priming" &&
			text(ev.stepOutputs(b.Addr)["incarnation"]) == inc {
			noise = append(noise, b)
			o.NoiseBlocks = append(o.NoiseBlocks, b.Addr)
		}
	}
	metrics := []struct {
		name string
		f    func(*blockStats) *float64
	}{
		{"aggregate output tok/s", func(s *blockStats) *float64 { x := s.AggregateTokS(); return &x }},
		{"TPOT p50 ms", func(s *blockStats) *float64 { return s.TPOTp50 }},
		{"TTFT p50 ms", func(s *blockStats) *float64 { return s.TTFTp50 }},
	}
	for _, m := range metrics {
		p, c := m.f(prof.stats), m.f(ctrl.stats)
		if p == nil || c == nil || *c == 0 {
			continue
		}
		om := OverheadMetric{Metric: m.name, Profiled: *p, Control: *c, Difference: *p / *c - 1}
		var xs []float64
		for _, b := range noise {
			if x := m.f(b.stats); x != nil {
				xs = append(xs, *x)
			}
		}
		if len(xs) >= 2 {
			lo, hi, sum := slices.Min(xs), slices.Max(xs), 0.0
			for _, x := range xs {
				sum += x
			}
			r := (hi - lo) / (sum / float64(len(xs)))
			within := math.Abs(om.Difference) <= r
			om.NoiseRange, om.WithinNoise = &r, &within
		}
		o.Metrics = append(o.Metrics, om)
	}
	note := ""
	if len(noise) < 2 {
		note = "the noise is not estimable: fewer than two unprofiled blocks of the same arm, concurrency, corpus and incarnation"
	}
	return o, note
}

// blocksWithin lists the blocks on the capture's container (its target's name when
// no container is named) whose attempt window (result.json anchors) intersects the
// capture's UTC window for a positive time.
func (ev *evidence) blocksWithin(capture *instanceDoc, start, end string) []*blockRef {
	cs, err1 := time.Parse(time.RFC3339Nano, start)
	ce, err2 := time.Parse(time.RFC3339Nano, end)
	if err1 != nil || err2 != nil || !ce.After(cs) {
		return nil
	}
	where := func(t map[string]any) string {
		if c := text(t["container"]); c != "" {
			return "container " + c
		}
		return "target " + text(t["name"])
	}
	tg, _ := capture.Config["target"].(map[string]any)
	if tg == nil {
		return nil
	}
	on := where(tg)
	var out []*blockRef
	for _, b := range ev.blocks {
		if where(b.Target) != on {
			continue
		}
		for _, a := range b.attempts {
			if a.result == nil || a.result.Anchors == nil {
				continue
			}
			bs, be := a.result.Anchors.Before.UTC, a.result.Anchors.After.UTC
			if be.After(cs) && ce.After(bs) {
				out = append(out, b)
				break
			}
		}
	}
	return out
}

func (ev *evidence) blockByAddr(addr string) *blockRef {
	for _, b := range ev.blocks {
		if b.Addr == addr {
			return b
		}
	}
	return nil
}

// armOf is the matrix arm of a block, or its target for a block outside a matrix.
func armOf(b *blockRef) string {
	if b.Arm != "" {
		return "arm " + b.Arm
	}
	return "target " + text(b.Target["name"])
}

// corpusOf is the sha256 of the corpus the block's settling attempt sent, as its
// result.json recorded it (readResult).
func (ev *evidence) corpusOf(b *blockRef) string {
	if a := b.settling(); a != nil && a.corpus != nil {
		return a.corpus.SHA256
	}
	return ""
}

// adjacent reports whether no other block on the same target started between the
// two blocks' settling attempts.
func (ev *evidence) adjacent(a, b *blockRef) bool {
	seq := func(x *blockRef) int {
		if x.End == nil {
			return -1
		}
		if st, ok := ev.startTime[x.Addr+"#"+strconv.Itoa(x.End.Attempt)]; ok {
			return st.Seq
		}
		return -1
	}
	sa, sb := seq(a), seq(b)
	if sa < 0 || sb < 0 {
		return false
	}
	lo, hi := min(sa, sb), max(sa, sb)
	tgt := text(a.Target["name"])
	for _, x := range ev.blocks {
		if x == a || x == b || text(x.Target["name"]) != tgt {
			continue
		}
		for _, st := range ev.startRecs[x.Addr] {
			if st.Seq > lo && st.Seq < hi {
				return false
			}
		}
	}
	return true
}
