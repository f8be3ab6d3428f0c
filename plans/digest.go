package plans

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// blockRange is the whole source of a block, header to closing brace.
func blockRange(b *hcl.Block) hcl.Range {
	if body, ok := b.Body.(*hclsyntax.Body); ok {
		return hcl.RangeBetween(b.DefRange, body.SrcRange)
	}
	return b.DefRange
}

// Source parts of an instance (its "source" in the canonical plan): one digest per
// expression whose meaning the plan-time configuration cannot show.
//
// A value that is unknown at plan time hides its expression from the canonical
// configuration: `requests = min(48, step.freeze.counts.values.c4)` shows only
// "(known after freeze.counts)". The source parts put such expressions back under
// the plan hash, so editing one is a change. They hold meaning, not text:
//   - each expression is printed canonically (canonicalExpr), so a comment, a
//     blank line or a re-indented list inside a step that ran changes nothing;
//   - an expression whose value is known at plan time is left out, because the
//     configuration already shows its value for this very instance (a matrix's
//     concurrency list, a literal request map): adding a cell or a repetition
//     leaves the other instances as they were;
//   - a matrix instance reads the matrix's own attributes and its own arm, never
//     its sibling arms, so adding an arm touches no existing instance;
//   - what an unknown expression reads comes with it: the unknown attributes of the
//     hosts, targets, workloads and gates it names (and what those read), the
//     values of its variables (sensitive ones redacted), and each.key/each.value.
//
// Keys name the expression: "requests", "arm.setup", "target.flare.image",
// "var.scale", "each"; values are sha256 of the canonical text, so a secret written
// into an expression never reaches the plan.
type sourceDigester struct {
	p      *Plan
	ctx    *hcl.EvalContext
	files  map[string]*hcl.File
	blocks map[hcl.Range]*hclsyntax.Block // top-level blocks by header range
	data   map[string]map[string]string   // memo: data block id -> its parts
	matrix map[string]map[string]string   // memo: matrix id / arm -> parts
	all    string                         // digest of every file, for a reference kind not known here
	// configKeys, per step type, maps an argument to its configuration attribute:
	// whether an argument is known is read from the configuration evaluated in the
	// same context, instead of evaluating the argument again.
	configKeys map[string]map[string]string
	mu         sync.Mutex // guards the memos: instances are digested on every core
}

// newSourceDigester prepares the source digests of p's instances in ctx, the
// plan-time context.
func newSourceDigester(p *Plan, ctx *hcl.EvalContext) *sourceDigester {
	d := &sourceDigester{p: p, ctx: ctx, files: p.parser.Files(), blocks: map[hcl.Range]*hclsyntax.Block{},
		data: map[string]map[string]string{}, matrix: map[string]map[string]string{}, configKeys: map[string]map[string]string{}}
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if body, ok := d.files[n].Body.(*hclsyntax.Body); ok {
			for _, b := range body.Blocks {
				d.blocks[b.DefRange()] = b
			}
		}
	}
	for _, s := range p.Steps {
		if _, done := d.configKeys[s.Type]; !done {
			d.configKeys[s.Type] = configKeys(s.StepType.Spec())
		}
	}
	return d
}

// configKeys maps each argument a spec reads to the configuration attribute that
// holds its value, where that value is known exactly when the argument is:
// converting to a type that holds an object can drop an unknown attribute, so
// such arguments are left out (the digester evaluates them).
func configKeys(spec hcldec.ObjectSpec) map[string]string {
	keys := map[string]string{}
	for key, sp := range spec {
		if a, ok := attrSpecOf(sp); ok && !holdsObject(a.Type) {
			keys[a.Name] = key
		}
	}
	// Meta-arguments are not in the body a step type decodes: a spec argument of
	// the same name holds something else.
	for _, meta := range metaSchema.Attributes {
		delete(keys, meta.Name)
	}
	return keys
}

// attrSpecOf is the attribute a spec reads, looking through the checks wrapped
// around it; false for any other kind of spec.
func attrSpecOf(sp hcldec.Spec) (*hcldec.AttrSpec, bool) {
	for {
		v, ok := sp.(*hcldec.ValidateSpec)
		if !ok {
			break
		}
		sp = v.Wrapped
	}
	a, ok := sp.(*hcldec.AttrSpec)
	return a, ok
}

