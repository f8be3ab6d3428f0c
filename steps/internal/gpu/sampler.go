package gpu

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// DefaultInterval is the sampling interval when a host declares none.
const DefaultInterval = time.Second

// Sampler records every device of a Source at a fixed interval into a JSON Lines file:
// one row per device per sample, or one error row when a snapshot fails.
type Sampler struct {
	src      Source
	interval time.Duration
	start    time.Time

	mu       sync.Mutex
	f        *os.File
	w        *bufio.Writer
	seq      int
	base     map[string]Device // by UUID, from the first sample
	baseIdx  []string          // UUIDs in index order, first sample
	last     map[string][2]float64
	report   Report
	writeErr error

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// Row is one line of gpu.jsonl.
type Row struct {
	Seq      int     `json:"seq"`
	Time     string  `json:"time"` // UTC, RFC 3339 with nanoseconds
	ElapsedS float64 `json:"elapsed_s"`
	Source   string  `json:"source"`
	Error    string  `json:"error,omitempty"`
	*Device
}

// Change is a power limit that moved during the block.
type Change struct {
	Seq   int     `json:"seq"`
	Time  string  `json:"time"`
	Index int     `json:"index"`
	UUID  string  `json:"uuid"`
	Field string  `json:"field"` // power_limit_w or enforced_power_limit_w
	FromW float64 `json:"from_w"`
	ToW   float64 `json:"to_w"`
}

// Report is what a sampler saw.
type Report struct {
	Source    string      `json:"source"`
	IntervalS float64     `json:"interval_s"`
	Samples   int         `json:"samples"`    // snapshots that succeeded
	PerDevice map[int]int `json:"per_device"` // rows per device index
	Failures  []string    `json:"failures,omitempty"`
	Changes   []Change    `json:"limit_changes,omitempty"`
	DeviceSet string      `json:"device_set_change,omitempty"`
	Power     []PowerSumm `json:"power"`
	DurationS float64     `json:"duration_s"`
	powerAcc  map[int]*PowerSumm
}

// PowerSumm summarises one device's power over the block.
type PowerSumm struct {
	Index int     `json:"index"`
	UUID  string  `json:"uuid"`
	MinW  float64 `json:"min_w"`
	MeanW float64 `json:"mean_w"`
	MaxW  float64 `json:"max_w"`
	n     int
}

// StartSampler takes the first sample at once (so a source that cannot be read fails
// before the block sends anything) and then one per interval until Stop.
func StartSampler(src Source, path string, interval time.Duration) (*Sampler, []Device, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	first, err := src.Snapshot()
	if err != nil {
		return nil, nil, err
	}
	if len(first) == 0 {
		return nil, nil, fmt.Errorf("%s reports no GPU", src.Kind())
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	s := &Sampler{
		src: src, interval: interval, start: time.Now(), f: f, w: bufio.NewWriter(f),
		base: map[string]Device{}, last: map[string][2]float64{},
		stop: make(chan struct{}), done: make(chan struct{}),
		report: Report{Source: src.Kind(), IntervalS: interval.Seconds(), PerDevice: map[int]int{}, powerAcc: map[int]*PowerSumm{}},
	}
	for _, d := range first {
		s.base[d.UUID] = d
		s.baseIdx = append(s.baseIdx, d.UUID)
		s.last[d.UUID] = [2]float64{d.PowerLimitW, d.EnforcedPowerLimitW}
	}
	s.record(time.Now(), first, nil)
	go s.loop()
	return s, first, nil
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			devs, err := s.src.Snapshot()
			s.record(time.Now(), devs, err)
		}
	}
}

