package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rigor-bench/rigor/steps/internal/agent"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// planDoc is the part of the canonical plan JSON the report reads.
type planDoc struct {
	Campaign struct {
		Name        string        `json:"name"`
		Description string        `json:"description"`
		Outage      *outageDoc    `json:"outage"`
		Decision    *decisionRule `json:"decision"`
		Frozen      []string      `json:"frozen"`
	} `json:"campaign"`
	Instances []instanceDoc `json:"instances"`
}

type outageDoc struct {
	BudgetS  float64 `json:"budget_s"`
	ReserveS float64 `json:"reserve_s"`
}

type instanceDoc struct {
	Addr      string         `json:"addr"`
	Type      string         `json:"type"`
	Arm       string         `json:"arm"`
	Cell      string         `json:"cell"`
	Config    map[string]any `json:"config"`
	DependsOn []string       `json:"depends_on"`
	Meta      struct {
		Always   bool    `json:"always"`
		Phase    string  `json:"phase"`
		TimeoutS float64 `json:"timeout_s"`
		Outage   string  `json:"outage"`
	} `json:"meta"`
}

// decisionRule mirrors plans.Decision as it appears in the canonical plan.
type decisionRule struct {
	Name string `json:"name"`
	// Matrix is the matrix the rule compares; a plan frozen before rules named
	// their matrix has none, and compared the first matrix with the baseline arm
	// (normalised on load).
	Matrix                 string   `json:"matrix"`
	PrimaryMetric          string   `json:"primary_metric"`
	PrimaryCells           []string `json:"primary_cells"`
	BaselineArm            string   `json:"baseline_arm"`
	CandidateArm           string   `json:"candidate_arm"`
	ProtectedCells         []string `json:"protected_cells"`
	MinGain                float64  `json:"min_gain"`
	MaxProtectedRegression float64  `json:"max_protected_regression"`
	MatchedRepetitions     int      `json:"matched_repetitions"`
	// Criterion is "point" or "interval"; a plan frozen before rigor knew criteria
	// has none, and its rule was a point rule (normalised on load).
	Criterion string   `json:"criterion"`
	MaxDrift  *float64 `json:"max_drift,omitempty"`
	BlockCV   *float64 `json:"block_cv,omitempty"`
	// Promotion is false for a diagnostic-only rule; absent means true.
	Promotion *bool `json:"promotion,omitempty"`
}

// promotes says whether the rule may promote at all.
func (r *decisionRule) promotes() bool { return r.Promotion == nil || *r.Promotion }

// evidence is everything read from a state directory before the records are
// streamed.
type evidence struct {
	dir        string
	plan       planDoc
	planSHA256 string // frozen plan hash (plan/plan.sha256 via the journal)
	effSHA256  string // effective plan hash, after amendments
	amendments []amendment
	// unclassified is why the amendments could not be re-classified, if so.
	unclassified error
	records      []engine.Record
	chainErr     error
	final        map[string]*engine.Record  // last settling step_end per step
	starts       map[string]int             // attempts started per step
	startRecs    map[string][]engine.Record // step_start records per step, in journal order
	ends         map[string]*engine.Record  // step_end per step#attempt
	manifestSHA  string
	manifestN    int
	blocks       []*blockRef // every block step instance, in plan order
	cells        []*cellRef
	ended        *engine.Record
	outage       []engine.Record          // outage_begin / outage_end records
	startTime    map[string]engine.Record // step_start of the settling attempt
	problems     []string                 // integrity problems met while reading
	corpora      map[string]*CorpusCell   // matrix/cN: the arms' corpus digests
	gpuSamples   []gpuSample
}

type amendment struct {
	Number  int
	Time    string
	Reason  string
	Summary string
	Touched []string
	Diff    plans.Diff
	Path    string
	SHA256  string
	// review is the amendment's classification, redone from the journal.
	review *engine.RecordedReview
}

