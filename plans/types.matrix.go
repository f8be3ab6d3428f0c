package plans

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Matrix is a matrix block: arms (in declared order, each bound to a target) times
// concurrencies times repetitions, expanded into block step instances named
// block.NAME["arm/cN/rK"], with an optional priming block "arm/cN/prime" first.
//
// Arms run in declared order: each arm's setup steps (a deploy, say) depend on every
// block of the previous arm, and the arm's blocks depend on its setup steps. This is
// how an ABBA order is written once and run as written.
//
// The corpus protocol is seed 001's: each concurrency cell has its own corpus (the
// block renders it from the workload, the cell's corpus seed and the cell), the
// priming block sends it once and every repetition sends it again. workload and
// corpus_seed take one value or a map keyed by cell ("c4" or "4") when the cells
// differ (the seed's C1 and C4 use seeds 4342 and 4642). An arm with reset_cache =
// true empties its target's prefix cache before the first block of each of its cells,
// so it starts from a state the plan controls instead of the previous arm's.
type Matrix struct {
	Name      string
	Order     int
	DeclRange hcl.Range
	SrcRange  hcl.Range
	Attrs     hcl.Attributes
	Arms      []*Arm
	// Concurrencies are the matrix's cells in declared order, known once expanded.
	Concurrencies []int
	// Repetitions is how many times each cell runs, known once expanded.
	Repetitions int
	// Phase is the phase of the matrix's repetitions (MatrixPhases), known once
	// expanded.
	Phase string
	// Ordering is the order the arms run in, known once expanded.
	Ordering *MatrixOrder
}

func (m *Matrix) armNames() []string {
	out := make([]string, 0, len(m.Arms))
	for _, a := range m.Arms {
		out = append(out, a.Name)
	}
	return out
}

func (m *Matrix) hasArm(name string) bool { return contains(m.armNames(), name) }

// Arm is one arm of a matrix.
type Arm struct {
	Name      string
	Target    hcl.Expression
	Setup     []hcl.Traversal
	DeclRange hcl.Range
	// ResetCache, when set, is the reset_cache attribute: a bool known at plan time.
	ResetCache *hcl.Attribute
}

// MatrixPhases are the phases a matrix's repetitions may have. Only a "measured"
// matrix (the default) may be judged by a decision rule, and only its blocks make a
// change to the analysis post-hoc once they started (engine/prereg.go); a "pilot"
// or "diagnostic" matrix runs and is reported like any other. Priming blocks are
// always "priming".
var MatrixPhases = []string{"measured", "pilot", "diagnostic"}

// ID is how references name the matrix's instances: step.block.NAME.
func (m *Matrix) ID() string { return "step.block." + m.Name }

var matrixSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "workload", Required: true}, {Name: "concurrency", Required: true},
		{Name: "repetitions"}, {Name: "priming"}, {Name: "requests", Required: true},
		{Name: "timeout"}, {Name: "gates"}, {Name: "uses"}, {Name: "on_failure"},
		{Name: "corpus_seed"}, {Name: "expect_cache"}, {Name: AttrAgents}, {Name: metaCondition}, {Name: metaPhase},
		{Name: "order"}, {Name: "order_seed"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "arm", LabelNames: []string{"name"}}},
}

var armSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "target", Required: true}, {Name: "setup"}, {Name: "reset_cache"}},
}

func decodeMatrix(b *hcl.Block, order int) (*Matrix, hcl.Diagnostics) {
	m := &Matrix{Name: b.Labels[0], Order: order, DeclRange: b.DefRange, SrcRange: blockRange(b)}
	content, diags := b.Body.Content(matrixSchema)
	diags = listValid(diags, "matrix", schemaNames(matrixSchema))
	if content == nil {
		return nil, diags
	}
	m.Attrs = content.Attributes
	seen := map[string]hcl.Range{}
	for _, ab := range content.Blocks {
		name := ab.Labels[0]
		if prev, dup := seen[name]; dup {
			diags = append(diags, errorAt(ab.DefRange, "Duplicate arm name", "Arm %q was already declared at %s.", name, prev))
			continue
		}
		seen[name] = ab.DefRange
		ac, ad := ab.Body.Content(armSchema)
		diags = append(diags, listValid(ad, "arm", schemaNames(armSchema))...)
		if ac == nil || ac.Attributes["target"] == nil {
			continue
		}
		arm := &Arm{Name: name, Target: ac.Attributes["target"].Expr, DeclRange: ab.DefRange, ResetCache: ac.Attributes["reset_cache"]}
		if a, ok := ac.Attributes["setup"]; ok {
			trs, td := staticTraversals(a)
			diags = append(diags, td...)
			arm.Setup = trs
		}
		m.Arms = append(m.Arms, arm)
	}
	if len(content.Blocks) == 0 {
		diags = append(diags, errorAt(b.DefRange, "Matrix has no arms", `A matrix needs at least one arm block, e.g. arm "incumbent_before" { target = target.incumbent }.`))
	}
	return m, diags
}

