package report

import (
	"encoding/xml"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// What a reader sees before reading: the first screen, the charts and the tables.

// firstScreen is the report's text before its first section heading.
func firstScreenMD(md string) string {
	if i := strings.Index(md, "\n## "); i >= 0 {
		return md[:i]
	}
	return md
}

// TestFirstScreenSaysWhatWasCompared: before the first details heading, report.md
// and report.html name every target with its engine, model and simulator profile
// and time scale, the verdict, and each compared cell's effect and interval.
func TestFirstScreenSaysWhatWasCompared(t *testing.T) {
	for _, state := range []string{"verdict-faster", "clean"} {
		t.Run(state, func(t *testing.T) {
			out := t.TempDir()
			if _, err := Generate(Options{State: filepath.Join("testdata", "states", state), Out: out, Format: "both"}); err != nil {
				t.Fatal(err)
			}
			md, _ := os.ReadFile(filepath.Join(out, "report.md"))
			page, _ := os.ReadFile(filepath.Join(out, "report.html"))
			h := string(page)
			h = h[:strings.Index(h, "<h2>")]
			r := build(t, state)
			v := r.Summary.Promotion
			for name, first := range map[string]string{"report.md": firstScreenMD(string(md)), "report.html": h} {
				want := []string{"Decision: " + v.Verdict + ".", "What was compared", "What decided it"}
				// The targets, from the plan the state froze, independently of the report.
				for _, b := range r.ev.blocks {
					if b.Matrix == "" {
						continue
					}
					tg := b.Target
					want = append(want, text(tg["name"]), b.Arm, "vllm", "profile "+text(tg["profile"]), fmt.Sprintf("time scale %g", tg["time_scale"].(float64)))
				}
				for _, c := range v.Comparisons {
					want = append(want, c.Criterion)
					if c.Gain != nil {
						want = append(want, pm(*c.Gain))
					}
					if c.Interval != nil {
						want = append(want, fmt.Sprintf("[%s, %s]", pm(c.Interval.Lo), pm(c.Interval.Hi)))
					}
					if c.Candidate != nil && c.Candidate.Mean != nil {
						want = append(want, commas(int(math.Round(*c.Candidate.Mean))))
					}
				}
				for _, w := range want {
					if !strings.Contains(first, w) && !strings.Contains(first, htmlEsc(w)) {
						t.Errorf("%s: the first screen lacks %q:\n%s", name, w, first)
					}
				}
			}
		})
	}
}

// commas writes n with a comma every three digits.
func commas(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func htmlEsc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// TestFirstScreenNamesTheModelSent: a block's result.json that records its model
// (as the block step now writes it) puts that model on the first screen.
func TestFirstScreenNamesTheModelSent(t *testing.T) {
	r := build(t, "verdict-faster")
	for _, b := range r.ev.blocks {
		for _, a := range b.attempts {
			if text(b.Target["name"]) == "candidate" {
				a.model = "org/candidate-model"
			}
		}
	}
	first := firstScreenMD(string(r.document(nil).markdown()))
	if !regexp.MustCompile(`\| candidate \| candidate \| vllm \| org/candidate-model \| rigor's simulator, profile incumbent, time scale 0\.02 `).MatchString(first) ||
		!strings.Contains(first, "| incumbent | incumbent_before, incumbent_after | vllm | not recorded |") {
		t.Errorf("first screen:\n%s", first)
	}
}

// mdTables splits Markdown into its tables, each with the line that follows it.
type mdTable struct {
	head  []string
	rows  [][]string
	after string
}

func mdTables(md string) []mdTable {
	var out []mdTable
	lines := strings.Split(md, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "| ") || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---") {
			continue
		}
		t := mdTable{head: cells(lines[i])}
		j := i + 2
		for ; j < len(lines) && strings.HasPrefix(lines[j], "| "); j++ {
			t.rows = append(t.rows, cells(lines[j]))
		}
		if j+1 < len(lines) {
			t.after = lines[j+1]
		}
		out = append(out, t)
		i = j
	}
	return out
}

func cells(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |")
	return strings.Split(line, " | ")
}

