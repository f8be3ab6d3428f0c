package gpu

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func readRows(t *testing.T, path string) []Row {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("bad row %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows
}

func TestSamplerRecordsEveryDevice(t *testing.T) {
	src, err := SimFor(t.Name(), SimConfig{Devices: 2, PowerLimitW: 300})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpu.jsonl")
	s, first, err := StartSampler(src, path, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 2 {
		t.Fatalf("first snapshot has %d devices, want 2", len(first))
	}
	time.Sleep(80 * time.Millisecond)
	rep, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	rows := readRows(t, path)
	perDev := map[int]int{}
	seqs := map[int]map[int]bool{}
	for _, r := range rows {
		if r.Device == nil {
			t.Fatalf("error row: %+v", r)
		}
		perDev[r.Index]++
		if seqs[r.Seq] == nil {
			seqs[r.Seq] = map[int]bool{}
		}
		seqs[r.Seq][r.Index] = true
		if r.PowerW <= 0 || r.PowerW > r.EnforcedPowerLimitW || r.TemperatureC < 20 || r.SMClockMHz <= 0 || r.MemoryFreeBytes == 0 || !strings.HasPrefix(r.UUID, "GPU-") {
			t.Errorf("implausible telemetry: %+v", *r.Device)
		}
	}
	// 80 ms at 5 ms is ~16 ticks; a loaded CI machine may lose some, never all.
	if perDev[0] < 5 || perDev[0] != perDev[1] {
		t.Fatalf("rows per device = %v: want the same number (>= 5) for both GPUs", perDev)
	}
	for seq, devs := range seqs {
		if !devs[0] || !devs[1] {
			t.Errorf("sample %d lacks a device: %v", seq, devs)
		}
	}
	if rep.Samples != perDev[0] || rep.PerDevice[1] != perDev[1] {
		t.Errorf("report counts %d samples %v, file has %v", rep.Samples, rep.PerDevice, perDev)
	}
	if rep.Drifted() || rep.Incomplete() != "" {
		t.Errorf("steady limits reported as drift or incomplete: %+v", rep)
	}
	if len(rep.Power) != 2 || rep.Power[0].MinW > rep.Power[0].MeanW || rep.Power[0].MeanW > rep.Power[0].MaxW {
		t.Errorf("power summary wrong: %+v", rep.Power)
	}
	// Nothing is written after Stop.
	n := len(rows)
	time.Sleep(20 * time.Millisecond)
	if got := len(readRows(t, path)); got != n {
		t.Errorf("%d rows after Stop, %d at Stop", got, n)
	}
}

func TestSamplerSeesInjectedDrift(t *testing.T) {
	src, err := SimFor(t.Name(), SimConfig{Devices: 2, PowerLimitW: 300})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gpu.jsonl")
	s, _, err := StartSampler(src, path, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if err := src.InjectDrift(time.Now().Add(20*time.Millisecond), 1, 250); err != nil {
		t.Fatal(err)
	}
	time.Sleep(60 * time.Millisecond)
	rep, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Drifted() {
		t.Fatalf("drift not detected: %+v", rep)
	}
	for _, c := range rep.Changes {
		if c.Index != 1 || c.FromW != 300 || c.ToW != 250 {
			t.Errorf("unexpected change %+v: only GPU 1 went 300 -> 250 W", c)
		}
	}
	if len(rep.Changes) != 2 { // management and enforced limit, once each
		t.Errorf("changes = %+v, want one per limit field", rep.Changes)
	}
	if !strings.Contains(rep.DriftText(), "300 W -> 250 W") {
		t.Errorf("drift text: %s", rep.DriftText())
	}
	// The same host seen again keeps the drifted limit: rigor never restores power.
	again, _ := SimFor(t.Name(), SimConfig{Devices: 2, PowerLimitW: 300})
	devs, _ := again.Snapshot()
	if devs[1].PowerLimitW != 250 || devs[0].PowerLimitW != 300 {
		t.Errorf("after drift the host shows %g/%g W", devs[0].PowerLimitW, devs[1].PowerLimitW)
	}
}

func TestSimConfiguredDrift(t *testing.T) {
	src, err := SimFor(t.Name(), SimConfig{Devices: 1, PowerLimitW: 300, DriftAt: 10 * time.Millisecond, DriftW: 280})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := src.Snapshot()
	if d[0].PowerLimitW != 300 {
		t.Fatalf("limit %g before the drift time", d[0].PowerLimitW)
	}
	time.Sleep(15 * time.Millisecond)
	d, _ = src.Snapshot()
	if d[0].PowerLimitW != 280 || d[0].EnforcedPowerLimitW != 280 {
		t.Fatalf("limit %g after the drift time, want 280", d[0].PowerLimitW)
	}
	if _, err := SimFor("bad", SimConfig{Devices: 0, PowerLimitW: 300}); err == nil || !strings.Contains(err.Error(), "sim_gpus") {
		t.Errorf("zero devices accepted or badly named: %v", err)
	}
}

func TestSamplerFailingSourceIsIncomplete(t *testing.T) {
	src := &flaky{}
	path := filepath.Join(t.TempDir(), "gpu.jsonl")
	s, _, err := StartSampler(src, path, 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rep, _ := s.Stop()
	if rep.Incomplete() == "" || !strings.Contains(rep.Incomplete(), "GPU lost") {
		t.Fatalf("failing snapshots not reported: %+v", rep)
	}
	var errRows int
	for _, r := range readRows(t, path) {
		if r.Error != "" {
			errRows++
		}
	}
	if errRows == 0 {
		t.Error("no error row in gpu.jsonl")
	}
}

type flaky struct{ n int }

func (*flaky) Kind() string { return "flaky" }
func (f *flaky) Snapshot() ([]Device, error) {
	f.n++
	if f.n > 1 {
		return nil, errors.New("GPU lost")
	}
	return []Device{{UUID: "GPU-x", PowerLimitW: 300, EnforcedPowerLimitW: 300}}, nil
}

func TestGate(t *testing.T) {
	w300, w250 := 300.0, 250.0
	two, three := 2, 3
	src, _ := SimFor(t.Name(), SimConfig{Devices: 2, PowerLimitW: 250})
	devs, _ := src.Snapshot()
	cases := map[string]struct {
		gate    Gate
		failed  string // check that fails first, "" for a pass
		details string
	}{
		"300 W expected, 250 W configured": {Gate{Name: "g", PowerLimitW: &w300}, "power_limit_watts", "GPU 0"},
		"250 W on both":                    {Gate{Name: "g", PowerLimitW: &w250, Count: &two}, "", ""},
		"wrong count":                      {Gate{Name: "g", Count: &three}, "gpu_count", "2 GPU(s) present, 3 expected"},
		"driver prefix":                    {Gate{Name: "g", Driver: "570.86"}, "", ""},
		"driver mismatch":                  {Gate{Name: "g", Driver: "575"}, "driver", "575 expected"},
		"driver component not prefix text": {Gate{Name: "g", Driver: "57"}, "driver", "57 expected"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checks := tc.gate.Check(devs)
			c, bad := Failed(checks)
			if tc.failed == "" {
				if bad {
					t.Fatalf("failed: %+v", c)
				}
				return
			}
			if !bad || c.Check != tc.failed || !strings.Contains(c.Detail, tc.details) {
				t.Fatalf("first failure %+v (bad=%v), want %s mentioning %q", c, bad, tc.failed, tc.details)
			}
		})
	}
	// Every device is checked: one check per GPU for the limit.
	if n := len((Gate{PowerLimitW: &w300}).Check(devs)); n != 2 {
		t.Errorf("%d power checks for 2 GPUs", n)
	}
}

func TestNVMLSourceWithoutDriver(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("an NVIDIA device is present")
	}
	start := time.Now()
	_, err := NVML{}.Snapshot()
	if err == nil || !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `gpus = "sim"`) {
		t.Fatalf("NVML without a driver: %v", err)
	}
	if time.Since(start) > 15*time.Second {
		t.Fatalf("NVML took %s to fail", time.Since(start))
	}
}

// TestSamplerDeviceSetChangeIsIncomplete: a GPU that drops out of the snapshots
// during the block makes the telemetry incomplete, naming the sample and both sets.
func TestSamplerDeviceSetChangeIsIncomplete(t *testing.T) {
	s, _, err := StartSampler(&shrinking{}, filepath.Join(t.TempDir(), "gpu.jsonl"), 2*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rep, _ := s.Stop()
	if !strings.Contains(rep.Incomplete(), "the set of GPUs changed") || !strings.Contains(rep.DeviceSet, "shows 1 GPU(s) [GPU-a], the block began with 2 [GPU-a, GPU-b]") {
		t.Fatalf("a GPU that dropped out is not reported: incomplete %q, device set %q", rep.Incomplete(), rep.DeviceSet)
	}
}

// shrinking reports two GPUs, then one.
type shrinking struct{ n int }

func (*shrinking) Kind() string { return "shrinking" }
func (s *shrinking) Snapshot() ([]Device, error) {
	s.n++
	devs := []Device{{Index: 0, UUID: "GPU-a", PowerLimitW: 300, EnforcedPowerLimitW: 300}, {Index: 1, UUID: "GPU-b", PowerLimitW: 300, EnforcedPowerLimitW: 300}}
	if s.n > 1 {
		return devs[:1], nil
	}
	return devs, nil
}