// staticTraversals reads a list of plain references such as [step.deploy.candidate].
func staticTraversals(a *hcl.Attribute) ([]hcl.Traversal, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(a.Expr)
	var out []hcl.Traversal
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() {
			diags = append(diags, errorAt(e.Range(), "Invalid reference", "%s must list references such as step.deploy.candidate, not expressions.", a.Name))
			continue
		}
		out = append(out, tr)
	}
	return out, diags
}

// Cache states a block can expect of its target's prefix cache when it starts (seed
// 001's amendment: the plan declares the protocol, the counters establish the reuse).
const (
	// CachePrimed: the block's corpus was sent before in its arm's cell (a priming
	// block or an earlier repetition), so its prompts can be served from the cache.
	CachePrimed = "primed"
	// CacheCold: nothing the block sends was sent before.
	CacheCold = "cold"
	// CacheShared: nothing was sent before, but the block's requests share prefixes
	// with each other (repeated prefixes), so all but the first can reuse them.
	CacheShared = "shared"
)

// CacheStates lists the cache states, sorted.
var CacheStates = []string{CacheCold, CachePrimed, CacheShared}

// cellKey matches a key of a per-cell map: "c4" or "4".
var cellKey = regexp.MustCompile(`^c?([1-9][0-9]*)$`)

// isCellMap reports whether v is a map or object keyed by cells, as opposed to a
// single value: every key names a concurrency. (A workload is an object too, but its
// keys are attribute names such as "name" and "corpus".)
func isCellMap(v cty.Value) bool {
	ty := v.Type()
	if !ty.IsMapType() && !ty.IsObjectType() {
		return false
	}
	if v.IsNull() || !v.IsKnown() || v.LengthInt() == 0 {
		return false
	}
	for it := v.ElementIterator(); it.Next(); {
		k, _ := it.Element()
		if !cellKey.MatchString(k.AsString()) {
			return false
		}
	}
	return true
}

// cellEntry picks concurrency conc's entry of a per-cell map ("c4", then "4").
func cellEntry(v cty.Value, conc int) (cty.Value, bool) {
	for _, k := range []string{fmt.Sprintf("c%d", conc), fmt.Sprint(conc)} {
		if v.Type().IsObjectType() {
			if v.Type().HasAttribute(k) {
				return v.GetAttr(k), true
			}
			continue
		}
		if v.HasIndex(cty.StringVal(k)).True() {
			return v.Index(cty.StringVal(k)), true
		}
	}
	return cty.NilVal, false
}

// checkCellMap reports the problems of a per-cell map: a key naming a concurrency the
// matrix does not run, two keys for one concurrency, a concurrency without an entry.
func checkCellMap(a *hcl.Attribute, v cty.Value, concs []int) hcl.Diagnostics {
	var diags hcl.Diagnostics
	run := map[int]bool{}
	var names []string
	for _, c := range concs {
		run[c] = true
		names = append(names, fmt.Sprintf("c%d", c))
	}
	seen := map[int]string{}
	var keys []string
	for it := v.ElementIterator(); it.Next(); {
		k, _ := it.Element()
		keys = append(keys, k.AsString())
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, _ := strconv.Atoi(cellKey.FindStringSubmatch(k)[1])
		if prev, dup := seen[n]; dup {
			diags = append(diags, errorAt(a.Expr.Range(), "Duplicate cell", "%s has the keys %q and %q for concurrency %d; keep one.", a.Name, prev, k, n))
		}
		seen[n] = k
		if !run[n] {
			diags = append(diags, errorAt(a.Expr.Range(), "Unknown cell", "%s has an entry %q, but the matrix runs no concurrency %d (cells: %s).",
				a.Name, k, n, strings.Join(names, ", ")))
		}
	}
	for _, c := range concs {
		if _, ok := seen[c]; !ok {
			diags = append(diags, errorAt(a.Expr.Range(), "Missing cell", "%s has no entry for concurrency %d; use the key \"c%d\".", a.Name, c, c))
		}
	}
	return diags
}

// matrixCorpus is what expansion decided about a matrix's corpus protocol.
type matrixCorpus struct {
	expect string          // expect_cache for measured repetitions; "" = derived by the block
	reset  map[string]bool // arm -> reset_cache
}