// TestTablesReadAtAGlance: throughputs are whole numbers, a descriptive figure
// carries a mark whose legend is stated once under its table, and the GPU section
// has a row per device linking to the per-block table.
func TestTablesReadAtAGlance(t *testing.T) {
	tokCell := regexp.MustCompile(`^[0-9,]+$`)
	for _, state := range states {
		t.Run(state, func(t *testing.T) {
			r := build(t, state)
			md := string(r.document(nil).markdown())
			if strings.Contains(md, "(descriptive)") || strings.Contains(md, " descriptive |") {
				t.Error("a cell still spells out descriptive instead of the mark")
			}
			nTok, marked := 0, 0
			for _, tb := range mdTables(md) {
				for ci, h := range tb.head {
					if !strings.Contains(h, "tok/s") || strings.Contains(h, "Effective") || strings.Contains(h, "Decode") {
						continue
					}
					for _, row := range tb.rows {
						c := row[ci]
						if c == "—" || strings.HasPrefix(c, "withheld") {
							continue
						}
						for _, part := range strings.Split(c, " / ") {
							nTok++
							if !tokCell.MatchString(part) {
								t.Errorf("column %q: %q is not a whole number of tok/s", h, c)
							}
						}
					}
				}
				// Decode and prefill tok/s are per-request distributions p50 / p95 / p99.
				for ci, h := range tb.head {
					if h != "Decode tok/s" && h != "Effective prefill tok/s" {
						continue
					}
					for _, row := range tb.rows {
						for _, part := range strings.Split(strings.TrimSuffix(row[ci], descMark), " / ") {
							if part != "—" && !tokCell.MatchString(strings.TrimSuffix(part, descMark)) {
								t.Errorf("column %q: %q is not a whole number of tok/s", h, row[ci])
							}
						}
					}
				}
				uses := strings.Contains(fmt.Sprint(tb.rows), descMark)
				legend := strings.HasPrefix(tb.after, descMark+" descriptive")
				if uses != legend {
					t.Errorf("table %v: mark used %t, legend under it %t (%q)", tb.head, uses, legend, tb.after)
				}
				if uses {
					marked++
				}
			}
			if got := strings.Count(md, "\n"+descMark+" descriptive"); got != marked {
				t.Errorf("%d descriptive legends for %d marked tables", got, marked)
			}
			if r.Summary.Statistics.AcceptedCells > 0 && nTok == 0 {
				t.Error("no tok/s cell was checked")
			}
			if r.Summary.Statistics.DescriptiveDistributions > 0 && marked == 0 {
				t.Error("descriptive distributions but no marked table")
			}
		})
	}
}

// TestGPUSummaryPerDevice: the GPU section is a row per device, with a link that
// resolves to the full per-block table in both renderings.
func TestGPUSummaryPerDevice(t *testing.T) {
	r := build(t, "clean")
	devs := devices(r.ev.gpuSamples)
	if len(devs) != 2 {
		t.Fatalf("%d devices in the clean state", len(devs))
	}
	md := string(r.document(nil).markdown())
	sec := md[strings.Index(md, "## GPU observations\n"):]
	sec = sec[:strings.Index(sec[3:], "\n## ")+3]
	tbs := mdTables(sec)
	if len(tbs) != 1 || len(tbs[0].rows) != len(devs) {
		t.Fatalf("GPU section tables %+v", tbs)
	}
	for i, d := range devs {
		if tbs[0].rows[i][0] != d.Device || tbs[0].rows[i][3] != fmt.Sprint(d.Samples) {
			t.Errorf("row %v for device %+v", tbs[0].rows[i], d)
		}
	}
	if !strings.Contains(sec, "[the full table](#gpu-observations-per-block)") || !strings.Contains(md, "\n## GPU observations per block\n") {
		t.Error("report.md: no link to the per-block GPU table, or no such heading (GitHub's anchor of the heading is the link)")
	}
	page := string(r.document(nil).html(nil))
	if !strings.Contains(page, `<a href="#gpu-observations-per-block">the full table</a>`) || !strings.Contains(page, `<section id="gpu-observations-per-block">`) {
		t.Error("report.html: the link or its target section is missing")
	}
	full := md[strings.Index(md, "## GPU observations per block"):]
	if n := len(mdTables(full)[0].rows); n <= len(devs) {
		t.Errorf("the full table has %d rows", n)
	}
}

// svgText is one text element of an SVG chart, its box in image coordinates.
type svgText struct {
	s                      string
	size                   float64
	fill                   string // the fill of the path drawn just before it
	x0, y0, x1, y1, vw, vh float64
}

