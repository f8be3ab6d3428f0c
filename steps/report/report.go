package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/rigor-bench/rigor/engine"
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
	ev, err := loadEvidence(stateDir)
	if err != nil {
		return nil, err
	}
	if err := scanAll(ev); err != nil {
		return nil, err
	}
	ev.loadGPU()
	r := &Report{ev: ev, rows: map[string]*Row{}}
	s := &r.Summary
	s.Schema = SchemaName
	s.Campaign = ev.plan.Campaign.Name
	s.PlanSHA256, s.EffectivePlan, s.Amendments = ev.planSHA256, ev.effSHA256, len(ev.amendments)
	s.ManifestSHA256 = ev.manifestSHA
	s.CampaignStatus = "running or crashed (no campaign_end record)"
	if ev.ended != nil {
		s.CampaignStatus = string(ev.ended.Status)
	}
	s.PercentileMethod = "exact; linear interpolation between closest ranks (Hyndman-Fan type 7, NumPy default)"
	s.TimingPopulation = "visible successes of measured blocks; priming blocks excluded; failed requests stay in attempted"
	s.Rows = []Row{}
	for _, c := range ev.cells {
		row := ev.buildRow(c)
		s.Rows = append(s.Rows, row)
	}
	for i := range s.Rows {
		r.rows[s.Rows[i].CellID] = &s.Rows[i]
	}
	s.Statistics = ev.statistics(s.Rows)
	s.Promotion = ev.decide(r.rows)
	s.Coverage = CoverageSum{ByStatus: map[string]int{}}
	for _, addr := range ev.stepAddrs() {
		s.Coverage.Steps++
		st := Pending
		if e := ev.final[addr]; e != nil {
			st = string(e.Status)
		}
		s.Coverage.ByStatus[st]++
	}
	s.Integrity = append([]string{}, ev.problems...)
	return r, nil
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
		if b.stats == nil {
			continue
		}
		st.Blocks++
		if b.Matrix == "" {
			st.OtherBlocksAttempted += b.stats.Attempted
			st.OtherBlocksSucceeded += b.stats.OK
			continue
		}
		st.AttemptedRequests += b.stats.Attempted
		st.SucceededRequests += b.stats.OK
		st.FailedRequestsIncluding += b.stats.Attempted - b.stats.OK
		if b.measured() {
			st.MeasuredAttempted += b.stats.Attempted
			st.MeasuredSucceeded += b.stats.OK
		} else {
			st.RequestsNotInStatistics += b.stats.Attempted
		}
	}
	return st
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
		if err := os.WriteFile(p, b, 0o644); err != nil {
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