// blockRef is one block step instance of the plan and what the journal says about it.
type blockRef struct {
	Addr       string
	Matrix     string // "" for a block step outside a matrix (pilot)
	CellKey    string // matrix/arm/cN
	Arm        string
	Phase      string
	Repetition int // 0 for priming
	Conc       int
	Requests   string // planned, as text: a number or "(known after …)"
	Target     map[string]any
	Workload   map[string]any
	End        *engine.Record // settling step_end, nil when none
	Attempts   int
	// attempts is every attempt the journal started, in order. stats and gpu are the
	// settling attempt's; every attempt's records stay in the cell's population.
	attempts []*attemptRef
	stats    *blockStats
	gpu      []gpuSample
	cfg      map[string]any
	// observedBy names the capture steps whose window intersected the block's load
	// (their overlap.json): an observed block is never clean data. excluded says it
	// is kept out of its cell's figures, because the cell has unobserved blocks.
	observedBy []string
	excluded   bool
}

// blockCache is the part of a block's result.json cache section the report shows.
type blockCache struct {
	Expected      string  `json:"expected"`
	Contradiction *string `json:"contradiction"`
	// Start is where the block's cache state came from (nil in evidence from before
	// it was kept).
	Start *struct {
		State       string `json:"state"`
		CarriedFrom *struct {
			Addr string `json:"addr"`
			Arm  string `json:"arm"`
		} `json:"carried_from"`
		InheritedFromOtherArm bool `json:"inherited_from_other_arm"`
	} `json:"start"`
}

// blockCorpus is the part of a block's result.json corpus section the report shows.
type blockCorpus struct {
	Key    string `json:"key"`
	SHA256 string `json:"sha256"`
}

// attemptRef is one attempt of a block: attempts/<step>/<n>/.
type attemptRef struct {
	N     int
	Dir   string
	Start engine.Record
	End   *engine.Record // nil: the apply died and no later apply has closed it yet
	stats *blockStats
	gpu   []gpuSample
	// result is result.json, absent when the attempt died before writing it.
	result *loadgen.Result
	// engine and model are what the block step recorded beside the loadgen figures
	// ("" in evidence from before it recorded them).
	engine, model string
	// agents is what result.json says of the rigor agents that sent the block (nil
	// when the block step sent it itself).
	agents *agent.Report
	// cache is result.json's cache state: what the block expected its corpus to find
	// and how the counters contradicted it (nil in evidence from before it was kept).
	cache *blockCache
	// corpus is result.json's corpus identity and digest (nil in evidence from
	// before it was kept).
	corpus *blockCorpus
	// Declared is the request count the block declared (plan, result.json or another
	// attempt); Missing of them left no record and count as cancelled failures.
	Declared int
	Missing  int
	validity *BlockValidity
	energy   *BlockEnergy
}

// artefact returns the journal's record of a file of this attempt.
func (a *attemptRef) artefact(name string) (engine.Artefact, bool) {
	if a.End == nil {
		return engine.Artefact{}, false
	}
	for _, x := range a.End.Artefacts {
		if x.Path == a.Dir+"/"+name {
			return x, true
		}
	}
	return engine.Artefact{}, false
}

// settled reports whether the attempt ran to an end of its own (succeeded or
// failed), rather than being interrupted or left open by a crash.
func (a *attemptRef) settled() bool {
	return a.End != nil && a.End.Status != engine.StatusInterrupted
}

// endLabel says how the attempt ended, for the retry notes.
func (a *attemptRef) endLabel() string {
	switch {
	case a.End == nil:
		return "left open (the apply died; no end record yet)"
	case a.End.Class != "":
		return fmt.Sprintf("%s (%s)", a.End.Status, a.End.Class)
	}
	return string(a.End.Status)
}

// cellRef is one matrix cell: arm × concurrency of one matrix.
type cellRef struct {
	Key    string
	Matrix string
	Arm    string
	Conc   int
	Blocks []*blockRef
}