var sizeRE = regexp.MustCompile(`font-size:([0-9.]+)px`)
var fillRE = regexp.MustCompile(`fill:(#[0-9A-Fa-f]{6})`)
var rotRE = regexp.MustCompile(`^rotate\(([-0-9.e]+)\)$`)

// svgTexts parses an SVG written by gonum/plot's vgsvg: the outer group flips the
// y axis, a text is flipped back, and rotated labels sit in a rotate(θ) group.
// Each text's box is measured with the font the chart used.
func svgTexts(t *testing.T, svg []byte) (texts []svgText, fills []string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(string(svg)))
	var vw, vh float64
	var rot []float64
	var cur *svgText
	lastFill := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range e.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch e.Name.Local {
			case "svg":
				fmt.Sscanf(attr["viewBox"], "0 0 %g %g", &vw, &vh)
			case "g":
				th := 0.0
				if m := rotRE.FindStringSubmatch(attr["transform"]); m != nil {
					th, _ = strconv.ParseFloat(m[1], 64)
				}
				rot = append(rot, th)
			case "path":
				if m := fillRE.FindStringSubmatch(attr["style"]); m != nil {
					lastFill = strings.ToUpper(m[1])
					fills = append(fills, lastFill)
				}
			case "text":
				x, _ := strconv.ParseFloat(attr["x"], 64)
				y, _ := strconv.ParseFloat(attr["y"], 64)
				size := 10.0
				if m := sizeRE.FindStringSubmatch(attr["style"]); m != nil {
					size, _ = strconv.ParseFloat(m[1], 64)
				}
				th := 0.0
				for _, r := range rot {
					th += r
				}
				cur = &svgText{size: size, fill: lastFill, vw: vw, vh: vh}
				cur.x0, cur.y0 = x, y
				cur.x1 = th // carried to the end element
			}
		case xml.CharData:
			if cur != nil {
				cur.s += string(e)
			}
		case xml.EndElement:
			switch e.Name.Local {
			case "g":
				rot = rot[:len(rot)-1]
			case "text":
				x, y, th := cur.x0, cur.y0, cur.x1*math.Pi/180
				w := float64(textStyle(cur.size, nil).Width(cur.s))
				// The text's own box (flipped back by its scale(1,-1)), then the
				// rotation of its group, then the outer flip into image coordinates.
				cur.x0, cur.y0, cur.x1, cur.y1 = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
				for _, p := range [][2]float64{{x, y - 0.8*cur.size}, {x + w, y - 0.8*cur.size}, {x, y + 0.2*cur.size}, {x + w, y + 0.2*cur.size}} {
					px, py := p[0], -p[1]
					rx, ry := math.Cos(th)*px-math.Sin(th)*py, math.Sin(th)*px+math.Cos(th)*py
					ix, iy := rx, vh-ry
					cur.x0, cur.x1 = math.Min(cur.x0, ix), math.Max(cur.x1, ix)
					cur.y0, cur.y1 = math.Min(cur.y0, iy), math.Max(cur.y1, iy)
				}
				texts = append(texts, *cur)
				cur = nil
			}
		}
	}
	return texts, fills
}

func chartsOf(t *testing.T, state string) map[string][]byte {
	t.Helper()
	r := build(t, state)
	cs, err := r.charts()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, c := range cs {
		out[c.Name] = c.svgData
	}
	return out
}

// TestChartTextInsideTheImage: every title, source line, legend entry, panel
// title, axis label and tick label of every chart lies inside the image.
func TestChartTextInsideTheImage(t *testing.T) {
	for _, state := range []string{"clean", "failed-cell", "verdict-drift"} {
		for name, svg := range chartsOf(t, state) {
			texts, _ := svgTexts(t, svg)
			if len(texts) < 8 {
				t.Errorf("%s/%s: %d texts", state, name, len(texts))
			}
			// One title, then one short source line.
			var sources []string
			for _, x := range texts {
				if strings.HasPrefix(x.s, "source: ") {
					sources = append(sources, x.s)
				}
			}
			if len(sources) != 1 || len(sources[0]) > 120 {
				t.Errorf("%s/%s: source lines %q", state, name, sources)
			}
			var titles []string
			for _, x := range texts {
				if x.size == 11 {
					titles = append(titles, x.s)
				}
			}
			if len(titles) != 1 || len(sources) != 1 || len(texts) < 2 || texts[0].s != titles[0] || texts[1].s != sources[0] {
				t.Errorf("%s/%s: titles %q, sources %q, %d texts; want one title, then the source line", state, name, titles, sources, len(texts))
			}
			for _, x := range texts {
				if x.x0 < -0.5 || x.y0 < -0.5 || x.x1 > x.vw+0.5 || x.y1 > x.vh+0.5 {
					t.Errorf("%s/%s: %q spans x %.1f–%.1f, y %.1f–%.1f outside the %gx%g image", state, name, x.s, x.x0, x.x1, x.y0, x.y1, x.vw, x.vh)
				}
			}
		}
	}
}

