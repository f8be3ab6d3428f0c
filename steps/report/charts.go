package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// chart is one rendered chart in both formats.
type chart struct {
	Name    string
	Title   string
	Caption string // data source and what the chart is not
	PNG     string // paths relative to the report directory
	SVG     string
	pngData []byte
	svgData []byte
}

const naturalOutput = "natural output, not fixed-token work"

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// figure is a chart of one or more panels under one title, one short source line
// and one legend. It is laid out by measuring its text, so no title, legend entry or
// axis label falls outside the image, and panels share the page as small multiples
// (one per concurrency, or per GPU) instead of crowding one plot.
type figure struct {
	name, title, source string
	panels              []*plot.Plot
	rows                int // panels stacked in rows (one column) instead of side by side
	legend              []legendItem
	w, h                vg.Length
	// firstTick is the first panel's first category label, drawn rotated and
	// right-aligned on its tick: the left margin grows until it fits.
	firstTick string
}

// tickRotation is the angle of category labels, in radians.
const tickRotation = 0.5

// legendItem is one legend entry: a filled square (an arm's colour), a line or a
// glyph, then the label.
type legendItem struct {
	label string
	fill  color.Color
	line  *draw.LineStyle
	glyph *draw.GlyphStyle
}

const figPad = vg.Length(6)

func textStyle(size float64, c color.Color) draw.TextStyle {
	return draw.TextStyle{Color: c, Font: font.From(plot.DefaultFont, vg.Points(size)), Handler: plot.DefaultTextHandler, YAlign: draw.YTop}
}

// draw lays the figure out on a canvas of its size.
func (f *figure) draw(dc draw.Canvas) {
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	y := dc.Max.Y - figPad
	title := textStyle(11, color.Black)
	dc.FillText(title, vg.Point{X: dc.Min.X + figPad, Y: y}, f.title)
	y -= title.Height(f.title) + 2
	src := textStyle(8, color.Gray{Y: 0x55})
	dc.FillText(src, vg.Point{X: dc.Min.X + figPad, Y: y}, f.source)
	y -= src.Height(f.source) + 4
	// The legend flows left to right and wraps: every entry stays inside the image.
	lab := textStyle(9, color.Black)
	rowH := lab.Height("Xg") + 3
	x, sw := dc.Min.X+figPad, vg.Length(14)
	for i, it := range f.legend {
		w := sw + 4 + lab.Width(it.label) + 12
		if i > 0 && x+w > dc.Max.X-figPad {
			x, y = dc.Min.X+figPad, y-rowH
		}
		mid := y - rowH/2 + 1
		switch {
		case it.fill != nil:
			dc.FillPolygon(it.fill, []vg.Point{{X: x, Y: mid - 4}, {X: x + sw, Y: mid - 4}, {X: x + sw, Y: mid + 4}, {X: x, Y: mid + 4}})
		case it.line != nil:
			dc.StrokeLine2(*it.line, x, mid, x+sw, mid)
		case it.glyph != nil:
			dc.DrawGlyphNoClip(*it.glyph, vg.Point{X: x + sw/2, Y: mid})
		}
		dc.FillText(lab, vg.Point{X: x + sw + 4, Y: y}, it.label)
		x += w
	}
	if len(f.legend) > 0 {
		y -= rowH + 2
	}
	area := dc
	area.Max.Y = y
	left := figPad
	if f.firstTick != "" {
		// The y axis (tick labels and its title) and half a category lie left of the
		// first tick: about 40 pt.
		need := textStyle(8, nil).Width(f.firstTick)*vg.Length(math.Cos(tickRotation)) - 40
		left = max(left, need)
	}
	t := draw.Tiles{Rows: 1, Cols: len(f.panels), PadX: vg.Points(14), PadLeft: left, PadRight: figPad + 4, PadBottom: figPad}
	grid := [][]*plot.Plot{f.panels}
	if f.rows > 0 {
		t = draw.Tiles{Rows: len(f.panels), Cols: 1, PadY: vg.Points(10), PadLeft: figPad, PadRight: figPad + 4, PadBottom: figPad}
		grid = nil
		for _, p := range f.panels {
			grid = append(grid, []*plot.Plot{p})
		}
	}
	cs := plot.Align(grid, t, area)
	for j := range grid {
		for i := range grid[j] {
			grid[j][i].Draw(cs[j][i])
		}
	}
}

