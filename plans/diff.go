package plans

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
)

// AttrChange is one changed attribute, by dotted path, with old and new values as
// canonical JSON text ("" when absent).
type AttrChange struct {
	Path string `json:"path"`
	Old  string `json:"old,omitempty"`
	New  string `json:"new,omitempty"`
}

// Change is an added, removed or changed step instance.
type Change struct {
	Addr  string       `json:"addr"`
	Kind  string       `json:"kind"` // added, removed, changed
	Attrs []AttrChange `json:"attrs,omitempty"`
}

// Diff is the semantic difference between two canonical plans.
type Diff struct {
	Campaign []AttrChange `json:"campaign,omitempty"`
	Changes  []Change     `json:"changes,omitempty"`
}

// Empty reports whether the plans are the same.
func (d Diff) Empty() bool { return len(d.Campaign) == 0 && len(d.Changes) == 0 }

// Summary is a one-line account such as "2 changed, 1 added".
func (d Diff) Summary() string {
	n := map[string]int{}
	for _, c := range d.Changes {
		n[c.Kind]++
	}
	var parts []string
	for _, k := range []string{"added", "removed", "changed"} {
		if n[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	if len(d.Campaign) > 0 {
		parts = append(parts, fmt.Sprintf("%d campaign setting(s) changed", len(d.Campaign)))
	}
	if len(parts) == 0 {
		return "no changes"
	}
	return strings.Join(parts, ", ")
}

// DiffPlans compares two canonical plan JSON documents.
func DiffPlans(oldJSON, newJSON []byte) (Diff, error) {
	var oldP, newP map[string]any
	if err := json.Unmarshal(oldJSON, &oldP); err != nil {
		return Diff{}, fmt.Errorf("frozen plan: %w", err)
	}
	if err := json.Unmarshal(newJSON, &newP); err != nil {
		return Diff{}, fmt.Errorf("new plan: %w", err)
	}
	var d Diff
	d.Campaign = diffValues("", oldP["campaign"], newP["campaign"])
	oldI, oldOrder := indexInstances(oldP)
	newI, newOrder := indexInstances(newP)
	for _, addr := range oldOrder {
		ni, ok := newI[addr]
		if !ok {
			d.Changes = append(d.Changes, Change{Addr: addr, Kind: "removed"})
			continue
		}
		if attrs := diffValues("", stripAddr(oldI[addr]), stripAddr(ni)); len(attrs) > 0 {
			d.Changes = append(d.Changes, Change{Addr: addr, Kind: "changed", Attrs: attrs})
		}
	}
	for _, addr := range newOrder {
		if _, ok := oldI[addr]; !ok {
			d.Changes = append(d.Changes, Change{Addr: addr, Kind: "added", Attrs: diffValues("", nil, stripAddr(newI[addr]))})
		}
	}
	return d, nil
}

func stripAddr(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if k != "addr" {
			out[k] = v
		}
	}
	return out
}

func indexInstances(p map[string]any) (map[string]map[string]any, []string) {
	out := map[string]map[string]any{}
	var order []string
	list, _ := p["instances"].([]any)
	for _, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			continue
		}
		addr, _ := m["addr"].(string)
		out[addr] = m
		order = append(order, addr)
	}
	return out, order
}

// diffValues walks two JSON values and reports leaf differences by dotted path.
func diffValues(path string, a, b any) []AttrChange {
	am, aIsMap := a.(map[string]any)
	bm, bIsMap := b.(map[string]any)
	if aIsMap && bIsMap || (a == nil && bIsMap) || (aIsMap && b == nil) {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []AttrChange
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			out = append(out, diffValues(p, am[k], bm[k])...)
		}
		return out
	}
	at, bt := jsonText(a), jsonText(b)
	if at == bt {
		return nil
	}
	return []AttrChange{{Path: path, Old: at, New: bt}}
}

func jsonText(v any) string {
	if v == nil {
		return ""
	}
	b, _ := CanonicalJSON(v)
	return strings.TrimSpace(string(b))
}

// Render prints the diff for a person: one line per instance, then old -> new per
// attribute.
func (d Diff) Render(w io.Writer) {
	if d.Empty() {
		fmt.Fprintln(w, "No changes: the file matches the frozen plan with its amendments.")
		return
	}
	show := func(s string) string {
		if s == "" {
			return "(absent)"
		}
		return s
	}
	for _, a := range d.Campaign {
		fmt.Fprintf(w, "~ campaign.%s: %s -> %s\n", a.Path, show(a.Old), show(a.New))
	}
	sym := map[string]string{"added": "+", "removed": "-", "changed": "~"}
	for _, c := range d.Changes {
		fmt.Fprintf(w, "%s %s (%s)\n", sym[c.Kind], c.Addr, c.Kind)
		if c.Kind == "changed" {
			for _, a := range c.Attrs {
				if expr, ok := strings.CutPrefix(a.Path, "source."); ok {
					fmt.Fprintf(w, "    %s: %s\n", expr, sourceChange(a))
					continue
				}
				fmt.Fprintf(w, "    %s: %s -> %s\n", a.Path, show(a.Old), show(a.New))
			}
		}
	}
	fmt.Fprintf(w, "Summary: %s.\n", d.Summary())
}

// sourceChange words a change of an instance's source parts: expressions whose
// value waits for a step, compared by meaning (see sourceDigester).
func sourceChange(a AttrChange) string {
	switch {
	case a.Old == "":
		return "expression now waits for a step's outputs (its meaning is compared from now on)"
	case a.New == "":
		return "expression no longer waits for a step's outputs (its value shows in the configuration)"
	}
	return "expression changed in meaning (its value is known only after the steps it reads have run)"
}
