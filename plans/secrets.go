package plans

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/rigor-bench/rigor/plans/redact"
	"github.com/zclconf/go-cty/cty"
)

// MinRedacted is the shortest secret redacted from diagnostics and added to the
// CLI's log redactor from a step's configuration: shorter strings (a sensitive
// map's key "a") occur in every sentence, and replacing them would make the text
// unreadable while protecting nothing.
const MinRedacted = 4

// redactDiagnostics replaces the secrets, in every form redact.Forms names, in the
// summaries and details of diags: a diagnostic about a value quotes it ("phase
// \"...\" is not one of ...", a function's "cannot convert \"...\"").
func redactDiagnostics(diags hcl.Diagnostics, secrets []string) {
	var long []string
	for _, s := range secrets {
		if len(s) >= MinRedacted {
			long = append(long, s)
		}
	}
	if len(long) == 0 {
		return
	}
	r := redact.New(long...)
	for _, d := range diags {
		d.Summary, d.Detail = r.String(d.Summary), r.String(d.Detail)
	}
}

// SensitiveStrings returns, sorted and without duplicates, every non-empty string
// inside v that carries the Sensitive mark or sits inside a value that does (the
// keys of a sensitive map included): the text a step or the CLI must never let
// through to a log or an artefact. Numbers and bools are left out: redacting every
// "1" from a child's output would destroy it and protect nothing.
func SensitiveStrings(v cty.Value) []string {
	seen := map[string]bool{}
	var walk func(v cty.Value, sensitive bool)
	walk = func(v cty.Value, sensitive bool) {
		if v == cty.NilVal {
			return
		}
		u, marks := v.Unmark()
		if _, ok := marks[Sensitive]; ok {
			sensitive = true
		}
		if !u.IsKnown() || u.IsNull() {
			return
		}
		ty := u.Type()
		switch {
		case ty == cty.String:
			if s := u.AsString(); sensitive && s != "" {
				seen[s] = true
			}
		case ty.IsCollectionType() || ty.IsObjectType() || ty.IsTupleType():
			for it := u.ElementIterator(); it.Next(); {
				k, e := it.Element()
				if ty.IsMapType() {
					walk(k, sensitive)
				}
				walk(e, sensitive)
			}
		}
	}
	walk(v, false)
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Secrets are the strings of every sensitive variable's value, for redacting logs.
func (p *Plan) Secrets() []string {
	var all []string
	for _, v := range p.Variables {
		if v.Sensitive {
			all = append(all, SensitiveStrings(v.Value)...)
		}
	}
	sort.Strings(all)
	return compactStrings(all)
}

func compactStrings(s []string) []string {
	out := s[:0]
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// PublicArguments is implemented by step types some of whose arguments others can
// read: a command line is visible to every user of the host (ps, /proc) and lands in
// capture records; a build argument or label is kept in the image. A sensitive
// value in one of them is refused when the campaign is loaded.
type PublicArguments interface {
	// PublicArguments maps each such argument to why it is public and what to do
	// instead, as a sentence for the diagnostic.
	PublicArguments() map[string]string
}

// commandAdvice is what a command argument's diagnostic tells the user to do.
const commandAdvice = "Pass secrets to the command through the step's env argument instead, e.g. env = { API_KEY = var.api_key }, and read $API_KEY in the command."

// publicDataArguments are the data block arguments others can read, by block type.
var publicDataArguments = map[string]map[string]string{
	blockTarget: {
		"command":   "The container's command is kept in the restore manifest, which is evidence; the target's env is kept there with its values redacted, so pass secrets through env instead.",
		"preflight": "Preflight commands are command lines, visible to every user of the host. A preflight reads the target's api_key from $RIGOR_API_KEY (and RIGOR_ENDPOINT, RIGOR_MODEL, RIGOR_TARGET) instead.",
		"labels":    "Container labels are readable by anyone who can list containers (docker inspect).",
	},
}

// checkSensitive refuses sensitive values in public arguments, at the range of the
// reference that brings the sensitive value in.
func (p *Plan) checkSensitive(types StepTypes) hcl.Diagnostics {
	if !p.hasSensitiveVariables() {
		return nil
	}
	var diags hcl.Diagnostics
	reported := map[hcl.Range]bool{}
	report := func(where, name string, expr hclsyntax.Expression, why string) {
		rng, from := p.ev.sensitiveSource(expr)
		if reported[rng] {
			return
		}
		reported[rng] = true
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Sensitive value in a public argument",
			Detail:   fmt.Sprintf("%s of %s is built from %s, which is sensitive. %s", name, where, from, why),
			Subject:  rng.Ptr(),
		})
	}
	// The public arguments of each step that hold a secret in some instance.
	secretArgs := map[string]map[string]bool{}
	for _, inst := range p.Instances {
		for _, name := range inst.publicSecrets {
			if secretArgs[inst.entity] == nil {
				secretArgs[inst.entity] = map[string]bool{}
			}
			secretArgs[inst.entity][name] = true
		}
	}
	for _, s := range p.Steps {
		pa, ok := types[s.Type].(PublicArguments)
		body, isSyntax := s.Body.(*hclsyntax.Body)
		if !ok || !isSyntax {
			continue
		}
		public := pa.PublicArguments()
		var names []string // the public arguments this step sets, in order
		for _, name := range sortedKeys(public) {
			if body.Attributes[name] != nil {
				names = append(names, name)
			}
		}
		found := secretArgs[s.ID()]
		for _, name := range names {
			if found[name] {
				report(fmt.Sprintf("step %s.%s", s.Type, s.Name), name, body.Attributes[name].Expr, public[name])
			}
		}
	}
	for _, d := range p.Data {
		public := publicDataArguments[d.Kind]
		for _, name := range sortedKeys(public) {
			a := d.Attrs[name]
			if a == nil {
				continue
			}
			expr, ok := a.Expr.(hclsyntax.Expression)
			if !ok {
				continue
			}
			if v, _ := a.Expr.Value(p.ev.planCtx); hasSensitive(v) {
				report(d.ID(), name, expr, public[name])
			}
		}
	}
	return diags
}

