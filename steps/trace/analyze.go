package trace

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// The analysis of captures by seed 000's rules. It is the report's; it lives here
// beside the validation so that both read a capture through one type.
//
//   - Samples are grouped by runtime graph (index, kind, shape), scheduled lane
//     count and the queued flag; queued and unqueued samples are never mixed.
//   - Each rank's GPU interval is summarised on its own, and so is their maximum
//     per sample; rank intervals are never summed. The spread is the maximum minus
//     the minimum rank interval of a sample.
//   - retained_ns is compared with the sample's own measured cost by the cost
//     estimator's rule: the max-rank GPU interval when the sample was queued,
//     otherwise max(max-rank GPU interval, host wall interval).
//   - The prior-observation age is selected_at_ns − selection.observed_at_ns, over
//     the samples whose selection had a prior observation.
//   - Host wall is host_wall_ns when the capture carries it, otherwise completion
//     observation − selection.

// Gaps are what a scheduler trace cannot say (seed 000 and seed 002). The report
// states them beside every trace analysis.
var Gaps = []string{
	"Graph token, prefill and batch sizes are capacities of the captured graph, not the tokens a lane actually carried.",
	"The request array holds physical scheduler slot/generation handles, not HTTP request IDs: no sample is attributed to a request or a token; client and native records meet only by time-window overlap.",
	"queued means another executor frame was outstanding at submission, not that an HTTP request waited.",
	"Similar rank intervals do not exclude a stall common to both ranks.",
	"Host wall time includes staging, coordination, device queueing and delivery: host wall minus max-rank GPU time is not a pure CPU or launch-cost estimate.",
	"retained_ns is a prior shape-cost observation selected for the plan, not the submitted plan's estimate, which the trace does not carry.",
}

