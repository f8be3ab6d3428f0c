package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
)

// A document is rendered twice, as Markdown and as HTML, from one model so the two
// never disagree.
type document struct {
	title    string
	sections []*section
}

type section struct {
	id, title string
	elems     []elem
}

type elem struct {
	para  string
	items []string
	table *table
	chart *chart
}

type table struct {
	head []string
	rows [][]string
	// legend explains a mark used in the cells (descMark), once, right under the
	// table, instead of a word repeated in every cell.
	legend string
}

// descMark marks a percentile over fewer samples than certify it: descriptive
// only. A table that uses it carries its legend once (table.legend).
const descMark = "†"

// markLegend sets the legend of descMark when a cell uses the mark.
func (t *table) markLegend(legend string) {
	for _, r := range t.rows {
		for _, c := range r {
			if strings.Contains(c, descMark) {
				t.legend = legend
				return
			}
		}
	}
}

func (s *section) p(format string, args ...any) {
	s.elems = append(s.elems, elem{para: fmt.Sprintf(format, args...)})
}
func (s *section) list(items []string) {
	if len(items) > 0 {
		s.elems = append(s.elems, elem{items: items})
	}
}
func (s *section) tab(t *table) { s.elems = append(s.elems, elem{table: t}) }

func (d *document) add(id, title string) *section {
	s := &section{id: id, title: title}
	d.sections = append(d.sections, s)
	return s
}

func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

func (d *document) markdown() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n", d.title)
	for _, s := range d.sections {
		if s.title != "" {
			fmt.Fprintf(&b, "\n## %s\n", s.title)
		}
		for _, e := range s.elems {
			b.WriteString("\n")
			switch {
			case e.table != nil:
				fmt.Fprintf(&b, "| %s |\n", strings.Join(mapS(e.table.head, mdCell), " | "))
				fmt.Fprintf(&b, "|%s\n", strings.Repeat("---|", len(e.table.head)))
				for _, r := range e.table.rows {
					fmt.Fprintf(&b, "| %s |\n", strings.Join(mapS(r, mdCell), " | "))
				}
				if e.table.legend != "" {
					fmt.Fprintf(&b, "\n%s\n", e.table.legend)
				}
			case e.items != nil:
				for _, it := range e.items {
					fmt.Fprintf(&b, "- %s\n", it)
				}
			case e.chart != nil:
				fmt.Fprintf(&b, "![%s](%s)\n\n%s ([SVG](%s))\n", e.chart.Title, e.chart.PNG, e.chart.Caption, e.chart.SVG)
			default:
				fmt.Fprintf(&b, "%s\n", e.para)
			}
		}
	}
	return b.Bytes()
}

const css = `body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;margin:1rem 0;font-size:.9rem}th,td{border:1px solid #bbb;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eee}figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.85rem;color:#555}
code{font-size:.85rem}p.legend{font-size:.85rem;color:#555;margin-top:-.5rem}`

func (d *document) html(charts []chart) []byte {
	var b bytes.Buffer
	e := html.EscapeString
	fmt.Fprintf(&b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n<h1>%s</h1>\n", e(d.title), css, e(d.title))
	for _, s := range d.sections {
		fmt.Fprintf(&b, "<section id=\"%s\">\n", e(s.id))
		if s.title != "" {
			fmt.Fprintf(&b, "<h2>%s</h2>\n", e(s.title))
		}
		for _, el := range s.elems {
			switch {
			case el.table != nil:
				b.WriteString("<table>\n<thead><tr>")
				for _, h := range el.table.head {
					fmt.Fprintf(&b, "<th>%s</th>", inlineHTML(h))
				}
				b.WriteString("</tr></thead>\n<tbody>\n")
				for _, r := range el.table.rows {
					b.WriteString("<tr>")
					for _, c := range r {
						fmt.Fprintf(&b, "<td>%s</td>", inlineHTML(c))
					}
					b.WriteString("</tr>\n")
				}
				b.WriteString("</tbody>\n</table>\n")
				if el.table.legend != "" {
					fmt.Fprintf(&b, "<p class=\"legend\">%s</p>\n", inlineHTML(el.table.legend))
				}
			case el.items != nil:
				b.WriteString("<ul>\n")
				for _, it := range el.items {
					fmt.Fprintf(&b, "<li>%s</li>\n", inlineHTML(it))
				}
				b.WriteString("</ul>\n")
			case el.chart != nil:
				c := el.chart
				fmt.Fprintf(&b, "<figure class=\"chart\" id=\"chart-%s\">\n<img alt=\"%s\" src=\"data:image/png;base64,%s\">\n<figcaption>%s. %s. <a href=\"%s\">SVG</a> · <a href=\"%s\">PNG</a></figcaption>\n</figure>\n",
					e(c.Name), e(c.Title), base64.StdEncoding.EncodeToString(c.pngData), e(c.Title), inlineHTML(c.Caption), e(c.SVG), e(c.PNG))
			default:
				fmt.Fprintf(&b, "<p>%s</p>\n", inlineHTML(el.para))
			}
		}
		b.WriteString("</section>\n")
	}
	b.WriteString("</body>\n</html>\n")
	return b.Bytes()
}

// The document's text carries the little inline Markdown it uses, **strong**,
// `code` and [links](#section) within the document; the HTML shows it as such
// rather than as asterisks, backticks and brackets.
var (
	strongSpan = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	anchorLink = regexp.MustCompile(`\[([^\]]+)\]\((#[a-z0-9-]+)\)`)
)

// inlineHTML escapes s and renders its paired ** and ` spans and its links to
// sections of the document.
func inlineHTML(s string) string {
	s = html.EscapeString(s)
	s = strongSpan.ReplaceAllString(s, "<strong>$1</strong>")
	s = anchorLink.ReplaceAllString(s, `<a href="$2">$1</a>`)
	return codeSpan.ReplaceAllString(s, "<code>$1</code>")
}

func mapS(xs []string, f func(string) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// fmtMS prints a duration in ms with precision that suits its size.
func fmtMS(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case x >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
}

func fmtF(x float64, prec int) string { return strconv.FormatFloat(x, 'f', prec, 64) }

func fmtPtr(p *float64, f func(float64) string) string {
	if p == nil {
		return "—"
	}
	return f(*p)
}

func fmtInt(n int) string {
	s := strconv.Itoa(n)
	if n < 10000 {
		return s
	}
	var out []byte
	for i, c := range []byte(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, c)
	}
	return string(out)
}