// TestChartLongArmNamesFit: category labels of long arm names, drawn rotated under
// the first panel, widen its margin instead of running off the image's left edge.
func TestChartLongArmNamesFit(t *testing.T) {
	r := build(t, "clean")
	renamed := map[string]string{}
	for _, c := range r.ev.cells {
		if renamed[c.Arm] == "" {
			renamed[c.Arm] = "a_rather_long_arm_name_for_" + c.Arm
		}
		c.Arm = renamed[c.Arm]
		for _, b := range c.Blocks {
			b.Arm = c.Arm
		}
	}
	cs, err := r.charts()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, c := range cs {
		if c.Name != "throughput" && c.Name != "ttft" && c.Name != "tpot" {
			continue
		}
		checked++
		texts, _ := svgTexts(t, c.svgData)
		for _, x := range texts {
			if x.x0 < -0.5 || x.y0 < -0.5 || x.x1 > x.vw+0.5 || x.y1 > x.vh+0.5 {
				t.Errorf("%s: %q spans x %.1f–%.1f, y %.1f–%.1f outside the %gx%g image", c.Name, x.s, x.x0, x.x1, x.y0, x.y1, x.vw, x.vh)
			}
		}
	}
	if checked != 3 {
		t.Errorf("%d charts checked", checked)
	}
}

// TestChartTextCheckCatchesClipping holds the check above to what it claims: a
// legend pushed past the right edge is found.
func TestChartTextCheckCatchesClipping(t *testing.T) {
	svg := `<svg width="100pt" height="50pt" viewBox="0 0 100 50"><g transform="scale(1, -1) translate(0, -50)">
<text x="60" y="-20" transform="scale(1, -1)" style="font-size:9px">incumbent_before</text>
<g transform="rotate(90)"><text x="5" y="-5" transform="scale(1, -1)" style="font-size:9px">a long axis label past the top</text></g></g></svg>`
	texts, _ := svgTexts(t, []byte(svg))
	if len(texts) != 2 || texts[0].x1 <= 100 || texts[1].y0 >= 0 {
		t.Errorf("the clipped texts were not found: %+v", texts)
	}
}

// TestChartsAreSmallMultiples: each chart over the matrix has a panel per
// concurrency (its title C<n>), and each GPU chart a panel per device.
func TestChartsAreSmallMultiples(t *testing.T) {
	panelRE := regexp.MustCompile(`^C[0-9]+$`)
	gpuRE := regexp.MustCompile(`^GPU [0-9]+$`)
	for _, state := range []string{"clean", "verdict-faster"} {
		r := build(t, state)
		var concs []string
		for _, c := range r.ev.cells {
			if s := fmt.Sprintf("C%d", c.Conc); !slices.Contains(concs, s) {
				concs = append(concs, s)
			}
		}
		slices.Sort(concs)
		nDev := len(devices(r.ev.gpuSamples))
		charts := chartsOf(t, state)
		for _, name := range []string{"throughput", "noise_drift", "ttft", "tpot", "gpu_power", "gpu_temperature"} {
			svg, ok := charts[name]
			if !ok {
				t.Errorf("%s: no %s chart", state, name)
				continue
			}
			texts, _ := svgTexts(t, svg)
			var panels []string
			gpus := 0
			for _, x := range texts {
				if panelRE.MatchString(x.s) {
					panels = append(panels, x.s)
				}
				if gpuRE.MatchString(x.s) {
					gpus++
				}
			}
			slices.Sort(panels)
			if strings.HasPrefix(name, "gpu_") {
				if gpus != nDev {
					t.Errorf("%s/%s: %d GPU panels for %d devices", state, name, gpus, nDev)
				}
				continue
			}
			if !slices.Equal(panels, concs) {
				t.Errorf("%s/%s: panels %v, concurrencies %v", state, name, panels, concs)
			}
		}
	}
}

