package plans

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Orders a matrix may run its arms in.
const (
	// OrderDeclared: every block of an arm, then the next arm, in declared order
	// (ABBA as written). The default.
	OrderDeclared = "declared"
	// OrderAlternate: repetition by repetition; odd repetitions run the arms in
	// declared order, even ones with each pair of neighbours swapped (ABBA, then
	// BAAB; AB, then BA).
	OrderAlternate = "alternate"
	// OrderRandomized: repetition by repetition, each in an order drawn from the
	// matrix's order_seed (recorded in the plan, so the run order is reproducible).
	OrderRandomized = "randomized"
)

// Orders lists the orders, the default first.
var Orders = []string{OrderDeclared, OrderAlternate, OrderRandomized}

// Segment is one run of an arm's blocks in a repetition-by-repetition order: the
// arm's blocks of one repetition (with its priming blocks, the first time).
type Segment struct {
	Repetition int
	Arm        string
	Target     string
	// Deploys are the setup steps run again before this segment because the
	// previous segment ran another target (a swap); their addresses.
	Deploys []string

	arm    *Arm
	blocks []*Instance
}

// MatrixOrder is how a matrix orders its arms, as plan show states it.
type MatrixOrder struct {
	Order string
	Seed  int64 // for OrderRandomized: declared, or derived from the matrix name
	// SeedDerived says the seed was not declared.
	SeedDerived bool
	// Sequences are the arm names of each repetition, in run order (one sequence
	// for the declared order: the arms run once each).
	Sequences [][]string
	// Swaps counts the changes of target between consecutive arm runs.
	Swaps int
	// Deploys are the setup steps run again for swaps: none in the declared order.
	Deploys []string
	// Segments, for a repetition-by-repetition order.
	Segments []*Segment
}

// defaultOrderSeed derives a matrix's seed from its name, so an undeclared seed is
// still fixed by the plan (and recorded in it).
func defaultOrderSeed(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte("rigor order " + name))
	return int64(h.Sum64() & (1<<53 - 1))
}

// splitmix64 is the generator of randomized orders: fully specified here, so a
// seed gives the same order with every Go release.
type splitmix64 uint64

func (s *splitmix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// armSequence is the order of the arms (indices into the declared list) in
// repetition rep (1-based).
func armSequence(order string, seed int64, n, rep int) []int {
	seq := make([]int, n)
	for i := range seq {
		seq[i] = i
	}
	switch order {
	case OrderAlternate:
		if rep%2 == 0 {
			for i := 0; i+1 < n; i += 2 {
				seq[i], seq[i+1] = seq[i+1], seq[i]
			}
		}
	case OrderRandomized:
		g := splitmix64(uint64(seed)*0x100000001b3 + uint64(rep))
		for i := n - 1; i > 0; i-- {
			j := int(g.next() % uint64(i+1))
			seq[i], seq[j] = seq[j], seq[i]
		}
	}
	return seq
}

// decodeOrder reads a matrix's order and order_seed.
func decodeOrder(m *Matrix, ctx *hcl.EvalContext) (MatrixOrder, hcl.Diagnostics) {
	order, diags := matrixEnum(m, "order", "Invalid order", Orders, OrderDeclared, ctx)
	mo := MatrixOrder{Order: order}
	if a, ok := m.Attrs["order_seed"]; ok {
		if mo.Order != OrderRandomized {
			return mo, append(diags, errorAt(a.Expr.Range(), "Seed without a randomized order",
				"order_seed draws a randomized order; this matrix's order is %q. Set order = \"randomized\", or remove order_seed.", mo.Order))
		}
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v, _ = v.UnmarkDeep()
			f := math.NaN()
			if v.Type() == cty.Number && v.IsKnown() && !v.IsNull() {
				f, _ = v.AsBigFloat().Float64()
			}
			if f != math.Trunc(f) || f < 0 || f > 1<<53 {
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid order_seed", "order_seed must be a whole number of at least 0, known at plan time."))
			} else {
				mo.Seed = int64(f)
			}
		}
	} else if mo.Order == OrderRandomized {
		mo.Seed, mo.SeedDerived = defaultOrderSeed(m.Name), true
	}
	return mo, diags
}

// armTargetName is the name of the target an arm runs, "" when not known.
func armTargetName(arm *Arm, ctx *hcl.EvalContext) string {
	v, d := arm.Target.Value(ctx)
	if d.HasErrors() {
		return ""
	}
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() || v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute("name") {
		return ""
	}
	n := v.GetAttr("name")
	if !n.IsKnown() || n.IsNull() || n.Type() != cty.String {
		return ""
	}
	return n.AsString()
}

// swapSuffix names the setup steps a repetition-by-repetition order runs again:
// deploy.candidate runs again as deploy.candidate_swap["primary/r2/candidate"].
const swapSuffix = "_swap"

