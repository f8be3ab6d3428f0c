package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/engine/atomicfile"
	"github.com/rigor-bench/rigor/schemas"
)

// Options select what Generate writes.
type Options struct {
	State  string // state directory
	Out    string // output directory; default <state>/report
	Format string // md, html or both (default both)
	Charts bool   // render charts (PNG and SVG)
}

// Report is a built report: the summary and the evidence it was computed from.
type Report struct {
	Summary Summary
	ev      *evidence
	rows    map[string]*Row
}

// ErrFormat is returned for an unknown --format.
var ErrFormat = errors.New("unknown report format")

// Build reads a state directory and computes the summary. It streams every
// requests.jsonl once.
func Build(stateDir string) (*Report, error) {
	ev, err := readEvidence(stateDir)
	if err != nil {
		return nil, err
	}
	return ev.build(), nil
}

// readEvidence reads the state directory and every block's records.
func readEvidence(stateDir string) (*evidence, error) {
	ev, err := loadEvidence(stateDir)
	if err != nil {
		return nil, err
	}
	if err := scanAll(ev); err != nil {
		return nil, err
	}
	ev.loadGPU()
	for _, b := range ev.blocks {
		for _, a := range b.attempts {
			if a.stats != nil {
				a.validity = ev.validate(b, a)
				a.energy = blockEnergy(b.Addr, a)
			}
		}
	}
	return ev, nil
}

// build computes the summary from the evidence read.
func (ev *evidence) build() *Report {
	r := &Report{ev: ev, rows: map[string]*Row{}}
	s := &r.Summary
	// The captures first: a block one observed is kept out of the clean figures.
	s.Diagnostics = ev.diagnostics()
	ev.markObserved()
	s.Schema = SchemaName
	s.Campaign = ev.plan.Campaign.Name
	s.PlanSHA256, s.EffectivePlan, s.Amendments = ev.planSHA256, ev.effSHA256, len(ev.amendments)
	s.ManifestSHA256 = ev.manifestSHA
	s.CampaignStatus = "running or crashed (no campaign_end record)"
	if ev.ended != nil {
		s.CampaignStatus = string(ev.ended.Status)
	}
	s.PercentileMethod = "exact; linear interpolation between closest ranks (Hyndman-Fan type 7, NumPy default); tails with distribution-free 95% order-statistic intervals, certified from MLPerf LoadGen's early-stopping counts (one-sided 99%)"
	s.TimingPopulation = "visible successes of measured blocks; priming blocks excluded; failed requests stay in attempted"
	s.Rows = []Row{}
	for _, c := range ev.cells {
		row := ev.buildRow(c)
		s.Rows = append(s.Rows, row)
	}
	for i := range s.Rows {
		r.rows[s.Rows[i].CellID] = &s.Rows[i]
	}
	s.PromptReconstruction = ev.promptReconstruction()
	s.Statistics = ev.statistics(s.Rows)
	s.Promotion = ev.decide(r.rows)
	ev.verdictStatistics(&s.Statistics, s.Promotion)
	s.Coverage = CoverageSum{ByStatus: map[string]int{}}
	for _, addr := range ev.stepAddrs() {
		s.Coverage.Steps++
		st := Pending
		if e := ev.final[addr]; e != nil {
			st = string(e.Status)
		}
		s.Coverage.ByStatus[st]++
	}
	s.OutageWindows = ev.outageWindows()
	s.Integrity = append([]string{}, ev.problems...)
	return r
}

func (ev *evidence) statistics(rows []Row) Statistics {
	var st Statistics
	st.RequiredCells = len(rows)
	for _, r := range rows {
		switch r.Disposition {
		case Accepted:
			st.AcceptedCells++
		case Failed:
			st.FailedCells++
		case Blocked:
			st.BlockedCells++
		case Deferred:
			st.DeferredCells++
		case Pending:
			st.PendingCells++
		}
		if r.Timing != nil && r.Timing.TTFT.Samples > 0 && r.Timing.TTFT.Descriptive {
			st.DescriptiveDistributions++
		}
		if r.Disposition == Accepted && (r.Validity == nil || r.Validity.Passed == r.Validity.Blocks) {
			st.AcceptedExpectedTerminal++
		}
		for _, x := range r.Retries {
			st.Retries = append(st.Retries, r.CellID+" "+x)
		}
	}
	for _, b := range ev.blocks {
		done := b.End != nil && b.End.Status == engine.StatusSucceeded
		if b.Matrix != "" {
			if b.measured() {
				st.MeasuredBlocksPlanned++
				if done {
					st.MeasuredBlocksCompleted++
				}
			} else {
				st.PrimingBlocksPlanned++
				if done {
					st.PrimingBlocksCompleted++
				}
			}
		}
		pop := b.population()
		if len(pop) == 0 {
			continue
		}
		st.Blocks++
		for _, a := range pop {
			att, ok := a.stats.Attempted, a.stats.OK
			if b.Matrix == "" {
				st.OtherBlocksAttempted += att
				st.OtherBlocksSucceeded += ok
				continue
			}
			st.AttemptedRequests += att
			st.SucceededRequests += ok
			st.FailedRequestsIncluding += att - ok
			if b.measured() {
				st.MeasuredAttempted += att
				st.MeasuredSucceeded += ok
			} else {
				st.RequestsNotInStatistics += att
			}
		}
	}
	return st
}

