package report

import (
	"bytes"
	"fmt"
	"image/color"
	"maps"
	"slices"
	"sort"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"gonum.org/v1/plot"
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

func render(name, title, caption string, p *plot.Plot, w, h vg.Length) (chart, error) {
	c := chart{Name: name, Title: title, Caption: caption, PNG: "charts/" + name + ".png", SVG: "charts/" + name + ".svg"}
	p.Title.Text = title + "\n" + caption
	p.Title.TextStyle.Font.Size = vg.Points(10)
	for _, f := range []string{"png", "svg"} {
		wt, err := p.WriterTo(w, h, f)
		if err != nil {
			return c, fmt.Errorf("chart %s: %w", name, err)
		}
		var buf bytes.Buffer
		if _, err := wt.WriteTo(&buf); err != nil {
			return c, fmt.Errorf("chart %s: %w", name, err)
		}
		if f == "png" {
			c.pngData = buf.Bytes()
		} else {
			c.svgData = buf.Bytes()
		}
	}
	return c, nil
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
		{"ttft", "Visible TTFT per cell (measured visible successes)", "ms", mTTFT},
		{"tpot", "Capacity TPOT per cell (measured visible successes)", "ms", mTPOT},
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
			{"gpu_power", "GPU power over time, block windows shaded", "W"},
			{"gpu_temperature", "GPU temperature over time, block windows shaded", "°C"},
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

func (r *Report) throughputChart() (chart, bool, error) {
	ev := r.ev
	var names []string
	maxRep := 0
	for _, c := range ev.cells {
		names = append(names, c.Arm+fmt.Sprintf(" c%d", c.Conc))
		for _, b := range c.Blocks {
			if b.measured() {
				maxRep = max(maxRep, b.Repetition)
			}
		}
	}
	if maxRep == 0 || len(names) == 0 {
		return chart{}, false, nil
	}
	p := plot.New()
	p.Y.Label.Text = "aggregate output tok/s (Σ completion tokens / block wall time)"
	p.Y.Min = 0
	w := vg.Points(float64(60) / float64(maxRep+1))
	for rep := 1; rep <= maxRep; rep++ {
		vals := make(plotter.Values, len(ev.cells))
		for i, c := range ev.cells {
			for _, b := range c.Blocks {
				if b.measured() && b.Repetition == rep && b.stats != nil {
					vals[i] = b.stats.AggregateTokS()
				}
			}
		}
		bar, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return chart{}, false, err
		}
		bar.Color = palette[(rep-1)%len(palette)]
		bar.LineStyle.Width = 0
		bar.Offset = w * vg.Length(float64(rep)-float64(maxRep+1)/2)
		p.Add(bar)
		p.Legend.Add(fmt.Sprintf("r%d", rep), bar)
	}
	p.Legend.Top = true
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	c, err := render("throughput", "Block aggregate output throughput by arm and repetition",
		"source: requests.jsonl of each measured block (priming excluded); "+naturalOutput, p, 8*vg.Inch, 4.5*vg.Inch)
	return c, err == nil, err
}

// distChart draws a box plot per cell over the cell's percentile grid p0…p100, so
// the chart costs the same for 10 or 10 million samples.
func (r *Report) distChart(name, title, unit string, metric int) (chart, bool, error) {
	ev := r.ev
	p := plot.New()
	p.Y.Label.Text = unit
	var names []string
	any := false
	for i, c := range ev.cells {
		var xs []float64
		for _, b := range c.Blocks {
			if b.measured() && b.stats != nil {
				xs = append(xs, b.stats.vals[metric]...)
			}
		}
		names = append(names, c.Arm+fmt.Sprintf(" c%d", c.Conc))
		if len(xs) == 0 {
			continue
		}
		any = true
		sort.Float64s(xs)
		grid := make(plotter.Values, 101)
		for q := range grid {
			grid[q] = loadgen.Percentile(xs, float64(q)/100)
		}
		bp, err := plotter.NewBoxPlot(vg.Points(18), float64(i), grid)
		if err != nil {
			return chart{}, false, err
		}
		bp.FillColor = palette[i%len(palette)]
		p.Add(bp)
	}
	if !any {
		return chart{}, false, nil
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.5
	p.X.Tick.Label.XAlign = draw.XRight
	c, err := render(name, title, "source: requests.jsonl of measured blocks, boxes over the p0..p100 grid; "+naturalOutput,
		p, 8*vg.Inch, 4.5*vg.Inch)
	return c, err == nil, err
}

// windows shades block windows on a time axis.
type windows struct {
	spans [][2]float64
}

func (w windows) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	for _, s := range w.spans {
		x0, x1 := trX(s[0]), trX(s[1])
		c.FillPolygon(color.RGBA{R: 0xcc, G: 0xcc, B: 0xcc, A: 0x80}, []vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y},
		})
	}
}