func loadEvidence(dir string) (*evidence, error) {
	ev := &evidence{dir: dir, final: map[string]*engine.Record{}, starts: map[string]int{}, startTime: map[string]engine.Record{},
		startRecs: map[string][]engine.Record{}, ends: map[string]*engine.Record{}}
	recs, _, err := engine.ReadJournal(filepath.Join(dir, engine.JournalFile))
	if err != nil {
		if !errors.Is(err, engine.ErrChainBroken) || len(recs) == 0 {
			return nil, fmt.Errorf("read journal: %w", err)
		}
		ev.chainErr = err // reported, not hidden
		ev.problems = append(ev.problems, err.Error())
	}
	ev.records = recs
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case engine.KindPlanFrozen:
			ev.planSHA256 = r.PlanSHA256
			ev.effSHA256 = r.PlanSHA256
		case engine.KindAmendment:
			ev.effSHA256 = r.PlanSHA256
			ev.amendments = append(ev.amendments, amendment{Number: r.Amendment, Time: r.Time.UTC().Format("2006-01-02T15:04:05Z"),
				Reason: r.Reason, Summary: r.Summary, Touched: r.Touched})
		case engine.KindStepStart:
			ev.starts[r.Step]++
			ev.startTime[r.Step+"#"+strconv.Itoa(r.Attempt)] = *r
			ev.startRecs[r.Step] = append(ev.startRecs[r.Step], *r)
		case engine.KindStepEnd:
			ev.ends[r.Step+"#"+strconv.Itoa(r.Attempt)] = r
			if r.Status != engine.StatusInterrupted || ev.final[r.Step] == nil {
				ev.final[r.Step] = r
			}
		case engine.KindOutageBegin, engine.KindOutageEnd:
			ev.outage = append(ev.outage, *r)
		case engine.KindCampaignEnd:
			ev.ended = r
		}
	}
	planJSON, _, err := engine.EffectivePlan(dir)
	if err != nil {
		return nil, fmt.Errorf("effective plan: %w", err)
	}
	if err := json.Unmarshal(planJSON, &ev.plan); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if d := ev.plan.Campaign.Decision; d != nil && d.Criterion == "" {
		d.Criterion = plans.CriterionPoint
	}
	for i := range ev.amendments {
		a := &ev.amendments[i]
		a.Path = fmt.Sprintf("%s/%04d.json", engine.AmendmentsDir, a.Number)
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(a.Path)))
		if err != nil {
			continue
		}
		a.SHA256 = plans.SHA256Hex(b)
		var doc struct {
			Diff plans.Diff `json:"diff"`
		}
		if json.Unmarshal(b, &doc) == nil {
			a.Diff = doc.Diff
		}
	}
	if revs, err := engine.ReviewRecorded(dir, recs); err != nil {
		ev.unclassified = err
		ev.problems = append(ev.problems, fmt.Sprintf("the amendments cannot be classified: %v", err))
	} else {
		for i := range revs {
			for j := range ev.amendments {
				if ev.amendments[j].Number == revs[i].Number {
					ev.amendments[j].review = &revs[i]
				}
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, engine.ManifestFile)); err == nil {
		ev.manifestSHA = plans.SHA256Hex(b)
		var m engine.Manifest
		if json.Unmarshal(b, &m) == nil {
			ev.manifestN = len(m.Artefacts)
		}
	}
	ev.collectBlocks()
	if d := ev.plan.Campaign.Decision; d != nil && d.Matrix == "" {
		for _, c := range ev.cells {
			if c.Arm == d.BaselineArm {
				d.Matrix = c.Matrix
				break
			}
		}
	}
	return ev, nil
}

