package report

import (
	"fmt"
	"strings"

	"github.com/rigor-bench/rigor/engine"
)

// OutageWindow is one outage window of the journal: a held campaign that is
// continued opens a new window with its own budget (engine semantics), so a
// campaign may have several, and each is reported on its own.
type OutageWindow struct {
	Window   int    `json:"window"`
	OpenedBy string `json:"opened_by"`
	OpenedAt string `json:"opened_at"`
	// ClosedBy, ClosedAt and ElapsedS are absent while the window has no
	// outage_end record: the incumbent was not verified restored.
	ClosedBy string   `json:"closed_by,omitempty"`
	ClosedAt string   `json:"closed_at,omitempty"`
	ElapsedS *float64 `json:"elapsed_s,omitempty"`
	// BudgetS and ReserveS are what the window's own records say (0: none declared).
	BudgetS  float64 `json:"budget_s"`
	ReserveS float64 `json:"reserve_s"`
	Overrun  bool    `json:"overrun"`
	Note     string  `json:"note,omitempty"`
}

// outageWindows groups the outage_begin and outage_end records by window, in the
// order the windows opened. A record without a window number (a journal from
// before windows were numbered) belongs to the next window (a begin) or to the
// window still open (an end).
func (ev *evidence) outageWindows() []OutageWindow {
	out := []OutageWindow{}
	at := func(r engine.Record) string { return r.Time.UTC().Format("2006-01-02T15:04:05Z") }
	find := func(n int) int {
		for i := range out {
			if out[i].Window == n {
				return i
			}
		}
		return -1
	}
	open := -1
	for _, r := range ev.outage {
		switch r.Kind {
		case engine.KindOutageBegin:
			n := r.Window
			if n == 0 {
				n = len(out) + 1
				if len(out) > 0 {
					n = max(n, out[len(out)-1].Window+1)
				}
			}
			out = append(out, OutageWindow{Window: n, OpenedBy: r.Step, OpenedAt: at(r), BudgetS: r.BudgetS, ReserveS: r.ReserveS})
			open = len(out) - 1
		case engine.KindOutageEnd:
			i := open
			if r.Window != 0 {
				i = find(r.Window)
			}
			if i < 0 || out[i].ClosedBy != "" {
				ev.problems = append(ev.problems, fmt.Sprintf("journal record %d: outage_end of window %d, which no outage_begin opened", r.Seq, r.Window))
				continue
			}
			w := &out[i]
			e := r.ElapsedS
			w.ClosedBy, w.ClosedAt, w.ElapsedS, w.Overrun, w.Note = r.Step, at(r), &e, r.Overrun, r.Message
			if r.BudgetS > 0 {
				w.BudgetS, w.ReserveS = r.BudgetS, r.ReserveS
			}
			if i == open {
				open = -1
			}
		}
	}
	// A budget the records do not carry is the plan's.
	if o := ev.plan.Campaign.Outage; o != nil {
		for i := range out {
			if out[i].BudgetS == 0 {
				out[i].BudgetS, out[i].ReserveS = o.BudgetS, o.ReserveS
			}
		}
	}
	return out
}

// outageLines says, per window, who opened and closed it, how long it lasted and
// against which budget.
func outageLines(ws []OutageWindow) []string {
	var out []string
	for _, w := range ws {
		name := "Outage"
		if len(ws) > 1 {
			name = fmt.Sprintf("Outage window %d", w.Window)
		}
		if w.ClosedBy == "" {
			out = append(out, fmt.Sprintf("%s opened by %s at %s has no end record: the incumbent was not verified restored.", name, w.OpenedBy, w.OpenedAt))
			continue
		}
		var s string
		if w.BudgetS > 0 {
			within := "within"
			if w.Overrun || *w.ElapsedS > w.BudgetS {
				within = "over"
			}
			s = fmt.Sprintf("%s opened by %s and closed by %s after %s s, %s the %s s budget with %s s reserved for restore.",
				name, w.OpenedBy, w.ClosedBy, fmtF(*w.ElapsedS, 3), within, fmtF(w.BudgetS, 0), fmtF(w.ReserveS, 0))
		} else {
			s = fmt.Sprintf("%s opened by %s and closed by %s after %s s; no budget was declared.", name, w.OpenedBy, w.ClosedBy, fmtF(*w.ElapsedS, 3))
		}
		if note := strings.TrimSuffix(firstLine(w.Note), "."); note != "" {
			s += " It was " + note + "."
		}
		out = append(out, s)
	}
	return out
}