// sensitiveSource finds, in expr, the reference whose value is sensitive, for the
// diagnostic's range and text; without one (each.value, say) it is the whole
// expression.
func (e *evaluator) sensitiveSource(expr hclsyntax.Expression) (hcl.Range, string) {
	for _, tr := range expr.Variables() {
		v, diags := tr.TraverseAbs(e.planCtx)
		if !diags.HasErrors() && hasSensitive(v) {
			return tr.SourceRange(), traversalText(tr)
		}
	}
	return expr.Range(), "a sensitive value"
}

// hasSensitiveVariables says whether any variable is sensitive: without one, no
// value is.
func (p *Plan) hasSensitiveVariables() bool {
	return slices.ContainsFunc(p.Variables, func(v *Variable) bool { return v.Sensitive })
}

// publicSecrets are the arguments of a step type's public ones (PublicArguments)
// whose value in config, an instance's configuration, holds a sensitive value,
// sorted; checkSensitive reports them.
func publicSecrets(st StepType, config cty.Value) []string {
	pa, ok := st.(PublicArguments)
	if !ok || config == cty.NilVal || !config.Type().IsObjectType() {
		return nil
	}
	var out []string
	for _, name := range sortedKeys(pa.PublicArguments()) {
		if config.Type().HasAttribute(name) && hasSensitive(config.GetAttr(name)) {
			out = append(out, name)
		}
	}
	return out
}

// hasSensitive reports whether v or anything inside it is marked Sensitive, empty
// or unknown as it may be: a campaign is valid or not whatever value a sensitive
// variable is given.
func hasSensitive(v cty.Value) bool {
	if v == cty.NilVal || !v.ContainsMarked() {
		return false
	}
	_, pvm := v.UnmarkDeepWithPaths()
	for _, pm := range pvm {
		if _, ok := pm.Marks[Sensitive]; ok {
			return true
		}
	}
	return false
}

func traversalText(tr hcl.Traversal) string {
	var b strings.Builder
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			k, _ := s.Key.Unmark()
			if k.Type() == cty.String {
				fmt.Fprintf(&b, "[%q]", k.AsString())
			} else {
				b.WriteString("[…]")
			}
		default:
			b.WriteString("[…]")
		}
	}
	return b.String()
}