func (ev *evidence) collectBlocks() {
	byCell := map[string]*cellRef{}
	for _, in := range ev.plan.Instances {
		if in.Type != "block" {
			continue
		}
		b := &blockRef{Addr: in.Addr, Phase: in.Meta.Phase, Arm: in.Arm, End: ev.final[in.Addr], Attempts: ev.starts[in.Addr], cfg: in.Config}
		for _, st := range ev.startRecs[in.Addr] {
			if st.Attempt == 0 {
				continue
			}
			b.attempts = append(b.attempts, &attemptRef{N: st.Attempt, Dir: st.Dir, Start: st, End: ev.ends[in.Addr+"#"+strconv.Itoa(st.Attempt)]})
		}
		b.Conc = int(num(in.Config["concurrency"]))
		b.Repetition = int(num(in.Config["repetition"]))
		b.Requests = text(in.Config["requests"])
		b.Target, _ = in.Config["target"].(map[string]any)
		b.Workload, _ = in.Config["workload"].(map[string]any)
		if in.Cell != "" {
			b.Matrix = matrixOf(in.Addr)
			b.CellKey = b.Matrix + "/" + in.Cell
			c := byCell[b.CellKey]
			if c == nil {
				c = &cellRef{Key: b.CellKey, Matrix: b.Matrix, Arm: in.Arm, Conc: b.Conc}
				byCell[b.CellKey] = c
				ev.cells = append(ev.cells, c)
			}
			c.Blocks = append(c.Blocks, b)
		}
		ev.blocks = append(ev.blocks, b)
	}
}

// matrixOf returns "primary" for block.primary["arm/c1/r1"].
func matrixOf(addr string) string {
	return strings.TrimPrefix(plans.StepAddr(addr), "block.")
}

// attemptDir is the directory of the settling attempt, relative to the state.
func (b *blockRef) attemptDir() string {
	if b.End == nil || b.End.Attempt == 0 {
		return ""
	}
	return b.End.Dir
}

// settling is the attempt whose end record settled the step, or nil.
func (b *blockRef) settling() *attemptRef {
	if b.End == nil {
		return nil
	}
	for _, a := range b.attempts {
		if a.N == b.End.Attempt {
			return a
		}
	}
	return nil
}

// population is every attempt that left records: all of them count.
func (b *blockRef) population() []*attemptRef {
	var out []*attemptRef
	for _, a := range b.attempts {
		if a.stats != nil {
			out = append(out, a)
		}
	}
	return out
}

// retried reports whether the block has more than one attempt.
func (b *blockRef) retried() bool { return len(b.attempts) > 1 }

// measured reports whether the block is a measured repetition (not priming).
func (b *blockRef) measured() bool { return b.Phase != "priming" && b.Repetition > 0 }

// inStatistics reports whether the block enters its cell's figures: a measured
// block, unless a capture observed it and the cell has unobserved blocks.
func (b *blockRef) inStatistics() bool { return b.measured() && !b.excluded }

// clean reports whether the block is a measured block no capture observed: only
// such blocks enter a verdict.
func (b *blockRef) clean() bool { return b.measured() && len(b.observedBy) == 0 }

// artefact returns the journal's record of a file of the settling attempt.
func (b *blockRef) artefact(name string) (engine.Artefact, bool) {
	if b.End == nil {
		return engine.Artefact{}, false
	}
	for _, a := range b.End.Artefacts {
		if a.Path == b.End.Dir+"/"+name {
			return a, true
		}
	}
	return engine.Artefact{}, false
}

// stepIdentity returns the identity outputs (image_id, container_id …) of a
// deploy or restore step's settling record.
func (ev *evidence) stepOutputs(addr string) map[string]any {
	return recordOutputs(ev.final[addr])
}

// recordOutputs decodes a step_end record's outputs; nil when it has none.
func recordOutputs(r *engine.Record) map[string]any {
	if r == nil || len(r.Outputs) == 0 {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(r.Outputs, &m)
	return m
}

// stepAddrs lists every step of the plan in plan order.
func (ev *evidence) stepAddrs() []string {
	out := make([]string, 0, len(ev.plan.Instances))
	for _, in := range ev.plan.Instances {
		out = append(out, in.Addr)
	}
	return out
}

func (ev *evidence) instance(addr string) *instanceDoc {
	for i := range ev.plan.Instances {
		if ev.plan.Instances[i].Addr == addr {
			return &ev.plan.Instances[i]
		}
	}
	return nil
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case json.Number:
		f, _ := x.Float64()
		return f
	case string:
		f, _ := strconv.ParseFloat(x, 64)
		return f
	}
	return 0
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
