package report

import (
	"maps"
	"math"
	"slices"
	"sort"
	"time"
)

// minEnergyCoverage is the share of a block's window the GPU samples must bracket
// before its energy figure may enter a decision rule.
const minEnergyCoverage = 0.9

// DeviceEnergy is one GPU over one block window.
type DeviceEnergy struct {
	Device  string  `json:"device"`
	Samples int     `json:"samples"` // samples used: those in the window and the two bracketing it
	MeanW   float64 `json:"mean_w"`  // time-weighted over the covered part of the window
	PeakW   float64 `json:"peak_w"`  // largest sample used
	Joules  float64 `json:"joules"`  // MeanW × window
}

// BlockEnergy is the GPU energy of one block attempt: power samples integrated
// (trapezoid, linear between samples) over the block window, the window being the
// block clock's UTC anchors in result.json.
type BlockEnergy struct {
	Step      string         `json:"step"`
	Attempt   int            `json:"attempt"`
	Source    string         `json:"source"`    // sim or nvml
	Simulated bool           `json:"simulated"` // the figures come from simulated GPUs
	WindowS   float64        `json:"window_s"`
	IntervalS float64        `json:"sampling_interval_s"` // median gap between samples
	Coverage  float64        `json:"coverage"`            // share of the window between the first and last sample of every device
	Devices   []DeviceEnergy `json:"devices"`
	Joules    float64        `json:"joules"`
	// Output tokens are Σ completion tokens of every record with usage (the same
	// numerator as aggregate output throughput); requests are attempted ones.
	JoulesPerOutputToken *float64 `json:"joules_per_output_token"`
	JoulesPerRequest     *float64 `json:"joules_per_request"`
}

// usable reports whether the figure may enter a decision rule.
func (e *BlockEnergy) usable() bool {
	return e != nil && e.Coverage >= minEnergyCoverage && e.JoulesPerOutputToken != nil
}

// blockEnergy computes the energy of an attempt from its samples and result.json;
// nil when the attempt has no window or no device with two samples.
func blockEnergy(addr string, a *attemptRef) *BlockEnergy {
	if a.result == nil || a.result.Anchors == nil || len(a.gpu) == 0 || a.stats == nil {
		return nil
	}
	ws, we := a.result.Anchors.Before.UTC, a.result.Anchors.After.UTC
	if !we.After(ws) {
		return nil
	}
	e := &BlockEnergy{Step: addr, Attempt: a.N, Source: a.gpu[0].Source, WindowS: we.Sub(ws).Seconds(), Coverage: 1}
	e.Simulated = e.Source == "sim"
	by := map[string][]gpuSample{}
	for _, s := range a.gpu {
		if s.HasT && s.Power != nil {
			by[s.Device] = append(by[s.Device], s)
		}
	}
	var gaps []float64
	for _, dev := range slices.Sorted(maps.Keys(by)) {
		ss := by[dev]
		sort.Slice(ss, func(i, j int) bool { return ss[i].T.Before(ss[j].T) })
		for i := 1; i < len(ss); i++ {
			gaps = append(gaps, ss[i].T.Sub(ss[i-1].T).Seconds())
		}
		d, cov, ok := integrate(dev, ss, ws, we)
		if !ok {
			return nil
		}
		e.Coverage = math.Min(e.Coverage, cov)
		e.Devices = append(e.Devices, d)
		e.Joules += d.Joules
	}
	if len(e.Devices) == 0 {
		return nil
	}
	if len(gaps) > 0 {
		sort.Float64s(gaps)
		e.IntervalS = gaps[len(gaps)/2]
	}
	if a.stats.Completion > 0 {
		v := e.Joules / float64(a.stats.Completion)
		e.JoulesPerOutputToken = &v
	}
	if a.stats.Attempted > 0 {
		v := e.Joules / float64(a.stats.Attempted)
		e.JoulesPerRequest = &v
	}
	return e
}

// integrate is the trapezoid integral of one device's power over [ws, we] ∩ [first
// sample, last sample], with power interpolated linearly at the window's edges; the
// mean over the covered part stands for the whole window, and coverage says how much
// of it the samples bracket.
func integrate(dev string, ss []gpuSample, ws, we time.Time) (DeviceEnergy, float64, bool) {
	d := DeviceEnergy{Device: dev}
	if len(ss) < 2 {
		return d, 0, false
	}
	lo, hi := ss[0].T, ss[len(ss)-1].T
	if lo.Before(ws) {
		lo = ws
	}
	if hi.After(we) {
		hi = we
	}
	if !hi.After(lo) {
		return d, 0, false
	}
	at := func(t time.Time) float64 { // power at t, linear between samples
		for i := 1; i < len(ss); i++ {
			if !ss[i].T.Before(t) {
				a, b := ss[i-1], ss[i]
				span := b.T.Sub(a.T).Seconds()
				if span <= 0 {
					return *b.Power
				}
				f := t.Sub(a.T).Seconds() / span
				return *a.Power + f*(*b.Power-*a.Power)
			}
		}
		return *ss[len(ss)-1].Power
	}
	// Points: the window edges and every sample strictly inside.
	ts := []time.Time{lo}
	for i, s := range ss {
		if s.T.After(lo) && s.T.Before(hi) {
			ts = append(ts, s.T)
		}
		// Samples used: inside the window, and the nearest on each side.
		inside := !s.T.Before(lo) && !s.T.After(hi)
		before := i+1 < len(ss) && !ss[i+1].T.Before(lo) && s.T.Before(lo)
		after := i > 0 && !ss[i-1].T.After(hi) && s.T.After(hi)
		if inside || before || after {
			d.Samples++
			d.PeakW = math.Max(d.PeakW, *s.Power)
		}
	}
	ts = append(ts, hi)
	var joules float64
	for i := 1; i < len(ts); i++ {
		joules += (at(ts[i-1]) + at(ts[i])) / 2 * ts[i].Sub(ts[i-1]).Seconds()
	}
	covered := hi.Sub(lo).Seconds()
	d.MeanW = joules / covered
	d.Joules = d.MeanW * we.Sub(ws).Seconds()
	return d, covered / we.Sub(ws).Seconds(), true
}