// Method is summary.json's statement of how the verdict's statistics are computed.
const Method = "Repetitions (blocks) are the unit of replication. Per repetition the candidate's block is compared with the mean of the incumbent blocks before and after it (ABBA), or with the block before it alone when no incumbent arm runs after the candidate, as a ratio; the effect is the mean of the per-repetition gains with a two-sided 95% interval: Student's t over the paired gains, or a percentile bootstrap over blocks (10,000 resamples, fixed seed) when there are at least 8 pairs and their skewness exceeds 1 in magnitude. Drift is after/before - 1 per repetition between the incumbent arms, with the same interval."

// verdictStatistics adds the verdict's figures to the statistics block.
func (ev *evidence) verdictStatistics(st *Statistics, v Verdict) {
	st.Method = Method
	st.Drift, st.Effects = []Drift{}, []Effect{}
	if st.Retries == nil {
		st.Retries = []string{}
	}
	for _, c := range v.Comparisons {
		e := Effect{Role: c.Role, Cell: c.Cell, Metric: c.Metric, Pairs: len(c.Pairs), Gain: c.Gain, Eligible: c.Eligible}
		if c.Interval != nil {
			e.Lo, e.Hi, e.Method = &c.Interval.Lo, &c.Interval.Hi, c.Interval.Method
		}
		st.Effects = append(st.Effects, e)
		st.MatchedLatencyPairs += len(c.Pairs)
	}
	// Drift at every concurrency both incumbent arms measured, on the rule's metric.
	if r := ev.plan.Campaign.Decision; r != nil && v.DriftArm != "" {
		seen := map[int]bool{}
		for _, c := range ev.cells {
			if c.Matrix != r.Matrix || c.Arm != r.BaselineArm || seen[c.Conc] {
				continue
			}
			seen[c.Conc] = true
			if d := ev.drift(r.Matrix, r.BaselineArm, v.DriftArm, c.Conc, max(r.MatchedRepetitions, 1), r.PrimaryMetric, v.MaxDrift); d != nil {
				st.Drift = append(st.Drift, *d)
			}
		}
	}
	st.Validity = ValiditySum{Checks: []string{"load", "counts", "e2e_identity", "tpot_floor", "client_timing"}, Failures: []string{}}
	for _, m := range ev.measuredAttempts() {
		st.Validity.BlocksChecked++
		if !m.a.validity.OK {
			st.Validity.BlocksFailed++
			for _, f := range m.a.validity.failed() {
				st.Validity.Failures = append(st.Validity.Failures, fmt.Sprintf("%s attempt %d: %s", m.b.Addr, m.a.N, f))
			}
		}
		if e := m.a.energy; e != nil {
			st.Energy.Blocks++
			st.Energy.Simulated = st.Energy.Simulated || e.Simulated
			st.Energy.Source = e.Source
		}
	}
	st.Energy.Basis = "GPU power samples (gpu.jsonl) integrated by the trapezoid rule over each block's window (result.json anchors), summed over GPUs; per output token over Σ completion tokens of every record of the block with usage, failed requests' included (the window's energy went to them too); per request over attempted requests"
	if st.Energy.Simulated {
		st.Energy.Basis += "; simulated GPUs: simulated energy, not a measurement"
	}
	st.Power = ev.power()
}

// SummaryJSON is summary.json: indented, validated against the schema.
func (r *Report) SummaryJSON() ([]byte, error) {
	b, err := json.MarshalIndent(r.Summary, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := schemas.Validate("summary", b); err != nil {
		return nil, fmt.Errorf("summary.json does not validate: %w", err)
	}
	return append(b, '\n'), nil
}

// Generate builds the report of opts.State and writes it; it returns the files
// written, relative to the output directory.
func Generate(opts Options) ([]string, error) {
	if opts.Format == "" {
		opts.Format = "both"
	}
	if opts.Format != "md" && opts.Format != "html" && opts.Format != "both" {
		return nil, fmt.Errorf("%w %q: use md, html or both", ErrFormat, opts.Format)
	}
	if opts.Out == "" {
		opts.Out = filepath.Join(opts.State, "report")
	}
	r, err := Build(opts.State)
	if err != nil {
		return nil, err
	}
	return r.Write(opts)
}

// Write writes summary.json, the charts and the documents into opts.Out.
func (r *Report) Write(opts Options) ([]string, error) {
	if err := os.MkdirAll(opts.Out, 0o755); err != nil {
		return nil, err
	}
	var written []string
	put := func(name string, b []byte) error {
		p := filepath.Join(opts.Out, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// Replaced whole: a full disk keeps the previous report's file, not half of it.
		if err := atomicfile.Write(p, b, 0o644); err != nil {
			return err
		}
		written = append(written, name)
		return nil
	}
	sj, err := r.SummaryJSON()
	if err != nil {
		return nil, err
	}
	if err := put("summary.json", sj); err != nil {
		return nil, err
	}
	var charts []chart
	if opts.Charts {
		charts, err = r.charts()
		if err != nil {
			return written, err
		}
		for _, c := range charts {
			if err := put(c.PNG, c.pngData); err != nil {
				return written, err
			}
			if err := put(c.SVG, c.svgData); err != nil {
				return written, err
			}
		}
	}
	d := r.document(charts)
	if opts.Format == "md" || opts.Format == "both" {
		if err := put("report.md", d.markdown()); err != nil {
			return written, err
		}
	}
	if opts.Format == "html" || opts.Format == "both" {
		if err := put("report.html", d.html(charts)); err != nil {
			return written, err
		}
	}
	return written, nil
}