// TestChartColoursMeanArm: every matrix chart has a legend with each arm once, an
// arm's legend colour is the same in every chart, and the boxes and bars are drawn
// only in arm colours.
func TestChartColoursMeanArm(t *testing.T) {
	r := build(t, "clean")
	arms := r.arms()
	charts := chartsOf(t, "clean")
	var first map[string]string
	for _, name := range []string{"throughput", "noise_drift", "ttft", "tpot"} {
		texts, fills := svgTexts(t, charts[name])
		colour := map[string]string{}
		for _, x := range texts {
			if slices.Contains(arms, x.s) && x.size == 9 { // legend labels (tick labels are 8 px)
				if _, dup := colour[x.s]; dup {
					t.Errorf("%s: %s twice in the legend", name, x.s)
				}
				colour[x.s] = x.fill
			}
		}
		if len(colour) != len(arms) {
			t.Errorf("%s: legend %v, arms %v", name, colour, arms)
		}
		if first == nil {
			first = colour
		} else if fmt.Sprint(first) != fmt.Sprint(colour) {
			t.Errorf("%s: arm colours %v, throughput has %v", name, colour, first)
		}
		if name == "ttft" || name == "tpot" || name == "throughput" {
			legend := map[string]bool{}
			for _, c := range colour {
				legend[c] = true
			}
			for _, f := range fills {
				if f != "#FFFFFF" && f != "#000000" && !legend[f] {
					t.Errorf("%s: a shape filled %s, not an arm's colour %v", name, f, colour)
				}
			}
		}
	}
	// The GPU charts shade each block window in a light tint of its arm's colour,
	// and their legend says so.
	for _, name := range []string{"gpu_power", "gpu_temperature"} {
		texts, fills := svgTexts(t, charts[name])
		for arm, hex := range first {
			var c color.RGBA
			fmt.Sscanf(hex, "#%02X%02X%02X", &c.R, &c.G, &c.B)
			c.A = 0xff
			l := light(c).(color.RGBA)
			tint := fmt.Sprintf("#%02X%02X%02X", l.R, l.G, l.B)
			inLegend := slices.ContainsFunc(texts, func(x svgText) bool { return x.s == arm && x.fill == tint })
			if n := slices.Index(fills, tint); !inLegend || n < 0 || strings.Count(strings.Join(fills, " "), tint) < 2 {
				t.Errorf("%s: %s's windows are not shaded %s (legend %t)", name, arm, tint, inLegend)
			}
		}
	}
	distinct := map[string]bool{}
	for _, c := range first {
		distinct[c] = true
	}
	if len(distinct) != len(arms) {
		t.Errorf("arms share colours: %v", first)
	}
}

// TestRunOrderAxisLabelsZero: the run-order chart's y axis labels the baseline's 0
// on round steps, whatever the range.
func TestRunOrderAxisLabelsZero(t *testing.T) {
	for _, rg := range [][2]float64{{-37, 8}, {-0.4, 0.3}, {-60, 55}, {-3, 210}} {
		var labels []string
		for _, tk := range (zeroTicks{}).Ticks(rg[0], rg[1]) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Contains(labels, "0") || len(labels) < 3 || len(labels) > 7 {
			t.Errorf("range %v: labels %v", rg, labels)
		}
	}
	texts, _ := svgTexts(t, chartsOf(t, "verdict-drift")["noise_drift"])
	zeros := 0
	for _, x := range texts {
		if x.s == "0" {
			zeros++
		}
	}
	if zeros != 1 { // one panel, C2
		t.Errorf("noise_drift.svg labels 0 %d times", zeros)
	}
}

