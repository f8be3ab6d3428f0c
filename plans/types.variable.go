package plans

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Variable is a variable block and the value it was given.
type Variable struct {
	Name        string
	Type        cty.Type
	Default     cty.Value
	Sensitive   bool
	Description string
	DeclRange   hcl.Range
	// Value is the final value, marked Sensitive when the variable is sensitive.
	Value cty.Value
	// Source says where Value came from: default, env, var-file or flag.
	Source string
}

var variableSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "sensitive"}, {Name: "description"}},
}

// EnvPrefix is the prefix of environment variables that set campaign variables.
const EnvPrefix = "RIGOR_VAR_"

func decodeVariable(b *hcl.Block) (*Variable, hcl.Diagnostics) {
	v := &Variable{Name: b.Labels[0], Type: cty.DynamicPseudoType, DeclRange: b.DefRange, Default: cty.NilVal}
	if !hclsyntax.ValidIdentifier(v.Name) {
		return nil, hcl.Diagnostics{errorAt(b.LabelRanges[0], "Invalid variable name", "%q is not a valid identifier: use letters, digits, underscores and dashes, starting with a letter.", v.Name)}
	}
	content, diags := b.Body.Content(variableSchema)
	diags = listValid(diags, "variable", schemaNames(variableSchema))
	if content == nil {
		return v, diags
	}
	if a, ok := content.Attributes["type"]; ok {
		ty, d := typeexpr.TypeConstraint(a.Expr)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Type = ty
		}
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if val.Type() != cty.Bool || val.IsNull() {
				diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "sensitive must be true or false."))
			} else {
				v.Sensitive = val.True()
			}
		}
	}
	if a, ok := content.Attributes["description"]; ok {
		s, d := staticString(a)
		diags = append(diags, d...)
		v.Description = s
	}
	if a, ok := content.Attributes["default"]; ok {
		val, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			cv, err := convert.Convert(val, v.Type)
			if err != nil {
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid default value for variable",
					"The default for variable %q does not match its type %s: %s.", v.Name, typeexpr.TypeString(v.Type), err))
			} else {
				v.Default = cv
			}
		}
	}
	return v, diags
}

// assignVariables gives every variable its value. Precedence, lowest first: default,
// environment RIGOR_VAR_<name>, --var-file files in order, --var flags in order.
func (p *Plan) assignVariables(opts Options) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*Variable{}
	var names []string
	for _, v := range p.Variables {
		byName[v.Name] = v
		names = append(names, v.Name)
		if v.Default != cty.NilVal {
			v.Value, v.Source = v.Default, "default"
		}
	}
	env := opts.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		name, raw, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		v := byName[strings.TrimPrefix(name, EnvPrefix)]
		if v == nil {
			continue // the environment may hold variables of other campaigns
		}
		val, d := parseRawVariable(v, raw, "environment variable "+name)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Value, v.Source = val, "env"
		}
	}
	for _, path := range opts.VarFiles {
		diags = append(diags, p.readVarFile(path, byName, names)...)
	}
	for _, arg := range opts.Vars {
		name, raw, ok := strings.Cut(arg, "=")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid --var",
				Detail: fmt.Sprintf("--var %q must have the form NAME=VALUE.", arg)})
			continue
		}
		v := byName[name]
		if v == nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Value for undeclared variable",
				Detail: fmt.Sprintf("--var sets %q, but the campaign declares no such variable.%s", name, didYouMean(name, names))})
			continue
		}
		val, d := parseRawVariable(v, raw, "--var "+name)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v.Value, v.Source = val, "flag"
		}
	}
	for _, v := range p.Variables {
		if v.Value == cty.NilVal {
			diags = append(diags, errorAt(v.DeclRange, "No value for required variable",
				"Variable %q has no default. Set it with --var %s=..., --var-file, or the environment variable %s%s.", v.Name, v.Name, EnvPrefix, v.Name))
			continue
		}
		if v.Sensitive {
			v.Value = v.Value.Mark(Sensitive)
		}
	}
	return diags
}

// parseRawVariable reads a value given as text: a string variable takes the text as
// it is; any other type parses it as an HCL expression, so lists and maps work.
func parseRawVariable(v *Variable, raw, where string) (cty.Value, hcl.Diagnostics) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType {
		return cty.StringVal(raw), nil
	}
	// One diagnostic, whatever went wrong: the text is not an HCL source file, so
	// a parser's own errors (a bare word read as a reference, "Variables not
	// allowed" at line 1 of no file) would only restate this one less clearly.
	bad := func(why string) (cty.Value, hcl.Diagnostics) {
		shown := strconv.Quote(shorten(raw))
		if v.Sensitive {
			shown = "its value " + SensitiveText
		}
		return cty.NilVal, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid value for variable",
			Detail: fmt.Sprintf("%s: variable %q is a %s; %s %s.", where, v.Name, typeexpr.TypeString(v.Type), shown, why)}}
	}
	expr, diags := parseExpression([]byte(raw), where)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if len(expr.Variables()) > 0 {
		return bad("is not one (write it as an HCL value, e.g. 8000, true or [\"a\"])")
	}
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return bad("cannot be evaluated")
	}
	cv, err := convert.Convert(val, v.Type)
	if err != nil {
		return bad("is not one: " + err.Error())
	}
	return cv, nil
}

func (p *Plan) readVarFile(path string, byName map[string]*Variable, names []string) hcl.Diagnostics {
	src, err := os.ReadFile(path)
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot read --var-file", Detail: fmt.Sprintf("%s: %s.", path, err)}}
	}
	f, diags := parseHCL(p.parser, src, path)
	if diags.HasErrors() {
		return diags
	}
	attrs, d := f.Body.JustAttributes()
	diags = append(diags, d...)
	for name, a := range attrs {
		v := byName[name]
		if v == nil {
			diags = append(diags, errorAt(a.NameRange, "Value for undeclared variable",
				"The var-file sets %q, but the campaign declares no such variable.%s", name, didYouMean(name, names)))
			continue
		}
		val, vd := a.Expr.Value(nil)
		diags = append(diags, vd...)
		if vd.HasErrors() {
			continue
		}
		cv, err := convert.Convert(val, v.Type)
		if err != nil {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid value for variable", "Variable %q needs %s: %s.", name, typeexpr.TypeString(v.Type), err))
			continue
		}
		v.Value, v.Source = cv, "var-file"
	}
	return diags
}

// shorten keeps a value quoted in a diagnostic to one readable line.
func shorten(s string) string {
	if len(s) <= 60 {
		return s
	}
	return s[:57] + "..."
}
