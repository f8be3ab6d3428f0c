package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// canonicalExpr prints what an expression means rather than how it is written: its
// syntax tree, with comments, layout, redundant parentheses, trailing commas, the
// quoting of literal object keys, the order of object items, "${x}" around a lone
// interpolation and the split of a string into heredoc lines all gone. Two
// expressions print the same only when they evaluate the same way in every context;
// an expression type this printer does not know prints as its source text, so
// nothing is ever treated as unchanged by accident.
func canonicalExpr(x hcl.Expression, files map[string]*hcl.File) string {
	c := &canonPrinter{files: files, anon: map[*hclsyntax.AnonSymbolExpr]int{}}
	c.expr(x)
	return c.b.String()
}

// canonicalBody prints a body the same way: attributes sorted by name (their order
// means nothing in HCL), nested blocks in order (theirs does: arms run as declared).
func canonicalBody(body *hclsyntax.Body, files map[string]*hcl.File) string {
	c := &canonPrinter{files: files, anon: map[*hclsyntax.AnonSymbolExpr]int{}}
	c.body(body)
	return c.b.String()
}

type canonPrinter struct {
	b     strings.Builder
	files map[string]*hcl.File
	anon  map[*hclsyntax.AnonSymbolExpr]int
}

func (c *canonPrinter) w(parts ...string) {
	for _, p := range parts {
		c.b.WriteString(p)
	}
}

func (c *canonPrinter) body(body *hclsyntax.Body) {
	c.w("{")
	names := make([]string, 0, len(body.Attributes))
	for n := range body.Attributes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.w(n, "=")
		c.expr(body.Attributes[n].Expr)
		c.w(";")
	}
	for _, blk := range body.Blocks {
		c.w("block ", blk.Type)
		for _, l := range blk.Labels {
			c.w(" ", quote(l))
		}
		c.body(blk.Body)
		c.w(";")
	}
	c.w("}")
}

// literal prints a value with its type, so "1" and 1 differ and 1.0 and 1 do not.
func (c *canonPrinter) literal(v cty.Value) {
	b, err := CanonicalJSON(CanonicalValue(v))
	if err != nil {
		b = []byte(fmt.Sprintf("%#v", v))
	}
	c.w("lit(", v.Type().FriendlyName(), ":", strings.TrimSpace(string(b)), ")")
}

func (c *canonPrinter) list(xs []hclsyntax.Expression) {
	for i, x := range xs {
		if i > 0 {
			c.w(",")
		}
		c.expr(x)
	}
}

func (c *canonPrinter) traversal(tr hcl.Traversal) {
	for _, step := range tr {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			c.w(s.Name)
		case hcl.TraverseAttr:
			c.w(".", s.Name)
		case hcl.TraverseIndex:
			c.w("[")
			c.literal(s.Key)
			c.w("]")
		case hcl.TraverseSplat:
			c.w("[*]")
		default:
			c.w(fmt.Sprintf("?%T", step))
		}
	}
}

// opNames names hclsyntax's operations, which are compared by identity.
var opNames = map[*hclsyntax.Operation]string{
	hclsyntax.OpLogicalOr: "||", hclsyntax.OpLogicalAnd: "&&", hclsyntax.OpLogicalNot: "!",
	hclsyntax.OpEqual: "==", hclsyntax.OpNotEqual: "!=",
	hclsyntax.OpGreaterThan: ">", hclsyntax.OpGreaterThanOrEqual: ">=",
	hclsyntax.OpLessThan: "<", hclsyntax.OpLessThanOrEqual: "<=",
	hclsyntax.OpAdd: "+", hclsyntax.OpSubtract: "-", hclsyntax.OpMultiply: "*",
	hclsyntax.OpDivide: "/", hclsyntax.OpModulo: "%", hclsyntax.OpNegate: "neg",
}

func (c *canonPrinter) op(o *hclsyntax.Operation) string {
	if n, ok := opNames[o]; ok {
		return n
	}
	return fmt.Sprintf("op%p", o)
}

