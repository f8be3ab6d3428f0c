package trace

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/schemas"
)

// capture is the part of a capture document the rules and the analysis read.
type capture struct {
	RequestedDurationNS int64 `json:"requested_duration_ns"`
	Incarnation         struct {
		Before string `json:"before"`
		After  string `json:"after"`
	} `json:"incarnation"`
	Clock struct {
		Before struct {
			MonoNS int64     `json:"mono_ns"`
			UTC    time.Time `json:"utc"`
		} `json:"before"`
		After struct {
			MonoNS int64     `json:"mono_ns"`
			UTC    time.Time `json:"utc"`
		} `json:"after"`
	} `json:"clock"`
	Window struct {
		StartNS int64 `json:"start_mono_ns"`
		EndNS   int64 `json:"end_mono_ns"`
	} `json:"window"`
	Ranks          []int `json:"ranks"`
	Capacity       int   `json:"capacity"`
	Overflow       bool  `json:"overflow"`
	DroppedSamples int   `json:"dropped_samples"`
	Graphs         []struct {
		Index           int    `json:"index"`
		Kind            string `json:"kind"`
		Shape           string `json:"shape"`
		BatchCapacity   int    `json:"batch_capacity"`
		TokenCapacity   int    `json:"token_capacity"`
		PrefillCapacity int    `json:"prefill_capacity"`
	} `json:"graphs"`
	Samples []sample `json:"samples"`
}

// sample is one scheduler frame. Optional fields are pointers: absent is not zero.
type sample struct {
	Seq            int    `json:"seq"`
	Graph          int    `json:"graph"`
	ScheduledLanes int    `json:"scheduled_lanes"`
	Queued         bool   `json:"queued"`
	SelectedAtNS   int64  `json:"selected_at_ns"`
	CommittedAtNS  int64  `json:"committed_at_ns"`
	CompletionNS   int64  `json:"completion_observed_at_ns"`
	HostWallNS     *int64 `json:"host_wall_ns"`
	RetainedNS     int64  `json:"retained_ns"`
	SourceEqNS     *int64 `json:"source_equivalent_cost_ns"`
	PriorAgeNS     *int64 `json:"prior_observation_age_ns"`
	PriorPresent   *bool  `json:"prior_observation_present"`
	Selection      struct {
		ObservedAtNS  int64  `json:"observed_at_ns"`
		Freshness     string `json:"freshness"`
		RefreshOrigin string `json:"refresh_origin"`
	} `json:"selection"`
	Ranks []struct {
		Rank    int   `json:"rank"`
		StartNS int64 `json:"start_ns"`
		EndNS   int64 `json:"end_ns"`
	} `json:"ranks"`
}

// Options tune the rules.
type Options struct {
	// MinSamples is the fewest samples a complete capture holds (a capture is taken
	// under load; an empty one is not evidence). Zero means 1.
	MinSamples int
	// ClockSkew is how far the UTC and monotonic spans of the anchors may disagree
	// (NTP slews the wall clock); zero means 50 ms.
	ClockSkew time.Duration
}

