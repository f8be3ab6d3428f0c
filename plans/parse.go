package plans

import (
	"bytes"
	"fmt"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A file of at least piecewiseBytes is parsed in pieces of about pieceBytes, cut
// between top-level blocks. hclsyntax lexes a whole file into one slice of tokens
// before parsing it (about 24 bytes of tokens per byte of a campaign, allocated
// about five times over as the slice grows); pieces keep that small, are parsed on
// every core, and are mostly small enough that shallowPiece proves them within
// MaxNesting without lexing them a second time.
const (
	piecewiseBytes = 512 << 10
	pieceBytes     = 1 << 10
)

// shallowPiece reports whether src cannot nest deeper than MaxNesting: every level
// checkNesting counts needs a token holding one of these bytes, and a template
// directive counts at most twice, so twice their number bounds the depth.
func shallowPiece(src []byte) bool {
	n := 0
	for _, c := range src {
		switch c {
		case '(', '[', '{', '"', '<', '$', '%', '+', '-', '*', '/', '!', '?', '=', '&', '|', '>':
			n++
		}
	}
	return 2*n <= MaxNesting
}

// parseHCL parses a campaign or var file behind the nesting limit (MaxNesting) and
// registers it with parser, so diagnostics can show snippets of it.
func parseHCL(parser *hclparse.Parser, src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	if len(src) < piecewiseBytes {
		return parseWhole(parser, src, filename)
	}
	if cuts := topLevelCuts(src, pieceBytes); len(cuts) > 0 {
		if f := parseChunks(src, filename, cuts); f != nil {
			parser.AddFile(filename, f)
			return f, nil
		}
		// A piece had an error: parse the file whole, so the diagnostics are the ones
		// hclsyntax gives for the file as written.
	}
	return parseWhole(parser, src, filename)
}

// parseWhole parses src in one piece, after checking its nesting.
func parseWhole(parser *hclparse.Parser, src []byte, filename string) (*hcl.File, hcl.Diagnostics) {
	toks, _ := hclsyntax.LexConfig(src, filename, hcl.InitialPos)
	if d := checkNesting(toks); d != nil {
		parser.AddFile(filename, &hcl.File{Body: hcl.EmptyBody(), Bytes: src})
		return nil, hcl.Diagnostics{d}
	}
	return parser.ParseHCL(src, filename)
}

// cut is where a piece of a file starts.
type cut struct {
	byte, line int
}

// parseChunks parses src in pieces starting at 0 and at each cut, in parallel, and
// merges their bodies. It returns nil if any piece nests too deeply, has an error,
// or holds a top-level attribute (which a campaign does not have), leaving those
// files to the whole-file parse.
func parseChunks(src []byte, filename string, cuts []cut) *hcl.File {
	starts := append([]cut{{byte: 0, line: 1}}, cuts...)
	files := make([]*hcl.File, len(starts))
	failed := make([]bool, len(starts))
	parallelFor(len(starts), 16, func(i int) {
		end := len(src)
		if i+1 < len(starts) {
			end = starts[i+1].byte
		}
		piece := src[starts[i].byte:end]
		pos := hcl.Pos{Line: starts[i].line, Column: 1, Byte: starts[i].byte}
		if !shallowPiece(piece) {
			toks, _ := hclsyntax.LexConfig(piece, filename, pos)
			if checkNesting(toks) != nil {
				failed[i] = true
				return
			}
		}
		f, diags := hclsyntax.ParseConfig(piece, filename, pos)
		if diags.HasErrors() || len(f.Body.(*hclsyntax.Body).Attributes) > 0 {
			failed[i] = true
			return
		}
		files[i] = f
	})
	for _, bad := range failed {
		if bad {
			return nil
		}
	}
	first, last := files[0].Body.(*hclsyntax.Body), files[len(files)-1].Body.(*hclsyntax.Body)
	body := &hclsyntax.Body{
		Attributes: hclsyntax.Attributes{},
		SrcRange:   hcl.Range{Filename: filename, Start: first.SrcRange.Start, End: last.SrcRange.End},
		EndRange:   last.EndRange,
	}
	nav := chunkNav{}
	for i, f := range files {
		body.Blocks = append(body.Blocks, f.Body.(*hclsyntax.Body).Blocks...)
		nav.starts = append(nav.starts, starts[i].byte)
		nav.navs = append(nav.navs, f.Nav)
	}
	return &hcl.File{Body: body, Bytes: src, Nav: nav}
}

// chunkNav answers hcl's navigation questions (the "in step ..." line of a
// rendered diagnostic) from the piece that holds the offset.
type chunkNav struct {
	starts []int
	navs   []any
}

func (n chunkNav) at(offset int) any {
	i := sort.SearchInts(n.starts, offset+1) - 1
	if i < 0 {
		return nil
	}
	return n.navs[i]
}

// ContextString is hclsyntax's navigation for the piece holding offset.
func (n chunkNav) ContextString(offset int) string {
	if cs, ok := n.at(offset).(interface{ ContextString(int) string }); ok {
		return cs.ContextString(offset)
	}
	return ""
}

// ContextDefRange is hclsyntax's navigation for the piece holding offset.
func (n chunkNav) ContextDefRange(offset int) hcl.Range {
	if cd, ok := n.at(offset).(interface{ ContextDefRange(int) hcl.Range }); ok {
		return cd.ContextDefRange(offset)
	}
	return hcl.Range{}
}

// topLevelCuts finds where src can be cut between top-level items, at least every
// bytes apart: line starts outside any bracket, string, heredoc, comment or
// template. It follows HCL's lexical structure closely enough to find such lines in
// an ordinary file and returns nil when it is unsure (an unterminated construct, a
// newline inside a quoted string, invalid UTF-8). A wrong cut cannot go unnoticed: it leaves a
// piece ending inside a construct, which is a parse error, and parseHCL then parses
// the file whole.
func topLevelCuts(src []byte, every int) []cut {
	// hclsyntax counts lines by grapheme clusters, and an invalid UTF-8 byte can
	// swallow the newline after it (testdata/fuzz/FuzzChunkedParse), so a piece's
	// starting line could not be known: such files are parsed whole.
	if !utf8.Valid(src) {
		return nil
	}
	type mode int
	const (
		code mode = iota
		quoted
		heredoc
	)
	type frame struct {
		mode     mode
		brackets int    // open brackets in a code frame
		marker   []byte // a heredoc's closing marker
	}
	stack := []frame{{mode: code}}
	var cuts []cut
	line, last := 1, 0
	atLineStart := false // in a heredoc, whether i is at the start of a line
	// template steps over the byte at i of a string or heredoc: ${ and %{ open an
	// interpolation, $${ and %%{ are literal.
	template := func(i int) int {
		c := src[i]
		switch {
		case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
			return i + 3
		case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
			stack = append(stack, frame{mode: code})
			return i + 2
		}
		return i + 1
	}
	i := 0
	for i < len(src) {
		top := &stack[len(stack)-1]
		c := src[i]
		switch top.mode {
		case code:
			switch {
			case c == '#' || c == '/' && i+1 < len(src) && src[i+1] == '/':
				for i < len(src) && src[i] != '\n' {
					i++
				}
				continue
			case c == '/' && i+1 < len(src) && src[i+1] == '*':
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil
				}
				line += bytes.Count(src[i:i+2+end+2], []byte("\n"))
				i += 2 + end + 2
				continue
			case c == '"':
				stack = append(stack, frame{mode: quoted})
			case c == '<' && bytes.HasPrefix(src[i:], []byte("<<")):
				j := i + 2
				if j < len(src) && src[j] == '-' {
					j++
				}
				k := j
				for k < len(src) && (isIdentByte(src[k]) || k > j && src[k] == '-') {
					k++
				}
				nl := k
				if nl < len(src) && src[nl] == '\r' {
					nl++
				}
				if k == j || nl >= len(src) || src[nl] != '\n' {
					return nil
				}
				stack = append(stack, frame{mode: heredoc, marker: src[j:k]})
				line++
				i = nl + 1
				atLineStart = true
				continue
			case c == '{' || c == '[' || c == '(':
				top.brackets++
			case c == '}' || c == ']' || c == ')':
				if top.brackets == 0 {
					if len(stack) == 1 || c != '}' {
						return nil
					}
					stack = stack[:len(stack)-1] // the end of an interpolation
					atLineStart = false
				} else {
					top.brackets--
				}
			case c == '\n':
				line++
				if len(stack) == 1 && top.brackets == 0 && i+1-last >= every && i+1 < len(src) {
					cuts = append(cuts, cut{byte: i + 1, line: line})
					last = i + 1
				}
			}
			i++
		case quoted:
			switch {
			case c == '\\':
				if i+1 < len(src) && src[i+1] == '\n' {
					return nil
				}
				i += 2
				continue
			case c == '"':
				stack = stack[:len(stack)-1]
			case c == '\n':
				return nil
			}
			i = template(i)
		case heredoc:
			if atLineStart {
				j := i
				for j < len(src) && (src[j] == ' ' || src[j] == '\t') {
					j++
				}
				if rest := src[j:]; bytes.HasPrefix(rest, top.marker) {
					after := rest[len(top.marker):]
					if len(after) == 0 || after[0] == '\n' || after[0] == '\r' && len(after) > 1 && after[1] == '\n' {
						stack = stack[:len(stack)-1]
						i = j + len(top.marker)
						atLineStart = false
						continue
					}
				}
			}
			atLineStart = c == '\n'
			if c == '\n' {
				line++
			}
			i = template(i)
		}
	}
	if len(stack) != 1 || stack[0].brackets != 0 {
		return nil
	}
	return cuts
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// parallelFor calls f(0) ... f(n-1) on every core, batch indices at a time, and
// returns when all are done. f must only write what belongs to its index. A panic
// in f is raised again in the caller's goroutine, where the CLI's recover and the
// fuzz tests can see it.
func parallelFor(n, batch int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), (n+batch-1)/batch)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var panicked any
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if r := recover(); r != nil {
					once.Do(func() { panicked = fmt.Sprintf("%v\n%s", r, debug.Stack()) })
					next.Store(int64(n)) // stop the other workers
				}
			}()
			for {
				start := int(next.Add(int64(batch))) - batch
				if start >= n {
					return
				}
				for i := start; i < min(start+batch, n); i++ {
					f(i)
				}
			}
		}()
	}
	wg.Wait()
	if panicked != nil {
		panic(panicked)
	}
}
