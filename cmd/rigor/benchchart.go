package main

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/rigor-bench/rigor/steps"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// sweepResult is sweep.json: the levels of a sweep, each with its figures, and where
// each stands on the throughput-latency Pareto front.
type sweepResult struct {
	Rigor     string `json:"rigor"`
	Dimension string `json:"dimension"` // concurrency or rate
	Dir       string `json:"dir"`
	// Percentile is the latency percentile of the table, the chart and the front:
	// p50 when --percentiles has it, else the first one.
	Percentile float64       `json:"percentile"`
	Levels     []sweepLevel  `json:"levels"`
	Chart      *sweepChart   `json:"chart"` // null with fewer than two levels with figures
	Settings   benchSettings `json:"settings"`
}

// benchSettings are the flags of the sweep's command, as each result.json has them.
type benchSettings = map[string]string

type sweepLevel struct {
	Name        string             `json:"name"`
	Dir         string             `json:"dir"` // relative to the sweep directory
	Concurrency int                `json:"concurrency"`
	Rate        *float64           `json:"rate"`
	Stopped     string             `json:"stopped"`
	Figures     steps.LoadFigures  `json:"figures"`
	Errors      []steps.LoadErrors `json:"errors"`
	// Pareto: no other level has at least its output throughput at no more of its
	// latency, and beats it on one of them (TTFT and TPOT fronts apart).
	Pareto struct {
		TTFT bool `json:"ttft"`
		TPOT bool `json:"tpot"`
	} `json:"pareto"`
}

type sweepChart struct {
	PNG string `json:"png"`
	SVG string `json:"svg"`
}

// writeSweep writes sweep.json and the chart of a sweep's finished levels.
func writeSweep(p *benchPlan, runs []levelRun) (*sweepResult, error) {
	s := &sweepResult{Rigor: buildVersion(), Dimension: p.sweep, Dir: p.out, Percentile: p.figures.Percentiles[0], Settings: p.settings}
	if slices.Contains(p.figures.Percentiles, 50) {
		s.Percentile = 50
	}
	for _, r := range runs {
		b := r.result.Bench
		s.Levels = append(s.Levels, sweepLevel{Name: r.level.name, Dir: r.level.name, Concurrency: b.Level.Concurrency, Rate: b.Level.Rate, Stopped: b.Stopped, Figures: b.Figures, Errors: b.Errors})
	}
	ttft, tpot := s.points(func(f steps.LoadFigures) steps.LoadStats { return f.TTFTMS }), s.points(func(f steps.LoadFigures) steps.LoadStats { return f.TPOTMS })
	for i, on := range paretoFront(ttft) {
		s.Levels[i].Pareto.TTFT = on
	}
	for i, on := range paretoFront(tpot) {
		s.Levels[i].Pareto.TPOT = on
	}
	if countPoints(ttft) >= 2 || countPoints(tpot) >= 2 {
		png, svg, err := s.chart(ttft, tpot)
		if err != nil {
			return nil, err
		}
		for name, data := range map[string][]byte{"sweep.png": png, "sweep.svg": svg} {
			if err := os.WriteFile(filepath.Join(p.out, name), data, 0o644); err != nil {
				return nil, err
			}
		}
		s.Chart = &sweepChart{PNG: "sweep.png", SVG: "sweep.svg"}
	}
	return s, writeJSONFile(filepath.Join(p.out, "sweep.json"), s)
}

// point is one level on a throughput-latency plane; ok is false without a latency.
type point struct {
	latency, throughput float64
	ok                  bool
}

func (s *sweepResult) points(stat func(steps.LoadFigures) steps.LoadStats) []point {
	out := make([]point, len(s.Levels))
	for i, l := range s.Levels {
		if v := pick(stat(l.Figures), s.Percentile); v != nil {
			out[i] = point{*v, l.Figures.OutputTokenThroughput, true}
		}
	}
	return out
}

func countPoints(ps []point) int {
	n := 0
	for _, p := range ps {
		if p.ok {
			n++
		}
	}
	return n
}

