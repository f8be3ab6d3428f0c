package plans

import (
	"bytes"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// MaxNesting is how deeply a campaign file, a --var-file or a --var value may nest.
// Each open bracket, brace, parenthesis, string, heredoc, template interpolation
// (${ or %{) and template if/for directive counts one level, and so does each
// operator (+, -, !, ?, ==, && ...), index and splat ([i], [*] or .*) of the
// expression being read at that level, because HCL's parser and evaluator recurse
// once per operator, index and splat as well. A campaign
// nests a handful of levels; without a bound, 100,000 nested parentheses (a 200 KB
// file) exhaust the goroutine stack, which Go ends with a fatal error that no
// recover can catch.
const MaxNesting = 256

// nestFrame is one open construct while checking nesting.
type nestFrame struct {
	open hclsyntax.TokenType // the token that opened it; 0 for the body of the file
	// ops counts the operators of the expression being read at this level; a
	// comma, or a newline where newlines end expressions, starts a new one.
	ops int
	// directives counts the template %{if} and %{for} directives open at this level.
	directives int
	// index: a bracket right after an expression (a[i], a[*]): the parser recurses
	// once more for each in a chain, so it counts a level of the enclosing
	// expression once closed, as an operator does.
	index bool
}

// closerOf maps each closing token to the opening token it closes.
var closerOf = map[hclsyntax.TokenType]hclsyntax.TokenType{
	hclsyntax.TokenCBrace:         hclsyntax.TokenOBrace,
	hclsyntax.TokenCBrack:         hclsyntax.TokenOBrack,
	hclsyntax.TokenCParen:         hclsyntax.TokenOParen,
	hclsyntax.TokenCQuote:         hclsyntax.TokenOQuote,
	hclsyntax.TokenCHeredoc:       hclsyntax.TokenOHeredoc,
	hclsyntax.TokenTemplateSeqEnd: hclsyntax.TokenTemplateInterp, // or TokenTemplateControl
}

// checkNesting walks tokens as hclsyntax lexed them and returns a diagnostic at the
// first token that nests deeper than MaxNesting. It counts on the safe side: a
// closing token that does not match the innermost open construct closes nothing,
// so a malformed file can only look deeper than the parser will go, never
// shallower.
func checkNesting(toks hclsyntax.Tokens) *hcl.Diagnostic {
	stack := []nestFrame{{}}
	depth := 0 // open frames below the root plus every frame's ops and directives
	for i, tok := range toks {
		top := &stack[len(stack)-1]
		switch tok.Type {
		case hclsyntax.TokenOBrace, hclsyntax.TokenOBrack, hclsyntax.TokenOParen, hclsyntax.TokenOQuote,
			hclsyntax.TokenOHeredoc, hclsyntax.TokenTemplateInterp, hclsyntax.TokenTemplateControl:
			stack = append(stack, nestFrame{open: tok.Type, index: tok.Type == hclsyntax.TokenOBrack && endsExpression(toks[:i])})
			depth++
			if tok.Type == hclsyntax.TokenTemplateControl && i+1 < len(toks) && toks[i+1].Type == hclsyntax.TokenIdent {
				// %{if} and %{for} stay open in the enclosing template until their
				// %{endif} or %{endfor}.
				switch string(toks[i+1].Bytes) {
				case "if", "for":
					top.directives++
					depth++
				case "endif", "endfor":
					if top.directives > 0 {
						top.directives--
						depth--
					}
				}
			}
		case hclsyntax.TokenCBrace, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote,
			hclsyntax.TokenCHeredoc, hclsyntax.TokenTemplateSeqEnd:
			want := closerOf[tok.Type]
			if len(stack) > 1 && (top.open == want || tok.Type == hclsyntax.TokenTemplateSeqEnd && top.open == hclsyntax.TokenTemplateControl) {
				depth -= 1 + top.ops + top.directives
				index := top.index
				stack = stack[:len(stack)-1]
				if index {
					stack[len(stack)-1].ops++
					depth++
				}
			}
		case hclsyntax.TokenComma:
			depth -= top.ops
			top.ops = 0
		case hclsyntax.TokenNewline, hclsyntax.TokenComment:
			// Newlines end an expression in a body and in an object; inside
			// parentheses, brackets and interpolations the parser skips them. A
			// line comment carries the newline that ends its line.
			endsLine := tok.Type == hclsyntax.TokenNewline || bytes.HasSuffix(tok.Bytes, []byte("\n"))
			if endsLine && (top.open == 0 || top.open == hclsyntax.TokenOBrace) {
				depth -= top.ops
				top.ops = 0
			}
		case hclsyntax.TokenPlus, hclsyntax.TokenMinus, hclsyntax.TokenStar, hclsyntax.TokenSlash,
			hclsyntax.TokenPercent, hclsyntax.TokenEqualOp, hclsyntax.TokenNotEqual, hclsyntax.TokenLessThan,
			hclsyntax.TokenLessThanEq, hclsyntax.TokenGreaterThan, hclsyntax.TokenGreaterThanEq,
			hclsyntax.TokenAnd, hclsyntax.TokenOr, hclsyntax.TokenBang, hclsyntax.TokenQuestion:
			top.ops++
			depth++
		}
		if depth > MaxNesting {
			return &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Nesting too deep",
				Detail: fmt.Sprintf("Brackets, braces, parentheses, strings, template interpolations, operators, indexes and splats nest more than %d levels deep here. "+
					"rigor refuses deeper nesting (plans.MaxNesting) so that reading the file cannot exhaust the parser's stack; a campaign needs only a few levels.", MaxNesting),
				Subject: tok.Range.Ptr(),
			}
		}
	}
	return nil
}

// endsExpression reports whether the last token of before, comments skipped, can
// end an expression, so that a bracket after it indexes (or splats) it.
func endsExpression(before hclsyntax.Tokens) bool {
	for i := len(before) - 1; i >= 0; i-- {
		switch before[i].Type {
		case hclsyntax.TokenComment:
			continue
		case hclsyntax.TokenIdent, hclsyntax.TokenCBrack, hclsyntax.TokenCParen, hclsyntax.TokenCQuote, hclsyntax.TokenCBrace, hclsyntax.TokenNumberLit:
			return true
		}
		return false
	}
	return false
}

// CheckNesting lexes an HCL file as hclsyntax does and reports nesting deeper than
// MaxNesting, so a caller can refuse the file before handing it to a parser that
// would recurse that deep (hclwrite, say).
func CheckNesting(src []byte, filename string) hcl.Diagnostics {
	toks, diags := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	if d := checkNesting(toks); d != nil {
		return append(diags, d)
	}
	return nil
}

// parseExpression is hclsyntax.ParseExpression behind the nesting limit, for values
// given on the command line or in the environment.
func parseExpression(src []byte, filename string) (hclsyntax.Expression, hcl.Diagnostics) {
	toks, _ := hclsyntax.LexExpression(src, filename, hcl.InitialPos)
	if d := checkNesting(toks); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	return hclsyntax.ParseExpression(src, filename, hcl.InitialPos)
}