func TestTokS(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999.4: "999", 999.5: "1,000", 7450.426: "7,450", 17544.802: "17,545", 1234567.8: "1,234,568", -2500.2: "−2,500"} {
		if got := tokS(x); got != want {
			t.Errorf("tokS(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestFirstScreenNamesTheImageServed: a target whose image the plan knew only
// after a step (a build's output) is named on the first screen by the image its
// deploy observed, never by the plan's placeholder; a declared image is named as
// declared.
func TestFirstScreenNamesTheImageServed(t *testing.T) {
	r := build(t, "verdict-faster")
	_, observed, _ := r.targetImages()
	if len(observed["candidate"]) == 0 {
		t.Fatal("the state's deploy of the candidate recorded no image_id")
	}
	for _, b := range r.ev.blocks {
		if text(b.Target["name"]) == "candidate" {
			b.Target["image"] = "(known after step.build.candidate)"
			b.Target["runtime"] = "docker"
		}
	}
	first := firstScreenMD(string(r.document(nil).markdown()))
	want := "| image " + strings.Join(observed["candidate"], ", ") + " on the docker runtime |"
	if !strings.Contains(first, want) || strings.Contains(first, "known after") {
		t.Errorf("first screen lacks %q, or shows the placeholder:\n%s", want, first)
	}

	for _, tc := range []struct {
		tg       map[string]any
		observed []string
		want     string
	}{
		{map[string]any{"runtime": "docker", "image": "vllm/vllm-openai:v0.6.3"}, nil, "image vllm/vllm-openai:v0.6.3 on the docker runtime"},
		{map[string]any{"host": map[string]any{"runtime": "kubernetes"}, "image": "(known after step.build.x)"}, nil, "image not observed (known after step.build.x) on the kubernetes runtime"},
		{map[string]any{"runtime": "docker"}, nil, "image (no image declared) on the docker runtime"},
		{map[string]any{"runtime": "sim", "profile": "flare", "time_scale": 0.5}, nil, "rigor's simulator, profile flare, time scale 0.5 (the profile's timings × 0.5: 2× faster than real time)"},
	} {
		if got := servingText(tc.tg, tc.observed); got != tc.want {
			t.Errorf("servingText(%v) = %q, want %q", tc.tg, got, tc.want)
		}
	}
}

// TestNoAfterArmIsNamedAsSuch: when no incumbent arm runs after the candidate, the
// report says the baseline is the block before it alone, wherever it names the
// baseline, never "the mean of … and (no after arm)".
func TestNoAfterArmIsNamedAsSuch(t *testing.T) {
	r := build(t, "verdict-faster")
	r.Summary.Promotion.DriftArm = ""
	md := string(r.document(nil).markdown())
	want := r.Summary.Promotion.Rule.BaselineArm + " alone (no incumbent arm runs after the candidate)"
	if n := strings.Count(md, want); n < 3 {
		t.Errorf("%q appears %d times, want it on the first screen, the verdict and the method", want, n)
	}
	for _, bad := range []string{"no after arm)", "mean of the incumbent before and after", "before (" + r.Summary.Promotion.Rule.BaselineArm + ") and after ("} {
		if strings.Contains(md, bad) {
			t.Errorf("the report still says %q", bad)
		}
	}
}

// TestResultCardCountsPilotRequests: the result card's block count includes the
// pilots, so it names their requests too, beside the matrices' counts.
func TestResultCardCountsPilotRequests(t *testing.T) {
	r := build(t, "clean")
	st := r.Summary.Statistics
	if st.OtherBlocksAttempted == 0 {
		t.Fatal("the clean state has no pilot requests")
	}
	md := string(r.document(nil).markdown())
	want := fmt.Sprintf("Blocks outside a matrix (pilots and the like) sent %d more requests, %d with visible output, not counted above.", st.OtherBlocksAttempted, st.OtherBlocksSucceeded)
	if !strings.Contains(md, want) || !strings.Contains(md, "in the matrices ") {
		t.Errorf("the result card lacks %q", want)
	}
}

// TestRuleWithoutProtectedCells: a rule that protects no cell says so, not that
// "(none)" may regress by 0.00%.
func TestRuleWithoutProtectedCells(t *testing.T) {
	if got := protectedText(nil, 0); got != "no protected cells" {
		t.Errorf("%q", got)
	}
	if got := protectedText([]string{"c1", "c2"}, 0.03); got != "protected cells c1, c2 may regress by at most 3.00%" {
		t.Errorf("%q", got)
	}
	r := build(t, "verdict-faster")
	if len(r.Summary.Promotion.Rule.ProtectedCells) != 0 {
		t.Fatal("verdict-faster's rule must protect no cell for this test")
	}
	if md := string(r.document(nil).markdown()); !strings.Contains(md, "; no protected cells;") || strings.Contains(md, "(none) may regress") {
		t.Error("the rule's paragraph does not say it protects no cell")
	}
}