// paretoFront marks the points no other point dominates: higher or equal throughput
// at lower or equal latency, strictly better in one. A point without a latency is
// never on the front.
func paretoFront(ps []point) []bool {
	on := make([]bool, len(ps))
	for i, p := range ps {
		if !p.ok {
			continue
		}
		on[i] = true
		for j, q := range ps {
			if j != i && q.ok && q.throughput >= p.throughput && q.latency <= p.latency && (q.throughput > p.throughput || q.latency < p.latency) {
				on[i] = false
				break
			}
		}
	}
	return on
}

var (
	pointColor = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	frontColor = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// chart draws output throughput against TTFT and against TPOT, side by side, every
// level a labelled point and the Pareto front a line, as PNG and SVG.
func (s *sweepResult) chart(ttft, tpot []point) (png, svg []byte, err error) {
	pct := "p" + strconv.FormatFloat(s.Percentile, 'g', -1, 64)
	var plots []*plot.Plot
	for _, panel := range []struct {
		name string
		pts  []point
	}{{"TTFT", ttft}, {"TPOT", tpot}} {
		p, err := s.panel(fmt.Sprintf("output throughput vs %s %s", panel.name, pct), fmt.Sprintf("%s %s (ms)", panel.name, pct), panel.pts)
		if err != nil {
			return nil, nil, err
		}
		plots = append(plots, p)
	}
	w, h := 10*vg.Inch, 4.5*vg.Inch
	draw2 := func(dc draw.Canvas) {
		title := fmt.Sprintf("rigor bench %s sweep: each level a point, the Pareto front in red (no level has more throughput at less latency)", s.Dimension)
		ts := plot.New().Title.TextStyle
		ts.Font.Size, ts.XAlign, ts.YAlign = vg.Points(10), draw.XCenter, draw.YTop
		dc.FillText(ts, vg.Point{X: dc.Center().X, Y: dc.Max.Y - 4}, title)
		dc.Max.Y -= 18
		tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 2, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
		canvases := plot.Align([][]*plot.Plot{plots}, tiles, dc)
		for i, p := range plots {
			p.Draw(canvases[0][i])
		}
	}
	ic := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120))
	dc := draw.New(ic)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	draw2(dc)
	var pb bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(&pb); err != nil {
		return nil, nil, err
	}
	sc := vgsvg.New(w, h)
	draw2(draw.New(sc))
	var sb bytes.Buffer
	if _, err := sc.WriteTo(&sb); err != nil {
		return nil, nil, err
	}
	return pb.Bytes(), sb.Bytes(), nil
}

func (s *sweepResult) panel(title, xlabel string, pts []point) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "output tok/s (Σ completion tokens / wall time)"
	p.Y.Min, p.X.Min = 0, 0
	front := paretoFront(pts)
	var all, edge plotter.XYs
	var labels []string
	for i, pt := range pts {
		if !pt.ok {
			continue
		}
		all = append(all, plotter.XY{X: pt.latency, Y: pt.throughput})
		labels = append(labels, s.Levels[i].Name)
		if front[i] {
			edge = append(edge, plotter.XY{X: pt.latency, Y: pt.throughput})
		}
	}
	slices.SortFunc(edge, func(a, b plotter.XY) int {
		switch {
		case a.X < b.X:
			return -1
		case a.X > b.X:
			return 1
		}
		return 0
	})
	sc, err := plotter.NewScatter(all)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle = draw.GlyphStyle{Color: pointColor, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
	line, err := plotter.NewLine(edge)
	if err != nil {
		return nil, err
	}
	line.Color, line.Width = frontColor, vg.Points(1.5)
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: all, Labels: labels})
	if err != nil {
		return nil, err
	}
	lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(3)}
	p.Add(plotter.NewGrid(), line, sc, lb)
	p.Legend.Add("level", sc)
	p.Legend.Add("Pareto front", line)
	p.Legend.Top, p.Legend.Left = false, false
	// Room for the labels of the outermost points.
	p.X.Max *= 1.12
	p.Y.Max *= 1.1
	return p, nil
}