func (c *canonPrinter) expr(x hcl.Expression) {
	switch e := x.(type) {
	case nil:
		c.w("nil")
	case *hclsyntax.ParenthesesExpr:
		// The tree already holds the grouping the parentheses gave.
		c.expr(e.Expression)
	case *hclsyntax.LiteralValueExpr:
		c.literal(e.Val)
	case *hclsyntax.TemplateExpr:
		c.template(e.Parts)
	case *hclsyntax.TemplateWrapExpr:
		// "${x}" evaluates to x itself, unconverted.
		c.expr(e.Wrapped)
	case *hclsyntax.TemplateJoinExpr:
		c.w("join(")
		c.expr(e.Tuple)
		c.w(")")
	case *hclsyntax.ScopeTraversalExpr:
		c.w("ref(")
		c.traversal(e.Traversal)
		c.w(")")
	case *hclsyntax.RelativeTraversalExpr:
		c.w("rel(")
		c.expr(e.Source)
		c.w(",")
		c.traversal(e.Traversal)
		c.w(")")
	case *hclsyntax.FunctionCallExpr:
		c.w("call(", e.Name, ":")
		c.list(e.Args)
		if e.ExpandFinal {
			c.w("...")
		}
		c.w(")")
	case *hclsyntax.ConditionalExpr:
		c.w("if(")
		c.list([]hclsyntax.Expression{e.Condition, e.TrueResult, e.FalseResult})
		c.w(")")
	case *hclsyntax.IndexExpr:
		c.w("index(")
		c.list([]hclsyntax.Expression{e.Collection, e.Key})
		c.w(")")
	case *hclsyntax.TupleConsExpr:
		c.w("tuple(")
		c.list(e.Exprs)
		c.w(")")
	case *hclsyntax.ObjectConsExpr:
		// Keys are unique, so the order of the items cannot change the object.
		items := make([]string, 0, len(e.Items))
		for _, it := range e.Items {
			k, v := c.sub(it.KeyExpr), c.sub(it.ValueExpr)
			items = append(items, k+"="+v)
		}
		sort.Strings(items)
		c.w("object(", strings.Join(items, ","), ")")
	case *hclsyntax.ObjectConsKeyExpr:
		c.objectKey(e)
	case *hclsyntax.ForExpr:
		c.w("for(", quote(e.KeyVar), ",", quote(e.ValVar), ",")
		c.list([]hclsyntax.Expression{e.CollExpr, e.KeyExpr, e.ValExpr, e.CondExpr})
		if e.Group {
			c.w(",group")
		}
		c.w(")")
	case *hclsyntax.SplatExpr:
		n := len(c.anon)
		c.anon[e.Item] = n
		c.w(fmt.Sprintf("splat%d(", n))
		c.list([]hclsyntax.Expression{e.Source, e.Each})
		c.w(")")
	case *hclsyntax.AnonSymbolExpr:
		if n, ok := c.anon[e]; ok {
			c.w(fmt.Sprintf("item%d", n))
		} else {
			c.w("item?")
		}
	case *hclsyntax.BinaryOpExpr:
		c.w("op(", c.op(e.Op), ":")
		c.list([]hclsyntax.Expression{e.LHS, e.RHS})
		c.w(")")
	case *hclsyntax.UnaryOpExpr:
		c.w("op(", c.op(e.Op), ":")
		c.expr(e.Val)
		c.w(")")
	default:
		c.w(fmt.Sprintf("src(%T:", x), quote(string(c.source(x.Range()))), ")")
	}
}

// sub prints an expression on its own, sharing the splat numbering.
func (c *canonPrinter) sub(x hclsyntax.Expression) string {
	s := &canonPrinter{files: c.files, anon: c.anon}
	s.expr(x)
	return s.b.String()
}

// template joins adjacent literal parts, so a heredoc and a quoted string with the
// same text print alike, and a template of literals alone prints as the string.
func (c *canonPrinter) template(parts []hclsyntax.Expression) {
	var out []string
	var lit strings.Builder
	pending := false
	flush := func() {
		if pending {
			out = append(out, c.sub(&hclsyntax.LiteralValueExpr{Val: cty.StringVal(lit.String())}))
			lit.Reset()
			pending = false
		}
	}
	for _, p := range parts {
		if l, ok := p.(*hclsyntax.LiteralValueExpr); ok && l.Val.Type() == cty.String && l.Val.IsKnown() && !l.Val.IsNull() {
			lit.WriteString(l.Val.AsString())
			pending = true
			continue
		}
		flush()
		out = append(out, c.sub(p))
	}
	if len(parts) == 0 {
		pending = true
	}
	flush()
	if len(out) == 1 && strings.HasPrefix(out[0], "lit(string:") {
		c.w(out[0])
		return
	}
	c.w("tmpl(", strings.Join(out, ","), ")")
}

// objectKey prints a key as HCL reads it: a bare name is a string, a parenthesised
// expression is evaluated, a bare dotted name is an error.
func (c *canonPrinter) objectKey(e *hclsyntax.ObjectConsKeyExpr) {
	if !e.ForceNonLiteral {
		if tr, ok := e.Wrapped.(*hclsyntax.ScopeTraversalExpr); ok && len(tr.Traversal) > 1 {
			c.w("badkey(")
			c.traversal(tr.Traversal)
			c.w(")")
			return
		}
		if kw := hcl.ExprAsKeyword(e.Wrapped); kw != "" {
			c.literal(cty.StringVal(kw))
			return
		}
	}
	c.expr(e.Wrapped)
}

func (c *canonPrinter) source(r hcl.Range) []byte {
	f := c.files[r.Filename]
	if f == nil || r.End.Byte > len(f.Bytes) || r.Start.Byte > r.End.Byte {
		return nil
	}
	return f.Bytes[r.Start.Byte:r.End.Byte]
}

func quote(s string) string { return fmt.Sprintf("%q", s) }