func (r *Report) gpuChart(name, title, unit string) (chart, error) {
	ev := r.ev
	t0 := ev.gpuSamples[0].T
	for _, s := range ev.gpuSamples {
		if s.HasT && s.T.Before(t0) {
			t0 = s.T
		}
	}
	p := plot.New()
	p.X.Label.Text = "seconds since the first sample"
	p.Y.Label.Text = unit
	var w windows
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
	}
	p.Add(w)
	byDev := map[string]plotter.XYs{}
	for _, s := range ev.gpuSamples {
		v := s.Power
		if name == "gpu_temperature" {
			v = s.Temp
		}
		if v == nil || !s.HasT {
			continue
		}
		byDev[s.Device] = append(byDev[s.Device], plotter.XY{X: s.T.Sub(t0).Seconds(), Y: *v})
	}
	for i, d := range slices.Sorted(maps.Keys(byDev)) {
		xy := byDev[d]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, err := plotter.NewLine(xy)
		if err != nil {
			return chart{}, err
		}
		l.Color = palette[i%len(palette)]
		p.Add(l)
		p.Legend.Add("GPU "+d, l)
	}
	return render(name, title, "source: gpu.jsonl sampled during each block (shaded); "+naturalOutput, p, 8*vg.Inch, 4*vg.Inch)
}

// noiseChart plots every measured block's decision metric in run order, relative to
// the baseline arm's mean at the same concurrency, coloured by arm and shaped by
// concurrency: drift shows as the incumbent's later blocks leaving zero.
func (r *Report) noiseChart() (chart, bool, error) {
	metric := "aggregate_output_tok_s"
	if ru := r.ev.plan.Campaign.Decision; ru != nil {
		metric = ru.PrimaryMetric
	}
	pts := r.runOrder(metric)
	if len(pts) == 0 {
		return chart{}, false, nil
	}
	p := plot.New()
	p.X.Label.Text = "run order (journal order of block starts)"
	p.Y.Label.Text = "% relative to the baseline arm's mean at the same C"
	type key struct {
		arm  int
		name string
		conc int
	}
	series := map[key]plotter.XYs{}
	var keys []key
	for i, pt := range pts {
		if pt.rel == nil {
			continue
		}
		k := key{pt.armIndex, pt.arm, pt.conc}
		if _, ok := series[k]; !ok {
			keys = append(keys, k)
		}
		series[k] = append(series[k], plotter.XY{X: float64(i + 1), Y: *pt.rel * 100})
	}
	if len(keys) == 0 {
		return chart{}, false, nil
	}
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{}}
	concIx := map[int]int{}
	for _, k := range keys {
		if _, ok := concIx[k.conc]; !ok {
			concIx[k.conc] = len(concIx)
		}
	}
	if v := r.Summary.Promotion; v.Rule != nil && v.DriftArm != "" {
		for _, y := range []float64{v.MaxDrift * 100, -v.MaxDrift * 100} {
			l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: y}, {X: float64(len(pts)), Y: y}})
			if err != nil {
				return chart{}, false, err
			}
			l.Color = color.Gray{Y: 0x99}
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			p.Add(l)
		}
	}
	for _, k := range keys {
		sc, err := plotter.NewScatter(series[k])
		if err != nil {
			return chart{}, false, err
		}
		sc.GlyphStyle.Color = palette[k.arm%len(palette)]
		sc.GlyphStyle.Shape = shapes[concIx[k.conc]%len(shapes)]
		sc.GlyphStyle.Radius = vg.Points(3.5)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("%s c%d", k.name, k.conc), sc)
	}
	p.Legend.Top = true
	c, err := render("noise_drift", "Every measured block in run order, by arm ("+metric+")",
		"source: requests.jsonl (and gpu.jsonl for energy) of each measured block attempt; dashed: the drift bound; "+naturalOutput, p, 8*vg.Inch, 4.5*vg.Inch)
	return c, err == nil, err
}