// render draws a figure as PNG and SVG.
func render(f figure) (chart, error) {
	c := chart{Name: f.name, Title: f.title, Caption: f.source, PNG: "charts/" + f.name + ".png", SVG: "charts/" + f.name + ".svg"}
	for _, format := range []string{"png", "svg"} {
		cv, err := draw.NewFormattedCanvas(f.w, f.h, format)
		if err != nil {
			return c, fmt.Errorf("chart %s: %w", f.name, err)
		}
		f.draw(draw.New(cv))
		var buf bytes.Buffer
		if _, err := cv.WriteTo(&buf); err != nil {
			return c, fmt.Errorf("chart %s: %w", f.name, err)
		}
		if format == "png" {
			c.pngData = buf.Bytes()
		} else {
			c.svgData = buf.Bytes()
		}
	}
	return c, nil
}

// panel is one small multiple: a plot with a short title and readable fonts.
func panel(title string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(10)
	p.Title.Padding = vg.Points(2)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = vg.Points(9)
		a.Tick.Label.Font.Size = vg.Points(8)
	}
	return p
}

// armColor is an arm's colour in every chart: its order among the matrix's cells.
func (r *Report) armColor(arm string) color.Color {
	seen := map[string]bool{}
	i := 0
	for _, c := range r.ev.cells {
		if seen[c.Arm] {
			continue
		}
		if c.Arm == arm {
			return palette[i%len(palette)]
		}
		seen[c.Arm] = true
		i++
	}
	return color.Gray{Y: 0x88}
}

// arms and concs list the matrix's arms and concurrencies in cell order.
func (r *Report) arms() []string {
	var out []string
	for _, c := range r.ev.cells {
		if !slices.Contains(out, c.Arm) {
			out = append(out, c.Arm)
		}
	}
	return out
}

func (r *Report) concs() []int {
	var out []int
	for _, c := range r.ev.cells {
		if !slices.Contains(out, c.Conc) {
			out = append(out, c.Conc)
		}
	}
	sort.Ints(out)
	return out
}

func (r *Report) armLegend(arms []string) []legendItem {
	var out []legendItem
	for _, a := range arms {
		out = append(out, legendItem{label: a, fill: r.armColor(a)})
	}
	return out
}