// wireOrder adds what a repetition-by-repetition order needs once every instance
// exists: the setup steps run again before a segment that follows another target
// (a swap), and the chain that runs the segments in order whatever their outcome:
// a segment's setup (or, without one, its blocks) starts after every block of the
// previous segment. It returns the new instances, each to be placed just before the
// first block of its segment.
func (p *Plan) wireOrder(byEntity map[string][]*Instance, ctx0 *hcl.EvalContext) (map[string][]*Instance, hcl.Diagnostics) {
	e := p.ev
	var diags hcl.Diagnostics
	before := map[string][]*Instance{}
	for _, m := range p.Matrices {
		mo := m.Ordering
		if mo == nil || mo.Order == OrderDeclared {
			continue
		}
		setupOf := func(arm *Arm) []*Instance {
			refs, d := e.traversalRefs(arm.Setup, false)
			diags = append(diags, d...)
			var out []*Instance
			for _, r := range refs {
				for _, x := range byEntity[r.Entity] {
					if r.Key == nil || x.Key == *r.Key {
						out = append(out, x)
					}
				}
			}
			return out
		}
		// The setup that puts a target in place: the first arm on it that has one.
		byTarget := map[string][]*Instance{}
		for _, a := range m.Arms {
			t := armTargetName(a, ctx0)
			if _, done := byTarget[t]; !done && len(a.Setup) > 0 {
				byTarget[t] = setupOf(a)
			}
		}
		started := map[string]bool{}
		var prev *Segment
		for _, s := range mo.Segments {
			var setup []*Instance
			switch {
			case !started[s.Arm] && len(s.arm.Setup) > 0:
				setup = setupOf(s.arm)
			case prev != nil && prev.Target != s.Target:
				own := byTarget[s.Target]
				if len(s.arm.Setup) > 0 {
					own = setupOf(s.arm)
				}
				for _, x := range own {
					c := *x
					c.Name = x.Name + swapSuffix
					c.Key = fmt.Sprintf("%s/r%d/%s", m.Name, s.Repetition, s.Arm)
					c.Keyed = true
					c.Addr = InstanceAddr(c.Type, c.Name, c.Key, true)
					c.Meta.Outage, c.Meta.Always = "", false
					// It waits for what the original waits for (the references of
					// the step it repeats), and for the previous segment below.
					c.DependsOn, c.After = append([]string(nil), x.DependsOn...), nil
					if _, taken := e.entities["step."+c.Type+"."+c.Name]; taken {
						diags = append(diags, errorAt(m.DeclRange, "Swap step name taken",
							"The order %q runs %s again as %s, but a step of that name is declared.", mo.Order, x.Addr, c.Addr))
						continue
					}
					setup = append(setup, &c)
					before[s.blocks[0].Addr] = append(before[s.blocks[0].Addr], &c)
					s.Deploys = append(s.Deploys, c.Addr)
					mo.Deploys = append(mo.Deploys, c.Addr)
				}
			}
			started[s.Arm] = true
			var prevBlocks []string
			if prev != nil {
				for _, b := range prev.blocks {
					prevBlocks = append(prevBlocks, b.Addr)
				}
			}
			for _, b := range s.blocks {
				for _, x := range setup {
					b.DependsOn = append(b.DependsOn, x.Addr)
				}
				if len(setup) == 0 {
					b.After = append(b.After, prevBlocks...)
				}
			}
			for _, x := range setup {
				x.After = append(x.After, prevBlocks...)
			}
			prev = s
		}
	}
	return before, diags
}

// Orderings are the order of every matrix, for plan show.
func (p *Plan) Orderings() map[string]*MatrixOrder {
	out := map[string]*MatrixOrder{}
	for _, m := range p.Matrices {
		if m.Ordering != nil {
			out[m.Name] = m.Ordering
		}
	}
	return out
}

// OrderCost is the outage time a matrix's swaps add at their bounds.
func (p *Plan) OrderCost(mo *MatrixOrder) time.Duration {
	var d time.Duration
	for _, a := range mo.Deploys {
		if inst, ok := p.byAddr[a]; ok {
			d += p.Bound(inst)
		}
	}
	return d
}

// placeOrder puts the setup steps an order runs again into the plan, each just
// before the first block of its segment, renumbers the declaration index, and
// tidies the dependency lists wireOrder extended.
func (p *Plan) placeOrder(before map[string][]*Instance) {
	var all []*Instance
	for _, inst := range p.Instances {
		all = append(all, before[inst.Addr]...)
		all = append(all, inst)
	}
	for i, inst := range all {
		inst.Index = i
		p.byAddr[inst.Addr] = inst
		inst.DependsOn = dedupeSorted(inst.DependsOn)
		// Both lists are sorted: the order-only predecessors that are not already
		// dependencies are found by walking them side by side.
		var after []string
		deps := inst.DependsOn
		for _, a := range dedupeSorted(inst.After) {
			for len(deps) > 0 && deps[0] < a {
				deps = deps[1:]
			}
			if len(deps) == 0 || deps[0] != a {
				after = append(after, a)
			}
		}
		inst.After = after
	}
	p.Instances = all
}

func dedupeSorted(s []string) []string {
	if len(s) == 0 {
		return s
	}
	sort.Strings(s)
	out := s[:1]
	for _, x := range s[1:] {
		if x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	return out
}

// matrixEnum reads a matrix attribute that must be, at plan time, one of allowed:
// def when absent, and a diagnostic at the value with "did you mean" otherwise.
func matrixEnum(m *Matrix, name, summary string, allowed []string, def string, ctx *hcl.EvalContext) (string, hcl.Diagnostics) {
	a, ok := m.Attrs[name]
	if !ok {
		return def, nil
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return def, diags
	}
	v, _ = v.UnmarkDeep()
	given := ""
	if v.Type() == cty.String && v.IsKnown() && !v.IsNull() {
		given = v.AsString()
	}
	if !contains(allowed, given) {
		return def, append(diags, errorAt(a.Expr.Range(), summary,
			"A matrix's %s must be known at plan time and one of %s.%s", name, strings.Join(allowed, ", "), didYouMean(given, allowed)))
	}
	return given, diags
}