func (s *Sampler) record(now time.Time, devs []Device, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		return // stopped: nothing is written after Stop returned
	}
	row := Row{Seq: s.seq, Time: now.UTC().Format(time.RFC3339Nano), ElapsedS: now.Sub(s.start).Seconds(), Source: s.src.Kind()}
	s.seq++
	if err != nil {
		row.Error = err.Error()
		s.report.Failures = append(s.report.Failures, fmt.Sprintf("sample %d: %v", row.Seq, err))
		s.writeRow(row)
		return
	}
	s.report.Samples++
	var uuids []string
	for i := range devs {
		d := devs[i]
		r := row
		r.Device = &d
		s.writeRow(r)
		s.report.PerDevice[d.Index]++
		uuids = append(uuids, d.UUID)
		acc := s.report.powerAcc[d.Index]
		if acc == nil {
			acc = &PowerSumm{Index: d.Index, UUID: d.UUID, MinW: d.PowerW, MaxW: d.PowerW}
			s.report.powerAcc[d.Index] = acc
		}
		acc.MinW, acc.MaxW = min(acc.MinW, d.PowerW), max(acc.MaxW, d.PowerW)
		acc.MeanW += d.PowerW
		acc.n++
		prev, known := s.last[d.UUID]
		if !known {
			continue
		}
		for k, f := range []struct {
			name string
			v    float64
		}{{"power_limit_w", d.PowerLimitW}, {"enforced_power_limit_w", d.EnforcedPowerLimitW}} {
			if !SameLimit(prev[k], f.v) {
				s.report.Changes = append(s.report.Changes, Change{Seq: row.Seq, Time: row.Time, Index: d.Index, UUID: d.UUID, Field: f.name, FromW: prev[k], ToW: f.v})
				prev[k] = f.v
			}
		}
		s.last[d.UUID] = prev
	}
	if s.report.DeviceSet == "" && strings.Join(uuids, ",") != strings.Join(s.baseIdx, ",") {
		s.report.DeviceSet = fmt.Sprintf("sample %d shows %d GPU(s) [%s], the block began with %d [%s]", row.Seq, len(uuids), strings.Join(uuids, ", "), len(s.baseIdx), strings.Join(s.baseIdx, ", "))
	}
}

func (s *Sampler) writeRow(r Row) {
	b, err := json.Marshal(r)
	if err == nil {
		_, err = s.w.Write(append(b, '\n'))
	}
	if err == nil && r.Error == "" && r.Device != nil {
		// Flush per sample, not per row: a crash loses at most the sample in flight.
		err = s.w.Flush()
	}
	if err != nil && s.writeErr == nil {
		s.writeErr = err
	}
}

// Stop ends sampling, takes one last sample (a limit that changed just before the end
// is still seen), closes the file and returns what the sampler saw. Calling it again
// returns the same report.
func (s *Sampler) Stop() (Report, error) { return s.end(true) }

// Abort ends sampling without a last sample: for a block that is abandoned, whose
// evidence is about to be hashed. Stop after Abort returns the report Abort made.
func (s *Sampler) Abort() { _, _ = s.end(false) }

func (s *Sampler) end(final bool) (Report, error) {
	s.once.Do(func() {
		close(s.stop)
		<-s.done
		if final {
			devs, err := s.src.Snapshot()
			s.record(time.Now(), devs, err)
		}
		s.mu.Lock()
		if err := s.w.Flush(); err != nil && s.writeErr == nil {
			s.writeErr = err
		}
		if err := s.f.Sync(); err != nil && s.writeErr == nil {
			s.writeErr = err
		}
		if err := s.f.Close(); err != nil && s.writeErr == nil {
			s.writeErr = err
		}
		s.f = nil
		s.report.DurationS = time.Since(s.start).Seconds()
		var idx []int
		for i := range s.report.powerAcc {
			idx = append(idx, i)
		}
		sort.Ints(idx)
		for _, i := range idx {
			p := *s.report.powerAcc[i]
			if p.n > 0 {
				p.MeanW = round(p.MeanW/float64(p.n), 3)
			}
			s.report.Power = append(s.report.Power, p)
		}
		s.mu.Unlock()
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.report, s.writeErr
}

// Drifted reports whether a power limit changed during sampling.
func (r Report) Drifted() bool { return len(r.Changes) > 0 }

// Incomplete says why the telemetry cannot rule out a drift, or "".
func (r Report) Incomplete() string {
	switch {
	case r.DeviceSet != "":
		return "the set of GPUs changed during the block: " + r.DeviceSet
	case len(r.Failures) > 0:
		return fmt.Sprintf("%d GPU sample(s) failed (first: %s)", len(r.Failures), r.Failures[0])
	}
	return ""
}

// DriftText describes every limit change in one line.
func (r Report) DriftText() string {
	var parts []string
	for _, c := range r.Changes {
		parts = append(parts, fmt.Sprintf("GPU %d (%s) %s %g W -> %g W at %s", c.Index, c.UUID, c.Field, c.FromW, c.ToW, c.Time))
	}
	return strings.Join(parts, "; ")
}