// Check is one rule as validation.json records it.
type Check struct {
	Rule   string `json:"rule"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Validation is the verdict on one capture.
type Validation struct {
	Complete           bool    `json:"complete"`
	IncarnationChanged bool    `json:"incarnation_changed"`
	NeedsShorterWindow bool    `json:"needs_shorter_window"`
	Samples            int     `json:"samples"`
	Graphs             int     `json:"graphs"`
	Dropped            int     `json:"dropped_samples"`
	WindowS            float64 `json:"window_s"`
	Incarnation        string  `json:"incarnation"`
	QueuedShare        float64 `json:"queued_share"`
	MaxLanes           int     `json:"max_lanes"`
	Checks             []Check `json:"checks"`
}

// Validate applies the schema and seed 000's rules to a raw capture.
func Validate(raw []byte, declared []int, o Options) Validation {
	v := Validation{Complete: true}
	add := func(rule string, ok bool, format string, args ...any) {
		v.Checks = append(v.Checks, Check{Rule: rule, OK: ok, Detail: fmt.Sprintf(format, args...)})
		if !ok {
			v.Complete = false
		}
	}
	if err := schemas.Validate("trace-capture", raw); err != nil {
		add("schema", false, "%v", err)
		return v
	}
	add("schema", true, "matches schemas/trace-capture.schema.json")
	var c capture
	if err := json.Unmarshal(raw, &c); err != nil {
		add("schema", false, "%v", err)
		return v
	}
	if o.MinSamples <= 0 {
		o.MinSamples = 1
	}
	if o.ClockSkew <= 0 {
		o.ClockSkew = 50 * time.Millisecond
	}
	v.Samples, v.Graphs, v.Dropped = len(c.Samples), len(c.Graphs), c.DroppedSamples
	v.WindowS = float64(c.Window.EndNS-c.Window.StartNS) / 1e9
	v.Incarnation = c.Incarnation.Before

	// Same incarnation before and after.
	if c.Incarnation.Before != c.Incarnation.After {
		v.IncarnationChanged = true
		add("incarnation", false, "the server's incarnation changed during the capture (%s before, %s after); records of different incarnations are never compared", c.Incarnation.Before, c.Incarnation.After)
	} else {
		add("incarnation", true, "%s before and after", c.Incarnation.Before)
	}

	// Zero dropped samples, no overflow, no sequence gap.
	gaps := 0
	for i := 1; i < len(c.Samples); i++ {
		if d := c.Samples[i].Seq - c.Samples[i-1].Seq; d != 1 {
			gaps += max(d-1, 1) // a repeat or reversal counts too
		}
	}
	switch {
	case c.Overflow:
		v.NeedsShorterWindow = true
		add("dropped", false, "the capture buffer overflowed after %d samples and %d more were dropped", c.Capacity, c.DroppedSamples)
	case c.DroppedSamples > 0:
		v.NeedsShorterWindow = true
		add("dropped", false, "%d samples were dropped", c.DroppedSamples)
	case gaps > 0:
		v.NeedsShorterWindow = true
		add("dropped", false, "sample sequence numbers skip %d sample(s) although dropped_samples is 0", gaps)
	default:
		add("dropped", true, "0 dropped, no overflow, no sequence gap")
	}

	// Every declared rank present: in the capture's rank list and in every sample.
	have := map[int]bool{}
	for _, r := range c.Ranks {
		have[r] = true
	}
	var missing []string
	for _, r := range declared {
		if !have[r] {
			missing = append(missing, fmt.Sprint(r))
		}
	}
	if len(missing) > 0 {
		add("ranks", false, "declared rank(s) %s absent from the capture (it has %v)", strings.Join(missing, ", "), c.Ranks)
	} else {
		bad := 0
		first := ""
		for _, s := range c.Samples {
			in := map[int]bool{}
			for _, r := range s.Ranks {
				in[r.Rank] = true
			}
			for _, r := range declared {
				if !in[r] {
					bad++
					if first == "" {
						first = fmt.Sprintf("sample %d lacks rank %d", s.Seq, r)
					}
				}
			}
		}
		if bad > 0 {
			add("ranks", false, "%d rank interval(s) missing from samples (first: %s)", bad, first)
		} else {
			add("ranks", true, "ranks %v in every sample", declared)
		}
	}

	// References resolve: graph indices, rank numbers, lanes within the graph.
	graphs := map[int]int{}
	dupGraph := false
	for _, g := range c.Graphs {
		if _, ok := graphs[g.Index]; ok {
			dupGraph = true
		}
		graphs[g.Index] = g.BatchCapacity
	}
	var refs []string
	queued := 0
	for _, s := range c.Samples {
		capacity, ok := graphs[s.Graph]
		if !ok {
			refs = append(refs, fmt.Sprintf("sample %d names graph %d, which the capture does not define", s.Seq, s.Graph))
		} else if s.ScheduledLanes > capacity {
			refs = append(refs, fmt.Sprintf("sample %d schedules %d lanes on graph %d of batch capacity %d", s.Seq, s.ScheduledLanes, s.Graph, capacity))
		}
		for _, r := range s.Ranks {
			if !have[r.Rank] {
				refs = append(refs, fmt.Sprintf("sample %d has rank %d, which the capture does not list", s.Seq, r.Rank))
			}
			if r.EndNS < r.StartNS {
				refs = append(refs, fmt.Sprintf("sample %d rank %d ends before it starts", s.Seq, r.Rank))
			}
		}
		if !(s.SelectedAtNS <= s.CommittedAtNS && s.CommittedAtNS <= s.CompletionNS) {
			refs = append(refs, fmt.Sprintf("sample %d: selection, commit and completion observation are out of order", s.Seq))
		}
		if s.Queued {
			queued++
		}
		v.MaxLanes = max(v.MaxLanes, s.ScheduledLanes)
	}
	if dupGraph {
		refs = append([]string{"two graphs share an index"}, refs...)
	}
	if len(refs) > 0 {
		add("references", false, "%d invalid reference(s) (first: %s)", len(refs), refs[0])
	} else {
		add("references", true, "%d samples reference %d graphs and %d ranks", len(c.Samples), len(c.Graphs), len(c.Ranks))
	}
	if len(c.Samples) > 0 {
		v.QueuedShare = float64(queued) / float64(len(c.Samples))
	}

	// Clock anchors bound the window and every completion, and agree with each other.
	b, a := c.Clock.Before, c.Clock.After
	monoSpan := time.Duration(a.MonoNS - b.MonoNS)
	utcSpan := a.UTC.Sub(b.UTC)
	var anchorProblems []string
	if !(b.MonoNS <= c.Window.StartNS && c.Window.StartNS <= c.Window.EndNS && c.Window.EndNS <= a.MonoNS) {
		anchorProblems = append(anchorProblems, fmt.Sprintf("anchors [%d, %d] do not bound the window [%d, %d]", b.MonoNS, a.MonoNS, c.Window.StartNS, c.Window.EndNS))
	}
	if diff := utcSpan - monoSpan; diff > o.ClockSkew || diff < -o.ClockSkew {
		anchorProblems = append(anchorProblems, fmt.Sprintf("UTC span %s and monotonic span %s of the anchors differ by more than %s", utcSpan, monoSpan, o.ClockSkew))
	}
	for _, s := range c.Samples {
		if s.CompletionNS < b.MonoNS || s.CompletionNS > a.MonoNS {
			anchorProblems = append(anchorProblems, fmt.Sprintf("sample %d completes at %d, outside the anchors", s.Seq, s.CompletionNS))
			break
		}
	}
	if len(anchorProblems) > 0 {
		add("clock_anchors", false, "%s", strings.Join(anchorProblems, "; "))
	} else {
		add("clock_anchors", true, "before/after anchors bound the %s window; UTC alignment within ±%s", time.Duration(c.Window.EndNS-c.Window.StartNS), (utcSpan - monoSpan).Abs())
	}

	if len(c.Samples) < o.MinSamples {
		add("samples", false, "%d sample(s), at least %d expected: capture under load", len(c.Samples), o.MinSamples)
	} else {
		add("samples", true, "%d samples", len(c.Samples))
	}
	return v
}

// Summary is the one-line message of a failed validation.
func (v Validation) Summary() string {
	var failed []string
	for _, c := range v.Checks {
		if !c.OK {
			failed = append(failed, c.Rule+": "+c.Detail)
		}
	}
	if len(failed) == 0 {
		return "trace capture complete"
	}
	msg := "trace capture incomplete: " + strings.Join(failed, "; ")
	if v.NeedsShorterWindow {
		msg += "; a shorter capture window is needed"
	}
	return msg
}