// charts renders every chart the evidence supports.
func (r *Report) charts() ([]chart, error) {
	var out []chart
	ev := r.ev
	if c, ok, err := r.throughputChart(); err != nil {
		return nil, err
	} else if ok {
		out = append(out, c)
	}
	if c, ok, err := r.noiseChart(); err != nil {
		return nil, err
	} else if ok {
		out = append(out, c)
	}
	for _, m := range []struct {
		name, title, unit string
		metric            int
	}{
		{"ttft", "Visible TTFT per request, by arm", "visible TTFT, ms", mTTFT},
		{"tpot", "Capacity TPOT per request, by arm", "capacity TPOT, ms", mTPOT},
	} {
		c, ok, err := r.distChart(m.name, m.title, m.unit, m.metric)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, c)
		}
	}
	if len(ev.gpuSamples) > 0 {
		for _, m := range []struct{ name, title, unit string }{
			{"gpu_power", "GPU power over time, block windows shaded by arm", "W"},
			{"gpu_temperature", "GPU temperature over time, block windows shaded by arm", "°C"},
		} {
			c, err := r.gpuChart(m.name, m.title, m.unit)
			if err != nil {
				return nil, err
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// throughputChart shows each measured block's aggregate throughput: one panel per
// concurrency, a bar per arm at its mean coloured by the arm, a dot per repetition.
func (r *Report) throughputChart() (chart, bool, error) {
	ev := r.ev
	arms, concs := r.arms(), r.concs()
	var panels []*plot.Plot
	any := false
	for _, conc := range concs {
		p := panel(fmt.Sprintf("C%d", conc))
		p.Y.Label.Text = "output tok/s (block aggregate)"
		p.Y.Min = 0
		for i, arm := range arms {
			var xs []float64
			for _, c := range ev.cells {
				if c.Arm != arm || c.Conc != conc {
					continue
				}
				for _, b := range c.Blocks {
					if b.inStatistics() && b.stats != nil && b.stats.WallS() > 0 {
						xs = append(xs, b.stats.AggregateTokS())
					}
				}
			}
			if len(xs) == 0 {
				continue
			}
			any = true
			mean := 0.0
			for _, x := range xs {
				mean += x
			}
			mean /= float64(len(xs))
			bar, err := plotter.NewBarChart(plotter.Values{mean}, vg.Points(22))
			if err != nil {
				return chart{}, false, err
			}
			bar.XMin = float64(i)
			bar.Color = r.armColor(arm)
			bar.LineStyle.Width = 0
			p.Add(bar)
			pts := make(plotter.XYs, len(xs))
			for k, x := range xs {
				pts[k] = plotter.XY{X: float64(i), Y: x}
			}
			sc, err := plotter.NewScatter(pts)
			if err != nil {
				return chart{}, false, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
		p.NominalX(arms...)
		p.X.Tick.Label.Rotation = tickRotation
		p.X.Tick.Label.XAlign = draw.XRight
		panels = append(panels, p)
	}
	if !any {
		return chart{}, false, nil
	}
	lg := append(r.armLegend(arms), legendItem{label: "one measured block", glyph: &draw.GlyphStyle{Color: color.Black, Radius: vg.Points(2.5), Shape: draw.CircleGlyph{}}})
	c, err := render(figure{name: "throughput", title: "Aggregate output throughput per measured block (bar: mean of the repetitions)",
		source: "source: requests.jsonl of measured blocks (Σ completion tokens / block wall time)",
		panels: panels, legend: lg, w: 8 * vg.Inch, h: 4.5 * vg.Inch, firstTick: arms[0]})
	return c, err == nil, err
}

// distChart draws a box per arm over the cell's percentile grid p0…p100, one panel
// per concurrency, so the chart costs the same for 10 or 10 million samples.
func (r *Report) distChart(name, title, unit string, metric int) (chart, bool, error) {
	ev := r.ev
	arms, concs := r.arms(), r.concs()
	var panels []*plot.Plot
	any := false
	for _, conc := range concs {
		p := panel(fmt.Sprintf("C%d", conc))
		p.Y.Label.Text = unit
		for i, arm := range arms {
			var xs []float64
			for _, c := range ev.cells {
				if c.Arm != arm || c.Conc != conc {
					continue
				}
				for _, b := range c.Blocks {
					if b.inStatistics() && b.stats != nil {
						xs = append(xs, b.stats.vals[metric]...)
					}
				}
			}
			if len(xs) == 0 {
				continue
			}
			any = true
			sort.Float64s(xs)
			grid := make(plotter.Values, 101)
			for q := range grid {
				grid[q] = loadgen.Percentile(xs, float64(q)/100)
			}
			bp, err := plotter.NewBoxPlot(vg.Points(20), float64(i), grid)
			if err != nil {
				return chart{}, false, err
			}
			bp.FillColor = r.armColor(arm)
			bp.GlyphStyle.Radius = vg.Points(1.5)
			p.Add(bp)
		}
		p.NominalX(arms...)
		p.X.Tick.Label.Rotation = tickRotation
		p.X.Tick.Label.XAlign = draw.XRight
		panels = append(panels, p)
	}
	if !any {
		return chart{}, false, nil
	}
	c, err := render(figure{name: name, title: title,
		source: "source: requests.jsonl of measured blocks; box over the p0–p100 grid: quartiles, whiskers to 1.5 IQR",
		panels: panels, legend: r.armLegend(arms), w: 8 * vg.Inch, h: 4.5 * vg.Inch, firstTick: arms[0]})
	return c, err == nil, err
}

// windows shades block windows on a time axis, each in its arm's colour (grey for
// a block outside the matrix, such as a pilot).
type windows struct {
	spans  [][2]float64
	colors []color.Color
}

func (w windows) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	for i, s := range w.spans {
		x0, x1 := trX(s[0]), trX(s[1])
		if x1-x0 < 1 {
			x1 = x0 + 1 // a window shorter than a sample interval still shows
		}
		c.FillPolygon(w.colors[i], c.ClipPolygonX([]vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y},
		}))
	}
}

// light is a colour at a quarter of its strength over white: a shade that lines
// drawn over it stay readable on.
func light(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(0xff - (0xff-v>>8)*30/100) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 0xff}
}

// gpuChart plots one GPU reading over the campaign, one panel per device stacked
// so their time axes line up, block windows shaded in their arm's colour.
func (r *Report) gpuChart(name, title, unit string) (chart, error) {
	ev := r.ev
	t0 := ev.gpuSamples[0].T
	for _, s := range ev.gpuSamples {
		if s.HasT && s.T.Before(t0) {
			t0 = s.T
		}
	}
	var w windows
	shaded := map[string]bool{}
	for _, b := range ev.blocks {
		if len(b.gpu) == 0 {
			continue
		}
		lo, hi := b.gpu[0].T, b.gpu[0].T
		for _, s := range b.gpu {
			if s.T.Before(lo) {
				lo = s.T
			}
			if s.T.After(hi) {
				hi = s.T
			}
		}
		w.spans = append(w.spans, [2]float64{lo.Sub(t0).Seconds(), hi.Sub(t0).Seconds()})
		col := color.Color(color.Gray{Y: 0xe4})
		if b.Arm != "" {
			col = light(r.armColor(b.Arm))
			shaded[b.Arm] = true
		}
		w.colors = append(w.colors, col)
	}
	byDev := map[string]plotter.XYs{}
	limit := map[string]float64{}
	for _, s := range ev.gpuSamples {
		v := s.Power
		if name == "gpu_temperature" {
			v = s.Temp
		}
		if v == nil || !s.HasT {
			continue
		}
		byDev[s.Device] = append(byDev[s.Device], plotter.XY{X: s.T.Sub(t0).Seconds(), Y: *v})
		if s.Limit != nil && name == "gpu_power" {
			limit[s.Device] = max(limit[s.Device], *s.Limit)
		}
	}
	line := draw.LineStyle{Color: color.Black, Width: vg.Points(1.2)}
	limStyle := draw.LineStyle{Color: color.RGBA{R: 0xc0, A: 0xff}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	var panels []*plot.Plot
	devs := slices.Sorted(maps.Keys(byDev))
	for _, d := range devs {
		xy := byDev[d]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		p := panel("GPU " + d)
		p.Y.Label.Text = unit
		p.X.Label.Text = "seconds since the first sample"
		p.Add(w)
		l, err := plotter.NewLine(xy)
		if err != nil {
			return chart{}, err
		}
		l.LineStyle = line
		p.Add(l)
		if lim, ok := limit[d]; ok {
			ll, err := plotter.NewLine(plotter.XYs{{X: xy[0].X, Y: lim}, {X: xy[len(xy)-1].X, Y: lim}})
			if err != nil {
				return chart{}, err
			}
			ll.LineStyle = limStyle
			p.Add(ll)
			p.Y.Max = max(p.Y.Max, lim*1.05)
		}
		p.Y.Min = 0
		panels = append(panels, p)
	}
	lg := []legendItem{{label: unitName(name), line: &line}}
	if len(limit) > 0 {
		lg = append(lg, legendItem{label: "power limit", line: &limStyle})
	}
	for _, a := range r.arms() {
		if shaded[a] {
			lg = append(lg, legendItem{label: a, fill: light(r.armColor(a))})
		}
	}
	if slices.ContainsFunc(ev.blocks, func(b *blockRef) bool { return len(b.gpu) > 0 && b.Arm == "" }) {
		lg = append(lg, legendItem{label: "pilot or other block", fill: color.Gray{Y: 0xe4}})
	}
	h := vg.Length(1.1*vg.Inch) + vg.Length(len(panels))*1.9*vg.Inch
	return render(figure{name: name, title: title, source: "source: gpu.jsonl of every block, sampled during its window",
		panels: panels, rows: len(panels), legend: lg, w: 8 * vg.Inch, h: h})
}

// zeroTicks labels an axis on round steps through zero, so the baseline's 0 is
// always a labelled tick on the run-order chart.
type zeroTicks struct{}

func (zeroTicks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if span <= 0 {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 3, 64)}}
	}
	step := math.Pow(10, math.Floor(math.Log10(span/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0
		}
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
		for k := 1; k < 5 && v+step*float64(k)/5 <= hi; k++ {
			out = append(out, plot.Tick{Value: v + step*float64(k)/5})
		}
	}
	return out
}