// holdsObject says whether t is or contains an object type.
func holdsObject(t cty.Type) bool {
	switch {
	case t.IsObjectType():
		return true
	case t.IsListType() || t.IsSetType() || t.IsMapType():
		return holdsObject(t.ElementType())
	case t.IsTupleType():
		return slices.ContainsFunc(t.TupleElementTypes(), holdsObject)
	}
	return false
}

// memo returns what m holds under key, computing and storing it the first time. It
// computes outside the lock, since computing may consult the memos again; two
// workers may both compute a part, and the parts are the same.
func (d *sourceDigester) memo(m map[string]map[string]string, key string, compute func() map[string]string) map[string]string {
	d.mu.Lock()
	parts, ok := m[key]
	d.mu.Unlock()
	if ok {
		return parts
	}
	parts = compute()
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev, ok := m[key]; ok {
		return prev
	}
	m[key] = parts
	return parts
}

func digestText(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// instance is inst's source parts. config is its configuration evaluated in d.ctx,
// or cty.NilVal when not at hand.
func (d *sourceDigester) instance(inst *Instance, config cty.Value) map[string]string {
	switch ent := d.p.ev.entities[inst.entity].(type) {
	case *StepBlock:
		parts := map[string]string{}
		sb := d.blocks[ent.DeclRange]
		if sb == nil {
			parts["source"] = digestText(string(d.text(ent.SrcRange)))
			return parts
		}
		ctx := d.ctx
		if inst.Keyed {
			ctx = withEach(ctx, inst.Key, inst.each)
		}
		d.body(parts, "", sb.Body, ctx, inst.each, nil, d.knownIn(config, ent.Type))
		return parts
	case *Matrix:
		return d.memo(d.matrix, ent.ID()+"\x00"+inst.Arm, func() map[string]string {
			parts := map[string]string{}
			sb := d.blocks[ent.DeclRange]
			if sb == nil {
				parts["source"] = digestText(string(d.text(ent.SrcRange)))
				return parts
			}
			// Every arm is skipped here but this instance's own, which is read
			// under the prefix "arm.".
			d.body(parts, "", sb.Body, d.ctx, cty.NilVal, func(b *hclsyntax.Block) bool { return b.Type == "arm" }, nil)
			for _, b := range sb.Body.Blocks {
				if b.Type == "arm" && len(b.Labels) == 1 && b.Labels[0] == inst.Arm {
					d.body(parts, "arm.", b.Body, d.ctx, cty.NilVal, nil, nil)
				}
			}
			return parts
		})
	}
	return map[string]string{}
}

// structural attributes are static lists of references whose whole meaning is the
// instance's depends_on, which the canonical plan shows as addresses.
var structural = map[string]bool{metaDependsOn: true, "arm.setup": true}

// body adds the parts of a body's attributes and nested blocks under prefix.
// known, where not nil, says whether an attribute of body is known in ctx without
// evaluating it again; false for ok means it cannot tell.
func (d *sourceDigester) body(parts map[string]string, prefix string, body *hclsyntax.Body, ctx *hcl.EvalContext, each cty.Value, skip func(*hclsyntax.Block) bool, known func(name string) (known, ok bool)) {
	for _, name := range sortedKeys(body.Attributes) {
		a := body.Attributes[name]
		if structural[prefix+name] {
			continue
		}
		k, ok := false, false
		if known != nil {
			k, ok = known(name)
		}
		if !ok {
			v, diags := a.Expr.Value(ctx)
			k = !diags.HasErrors() && wholeKnown(v)
		}
		if k {
			continue
		}
		parts[prefix+name] = digestText(canonicalExpr(a.Expr, d.files))
		d.reach(parts, a.Expr, each)
	}
	for _, b := range body.Blocks {
		if skip != nil && skip(b) {
			continue
		}
		p := prefix + b.Type + "."
		for _, l := range b.Labels {
			p += l + "."
		}
		d.body(parts, p, b.Body, ctx, each, nil, nil)
	}
}

// reach adds what an unknown expression reads.
func (d *sourceDigester) reach(parts map[string]string, x hcl.Expression, each cty.Value) {
	for _, tr := range x.Variables() {
		root := tr.RootName()
		name := ""
		if len(tr) > 1 {
			if a, ok := tr[1].(hcl.TraverseAttr); ok {
				name = a.Name
			}
		}
		switch root {
		case "step":
			// A step's outputs are unknown here; the unknown's text names the
			// step, and the step's own changes are its instance's.
		case "each":
			if each != cty.NilVal {
				parts["each"] = digestText(canonicalValueText(each))
			}
		case "var":
			if v, ok := d.p.ev.entities["var."+name].(*Variable); ok {
				parts["var."+name] = digestText(canonicalValueText(v.Value))
			}
		case blockLocal:
			if l, ok := d.p.ev.entities["local."+name].(*Local); ok {
				for k, v := range d.localParts(l, each) {
					parts[k] = v
				}
			}
		case blockHost, blockTarget, blockWorkload, blockGate:
			if db, ok := d.p.ev.entities[root+"."+name].(*DataBlock); ok {
				for k, v := range d.dataParts(db) {
					parts[k] = v
				}
			}
		default:
			// A kind of reference this digest does not know: every file's meaning
			// stands in for it, so no edit can go unseen.
			parts["files"] = d.allFiles()
		}
	}
}

// dataParts are the unknown attributes of a host, target, workload or gate and what
// they read, memoised: data blocks cannot use each, so they are the same for all.
func (d *sourceDigester) dataParts(db *DataBlock) map[string]string {
	// Data blocks refer to each other without cycles (the evaluator refused them).
	return d.memo(d.data, db.ID(), func() map[string]string {
		parts := map[string]string{}
		for _, name := range sortedAttrNames(db.Attrs) {
			a := db.Attrs[name]
			if v, diags := a.Expr.Value(d.ctx); !diags.HasErrors() && wholeKnown(v) {
				continue
			}
			parts[db.ID()+"."+name] = digestText(canonicalExpr(a.Expr, d.files))
			d.reach(parts, a.Expr, cty.NilVal)
		}
		return parts
	})
}

// localParts are what a local reads when its value is not known at plan time: its
// canonical expression and what that reads. A local cannot use each.
func (d *sourceDigester) localParts(l *Local, each cty.Value) map[string]string {
	parts := map[string]string{}
	if v, diags := l.Expr.Value(d.ctx); !diags.HasErrors() && wholeKnown(v) {
		parts[l.ID()] = digestText(canonicalValueText(v))
		return parts
	}
	parts[l.ID()] = digestText(canonicalExpr(l.Expr, d.files))
	d.reach(parts, l.Expr, each)
	return parts
}

func (d *sourceDigester) allFiles() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.all != "" {
		return d.all
	}
	names := make([]string, 0, len(d.files))
	for n := range d.files {
		names = append(names, n)
	}
	sort.Strings(names)
	text := ""
	for _, n := range names {
		if body, ok := d.files[n].Body.(*hclsyntax.Body); ok {
			text += canonicalBody(body, d.files)
		}
	}
	d.all = digestText(text)
	return d.all
}