// decodeCorpus checks, at plan time, the corpus settings of a matrix: workload and
// corpus_seed (one value or one per cell), expect_cache, the arms' reset_cache (whose
// targets must declare a cache_reset call), and that no cold lane is primed.
func decodeCorpus(m *Matrix, ctx *hcl.EvalContext, concs []int, priming bool) (matrixCorpus, hcl.Diagnostics) {
	mc := matrixCorpus{reset: map[string]bool{}}
	var diags hcl.Diagnostics
	known := func(a *hcl.Attribute) (cty.Value, bool) {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return cty.NilVal, false
		}
		v, _ = v.UnmarkDeep()
		if !v.IsWhollyKnown() || v.IsNull() {
			diags = append(diags, errorAt(a.Expr.Range(), "Value must be known at plan time", "%s identifies the corpus; it must be known before anything runs, not wait for a step.", a.Name))
			return cty.NilVal, false
		}
		return v, true
	}
	// Workloads: one, or one per cell; a cold lane (fresh_prefixes) is never primed.
	if a := m.Attrs["workload"]; a != nil {
		if v, d := a.Expr.Value(ctx); !d.HasErrors() {
			v, _ = v.UnmarkDeep()
			perCell := map[int]cty.Value{}
			if isCellMap(v) {
				diags = append(diags, checkCellMap(a, v, concs)...)
				for _, c := range concs {
					if w, ok := cellEntry(v, c); ok {
						perCell[c] = w
					}
				}
			} else {
				for _, c := range concs {
					perCell[c] = v
				}
			}
			for _, c := range concs {
				w, ok := perCell[c]
				if !ok || !w.IsKnown() {
					continue
				}
				if w.IsNull() || !w.Type().IsObjectType() || !w.Type().HasAttribute("name") {
					diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type",
						"workload must be a workload reference such as workload.capacity, or a map of them keyed by cell such as { c1 = workload.short, c4 = workload.long }."))
					break
				}
				if priming && w.Type().HasAttribute("fresh_prefixes") {
					if f := w.GetAttr("fresh_prefixes"); f.IsKnown() && !f.IsNull() && f.Type() == cty.Bool && f.True() {
						rng := m.DeclRange
						if pa := m.Attrs["priming"]; pa != nil {
							rng = pa.Expr.Range()
						}
						diags = append(diags, errorAt(rng, "Priming a cold lane",
							"The workload of cell c%d has fresh_prefixes = true: every repetition sends new prompts, so a priming block would warm prompts no measured block sends. Remove priming, or fresh_prefixes.", c))
						break
					}
				}
			}
		}
	}
	if a := m.Attrs["corpus_seed"]; a != nil {
		if v, ok := known(a); ok {
			var seeds []cty.Value
			if isCellMap(v) {
				diags = append(diags, checkCellMap(a, v, concs)...)
				for it := v.ElementIterator(); it.Next(); {
					_, s := it.Element()
					seeds = append(seeds, s)
				}
			} else {
				seeds = []cty.Value{v}
			}
			for _, s := range seeds {
				if s.Type() != cty.Number {
					diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "corpus_seed must be a whole number, or a map of whole numbers keyed by cell such as { c1 = 4342, c4 = 4642 }."))
					break
				}
				if f, _ := s.AsBigFloat().Float64(); f != math.Trunc(f) || f < 0 || f > 1<<53 {
					diags = append(diags, errorAt(a.Expr.Range(), "Invalid value", "corpus_seed %v is not a whole number of at least 0.", f))
					break
				}
			}
		}
	}
	if a := m.Attrs["expect_cache"]; a != nil {
		if v, ok := known(a); ok {
			if v.Type() != cty.String || !contains(CacheStates, v.AsString()) {
				given := ""
				if v.Type() == cty.String {
					given = v.AsString()
				}
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid cache state", "expect_cache must be one of %s.%s", strings.Join(CacheStates, ", "), didYouMean(given, CacheStates)))
			} else {
				mc.expect = v.AsString()
			}
		}
	}
	for _, arm := range m.Arms {
		a := arm.ResetCache
		if a == nil {
			continue
		}
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		v, _ = v.Unmark()
		if v.Type() != cty.Bool || v.IsNull() || !v.IsKnown() {
			diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "reset_cache must be true or false, known at plan time."))
			continue
		}
		if !v.True() {
			continue
		}
		mc.reset[arm.Name] = true
		if t, d := arm.Target.Value(ctx); !d.HasErrors() {
			t, _ = t.UnmarkDeep()
			if t.IsKnown() && !t.IsNull() && t.Type().IsObjectType() &&
				(!t.Type().HasAttribute("cache_reset") || t.GetAttr("cache_reset").IsNull()) {
				diags = append(diags, errorAt(a.Expr.Range(), "Target cannot reset its cache",
					"Arm %q resets the prefix cache, but its target declares no cache_reset call; add one to the target, e.g. cache_reset = \"/reset_prefix_cache\" (vLLM) or \"/flush_cache\" (SGLang).", arm.Name))
			}
		}
	}
	return mc, diags
}