func unitName(chart string) string {
	if chart == "gpu_temperature" {
		return "temperature"
	}
	return "power"
}

// noiseChart plots every measured block's decision metric in run order, relative to
// the baseline arm's mean at the same concurrency, one panel per concurrency,
// coloured by arm: drift shows as the incumbent's later blocks leaving zero.
func (r *Report) noiseChart() (chart, bool, error) {
	metric := "aggregate_output_tok_s"
	if ru := r.ev.plan.Campaign.Decision; ru != nil {
		metric = ru.PrimaryMetric
	}
	pts := r.runOrder(metric)
	if len(pts) == 0 {
		return chart{}, false, nil
	}
	byConc := map[int]map[string]plotter.XYs{}
	for i, pt := range pts {
		if pt.rel == nil {
			continue
		}
		if byConc[pt.conc] == nil {
			byConc[pt.conc] = map[string]plotter.XYs{}
		}
		byConc[pt.conc][pt.arm] = append(byConc[pt.conc][pt.arm], plotter.XY{X: float64(i + 1), Y: *pt.rel * 100})
	}
	if len(byConc) == 0 {
		return chart{}, false, nil
	}
	bound := 0.0
	if v := r.Summary.Promotion; v.Rule != nil && v.DriftArm != "" {
		bound = v.MaxDrift * 100
	}
	dash := draw.LineStyle{Color: color.Gray{Y: 0x77}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}
	zero := draw.LineStyle{Color: color.Gray{Y: 0xbb}, Width: vg.Points(0.8)}
	var panels []*plot.Plot
	arms := r.arms()
	for _, conc := range slices.Sorted(maps.Keys(byConc)) {
		p := panel(fmt.Sprintf("C%d", conc))
		p.X.Label.Text = "run order (block start)"
		p.Y.Label.Text = "% vs baseline arm's mean"
		p.Y.Tick.Marker = zeroTicks{}
		p.X.Min, p.X.Max = 0.5, float64(len(pts))+0.5
		lines := []struct {
			y  float64
			st draw.LineStyle
		}{{0, zero}}
		if bound > 0 {
			lines = append(lines, struct {
				y  float64
				st draw.LineStyle
			}{bound, dash}, struct {
				y  float64
				st draw.LineStyle
			}{-bound, dash})
		}
		for _, ln := range lines {
			l, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: ln.y}, {X: float64(len(pts)) + 0.5, Y: ln.y}})
			if err != nil {
				return chart{}, false, err
			}
			l.LineStyle = ln.st
			p.Add(l)
		}
		for _, arm := range arms {
			xy := byConc[conc][arm]
			if len(xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return chart{}, false, err
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: r.armColor(arm), Radius: vg.Points(4), Shape: draw.CircleGlyph{}}
			p.Add(sc)
		}
		panels = append(panels, p)
	}
	lg := r.armLegend(arms)
	if bound > 0 {
		lg = append(lg, legendItem{label: fmt.Sprintf("drift bound ±%s", pct(bound/100)), line: &dash})
	}
	c, err := render(figure{name: "noise_drift", title: "Every measured block in run order, by arm (" + metric + ")",
		source: "source: requests.jsonl (gpu.jsonl for energy) of every measured block attempt; 0 = the baseline arm's mean at that C",
		panels: panels, legend: lg, w: 8 * vg.Inch, h: 4.5 * vg.Inch})
	return c, err == nil, err
}