func (d *sourceDigester) text(r hcl.Range) []byte {
	f := d.files[r.Filename]
	if f == nil || r.End.Byte > len(f.Bytes) || r.Start.Byte > r.End.Byte {
		return nil
	}
	return f.Bytes[r.Start.Byte:r.End.Byte]
}

// wholeKnown is IsWholeKnown without a copy: IsWhollyKnown looks through marks
// at every level itself, where UnmarkDeep rebuilt the value first.
func wholeKnown(v cty.Value) bool {
	return v.IsWhollyKnown()
}

func canonicalValueText(v cty.Value) string {
	b, err := CanonicalJSON(CanonicalValue(v))
	if err != nil {
		return v.GoString()
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// knownIn says whether an argument of a step of type typ is known, from config, its
// configuration evaluated without errors in the digester's context (configKeys
// lists the arguments it can tell).
func (d *sourceDigester) knownIn(config cty.Value, typ string) func(string) (bool, bool) {
	keys := d.configKeys[typ]
	if config == cty.NilVal || keys == nil || !config.Type().IsObjectType() {
		return nil
	}
	return func(name string) (bool, bool) {
		key, ok := keys[name]
		if !ok || !config.Type().HasAttribute(key) {
			return false, false
		}
		return wholeKnown(config.GetAttr(key)), true
	}
}