// Stat summarises one figure over samples: count, minimum, median, p95 and maximum
// (type-7 percentiles, as everywhere in rigor), in the unit its field names.
type Stat struct {
	N   int     `json:"n"`
	Min float64 `json:"min"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	Max float64 `json:"max"`
}

func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	return Stat{N: len(s), Min: s[0], P50: loadgen.Percentile(s, 0.5), P95: loadgen.Percentile(s, 0.95), Max: s[len(s)-1]}
}

// RankStat is one rank's GPU interval.
type RankStat struct {
	Rank       int  `json:"rank"`
	IntervalMS Stat `json:"interval_ms"`
}

// Retained references: what retained_ns is compared with.
const (
	RefMaxRank     = "max-rank GPU interval"
	RefMaxRankWall = "max(max-rank GPU interval, host wall)"
)

// Group is the samples of one graph, lane count and queued flag.
type Group struct {
	Graph           int    `json:"graph"`
	Kind            string `json:"kind"`
	Shape           string `json:"shape"`
	BatchCapacity   int    `json:"batch_capacity"`
	TokenCapacity   int    `json:"token_capacity"`
	PrefillCapacity int    `json:"prefill_capacity"`
	Lanes           int    `json:"scheduled_lanes"`
	Queued          bool   `json:"queued"`
	Samples         int    `json:"samples"`

	Ranks            []RankStat `json:"rank_interval_ms"`
	MaxRankMS        Stat       `json:"max_rank_interval_ms"`
	RankSpreadUS     Stat       `json:"rank_spread_us"`
	HostWallMS       Stat       `json:"host_wall_ms"`
	WallMinusGPUUS   Stat       `json:"host_wall_minus_max_rank_us"`
	SelectToCommitUS Stat       `json:"selection_to_commit_us"`
	CommitToObsMS    Stat       `json:"commit_to_completion_observation_ms"`

	// RetainedMS is retained_ns; Reference says what it is compared with, and
	// RetainedVsRefPct is (retained / reference − 1) × 100 per sample.
	RetainedMS       Stat   `json:"retained_ms"`
	Reference        string `json:"retained_reference"`
	ReferenceMS      Stat   `json:"reference_ms"`
	RetainedVsRefPct Stat   `json:"retained_vs_reference_pct"`

	// AgeMS is selected_at − selection.observed_at over the samples with a prior
	// observation; WithoutPrior counts the others.
	AgeMS        Stat           `json:"prior_observation_age_ms"`
	WithoutPrior int            `json:"without_prior_observation"`
	Freshness    map[string]int `json:"freshness"`
	Origins      map[string]int `json:"refresh_origin"`
}

// Analysis is the pooled analysis of captures of one container incarnation.
type Analysis struct {
	Captures int `json:"captures"`
	Samples  int `json:"samples"`
	Queued   int `json:"queued_samples"`
	Unqueued int `json:"unqueued_samples"`
	// Over every sample, queued or not: each rank, their maximum and spread.
	Ranks        []RankStat `json:"rank_interval_ms"`
	MaxRankMS    Stat       `json:"max_rank_interval_ms"`
	RankSpreadUS Stat       `json:"rank_spread_us"`
	HostWallMS   Stat       `json:"host_wall_ms"`
	Groups       []Group    `json:"groups"`
	// HostWallField counts samples that carried host_wall_ns (the others use
	// completion observation − selection).
	HostWallField int `json:"host_wall_field_samples"`
	// SourceEquivalent counts samples that carried source_equivalent_cost_ns and
	// SourceEquivalentAgree those equal to the rule's reference.
	SourceEquivalent      int `json:"source_equivalent_samples"`
	SourceEquivalentAgree int `json:"source_equivalent_agree"`
	// AgeFieldDisagree counts samples whose prior_observation_age_ns differs from
	// selected_at − selection.observed_at (the seed's definition, which is used).
	AgeFieldDisagree int `json:"age_field_disagree"`
	// GraphConflicts lists graph indices that name different graphs in different
	// captures: their samples are grouped by kind and shape as well, so they stay
	// apart.
	GraphConflicts []string `json:"graph_conflicts"`
}

// Window is where a capture sits in time.
type Window struct {
	RequestedS float64 `json:"requested_s"`
	WindowS    float64 `json:"window_s"`
	// StartUTC and EndUTC place the window on UTC through the before anchor.
	StartUTC string `json:"start_utc"`
	EndUTC   string `json:"end_utc"`
	// AlignmentBoundNS is |(utc_after − utc_before) − (mono_after − mono_before)|:
	// the two anchors disagree by this much on the process clock's UTC offset, so a
	// process-clock time is placed on UTC within ± this bound (plus the gap between
	// the two clock reads inside one anchor, which a capture does not report).
	AlignmentBoundNS int64 `json:"alignment_bound_ns"`
}

// Capture is one parsed capture document.
type Capture struct {
	c capture
}

// Parse reads a capture document (raw.json) and checks it against its schema.
func Parse(raw []byte) (*Capture, error) {
	if err := schemas.Validate("trace-capture", raw); err != nil {
		return nil, err
	}
	var c capture
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	return &Capture{c: c}, nil
}

// Incarnation is the container incarnation the capture names (before and after
// agree in a capture the step accepted).
func (p *Capture) Incarnation() string { return p.c.Incarnation.Before }

// Samples is the number of samples the capture kept.
func (p *Capture) Samples() int { return len(p.c.Samples) }

// Overlaps reports whether two captures of one process clock (one incarnation)
// cover a common moment: their samples may then be the same frames twice.
func (p *Capture) Overlaps(q *Capture) bool {
	return p.c.Window.StartNS < q.c.Window.EndNS && q.c.Window.StartNS < p.c.Window.EndNS
}

// Window places the capture on UTC and bounds that placement.
func (p *Capture) Window() Window {
	c := &p.c
	b, a := c.Clock.Before, c.Clock.After
	utcAt := func(mono int64) string {
		return b.UTC.Add(time.Duration(mono - b.MonoNS)).UTC().Format(time.RFC3339Nano)
	}
	bound := (a.UTC.Sub(b.UTC) - time.Duration(a.MonoNS-b.MonoNS)).Abs()
	return Window{
		RequestedS: float64(c.RequestedDurationNS) / 1e9,
		WindowS:    float64(c.Window.EndNS-c.Window.StartNS) / 1e9,
		StartUTC:   utcAt(c.Window.StartNS), EndUTC: utcAt(c.Window.EndNS),
		AlignmentBoundNS: int64(bound),
	}
}

type groupKey struct {
	graph        int
	kind, shape  string
	lanes        int
	queued       bool
	batch, token int
	prefill      int
}

type acc struct {
	ranks                                      map[int][]float64
	maxRank, spread, wall, wallMinus, sel, com []float64
	retained, ref, vsRef, age                  []float64
	withoutPrior                               int
	fresh, origin                              map[string]int
	reference                                  string
}

func newAcc() *acc {
	return &acc{ranks: map[int][]float64{}, fresh: map[string]int{}, origin: map[string]int{}}
}

func (a *acc) rankStats() []RankStat {
	var out []RankStat
	for _, r := range slices.Sorted(maps.Keys(a.ranks)) {
		out = append(out, RankStat{Rank: r, IntervalMS: stat(a.ranks[r])})
	}
	return out
}

// Analyze pools the samples of captures the caller has already restricted to one
// container incarnation.
func Analyze(caps []*Capture) Analysis {
	out := Analysis{Captures: len(caps), GraphConflicts: []string{}, Groups: []Group{}}
	all := newAcc()
	groups := map[groupKey]*acc{}
	graphName := map[int]string{}
	conflict := map[int]bool{}
	const ms, us = 1e6, 1e3
	for _, p := range caps {
		c := &p.c
		type graphInfo struct {
			kind, shape           string
			batch, token, prefill int
		}
		graphs := map[int]graphInfo{}
		for _, g := range c.Graphs {
			graphs[g.Index] = graphInfo{g.Kind, g.Shape, g.BatchCapacity, g.TokenCapacity, g.PrefillCapacity}
			name := g.Kind + " " + g.Shape
			if prev, ok := graphName[g.Index]; ok && prev != name && !conflict[g.Index] {
				conflict[g.Index] = true
				out.GraphConflicts = append(out.GraphConflicts, fmt.Sprintf("graph %d is %q in one capture and %q in another", g.Index, prev, name))
			}
			graphName[g.Index] = name
		}
		for _, s := range c.Samples {
			out.Samples++
			if s.Queued {
				out.Queued++
			} else {
				out.Unqueued++
			}
			gi := graphs[s.Graph]
			k := groupKey{graph: s.Graph, kind: gi.kind, shape: gi.shape, lanes: s.ScheduledLanes, queued: s.Queued, batch: gi.batch, token: gi.token, prefill: gi.prefill}
			g := groups[k]
			if g == nil {
				g = newAcc()
				groups[k] = g
			}
			var maxRank, minRank int64 = 0, -1
			for _, r := range s.Ranks {
				d := r.EndNS - r.StartNS
				g.ranks[r.Rank] = append(g.ranks[r.Rank], float64(d)/ms)
				all.ranks[r.Rank] = append(all.ranks[r.Rank], float64(d)/ms)
				maxRank = max(maxRank, d)
				if minRank < 0 || d < minRank {
					minRank = d
				}
			}
			wall := s.CompletionNS - s.SelectedAtNS
			if s.HostWallNS != nil {
				wall = *s.HostWallNS
				out.HostWallField++
			}
			for _, a := range []*acc{g, all} {
				a.maxRank = append(a.maxRank, float64(maxRank)/ms)
				a.spread = append(a.spread, float64(maxRank-max(minRank, 0))/us)
				a.wall = append(a.wall, float64(wall)/ms)
			}
			g.wallMinus = append(g.wallMinus, float64(wall-maxRank)/us)
			g.sel = append(g.sel, float64(s.CommittedAtNS-s.SelectedAtNS)/us)
			g.com = append(g.com, float64(s.CompletionNS-s.CommittedAtNS)/ms)

			ref, refName := maxRank, RefMaxRank
			if !s.Queued {
				ref, refName = max(maxRank, wall), RefMaxRankWall
			}
			g.reference = refName
			g.retained = append(g.retained, float64(s.RetainedNS)/ms)
			g.ref = append(g.ref, float64(ref)/ms)
			if ref > 0 {
				g.vsRef = append(g.vsRef, (float64(s.RetainedNS)/float64(ref)-1)*100)
			}
			if s.SourceEqNS != nil {
				out.SourceEquivalent++
				if *s.SourceEqNS == ref {
					out.SourceEquivalentAgree++
				}
			}
			if s.PriorPresent != nil && !*s.PriorPresent {
				g.withoutPrior++
			} else {
				age := s.SelectedAtNS - s.Selection.ObservedAtNS
				g.age = append(g.age, float64(age)/ms)
				if s.PriorAgeNS != nil && *s.PriorAgeNS != age {
					out.AgeFieldDisagree++
				}
			}
			g.fresh[orUnset(s.Selection.Freshness)]++
			g.origin[orUnset(s.Selection.RefreshOrigin)]++
		}
	}
	out.Ranks = all.rankStats()
	out.MaxRankMS, out.RankSpreadUS, out.HostWallMS = stat(all.maxRank), stat(all.spread), stat(all.wall)
	keys := slices.Collect(maps.Keys(groups))
	slices.SortFunc(keys, func(a, b groupKey) int {
		switch {
		case a.graph != b.graph:
			return a.graph - b.graph
		case a.kind != b.kind:
			return cmp.Compare(a.kind, b.kind)
		case a.shape != b.shape:
			return cmp.Compare(a.shape, b.shape)
		case a.lanes != b.lanes:
			return a.lanes - b.lanes
		case a.queued != b.queued:
			if a.queued {
				return 1
			}
			return -1
		}
		return 0
	})
	for _, k := range keys {
		a := groups[k]
		out.Groups = append(out.Groups, Group{
			Graph: k.graph, Kind: k.kind, Shape: k.shape, BatchCapacity: k.batch, TokenCapacity: k.token, PrefillCapacity: k.prefill,
			Lanes: k.lanes, Queued: k.queued, Samples: len(a.maxRank),
			Ranks: a.rankStats(), MaxRankMS: stat(a.maxRank), RankSpreadUS: stat(a.spread), HostWallMS: stat(a.wall),
			WallMinusGPUUS: stat(a.wallMinus), SelectToCommitUS: stat(a.sel), CommitToObsMS: stat(a.com),
			RetainedMS: stat(a.retained), Reference: a.reference, ReferenceMS: stat(a.ref), RetainedVsRefPct: stat(a.vsRef),
			AgeMS: stat(a.age), WithoutPrior: a.withoutPrior, Freshness: a.fresh, Origins: a.origin,
		})
	}
	return out
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}
