package nsys

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// loadedSimTarget starts a simulator container and keeps three streams on it.
func loadedSimTarget(t *testing.T) cty.Value {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host := simtest.Host(t, "nsys")
	prof, _ := sim.LookupProfile("flare")
	if _, err := host.Create(sim.ContainerSpec{Name: "c", Image: "sim:flare", Listen: addr, Config: sim.Config{Profile: prof, TimeScale: 0.05}}); err != nil {
		t.Fatal(err)
	}
	if err := host.Start("c"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Stop("c"); _ = host.Remove("c") })
	endpoint := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"load %d %d words words"}],"max_tokens":200,"stream":true}`, i, k)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", strings.NewReader(body))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	time.Sleep(60 * time.Millisecond)
	return cty.ObjectVal(map[string]cty.Value{
		"name":      cty.StringVal("flare"),
		"host":      cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(host.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(host.Dir())}),
		"container": cty.StringVal("c"),
		"endpoint":  cty.StringVal(endpoint),
		"image":     cty.StringVal("sim:flare"),
	})
}

func simStepContext(t *testing.T, tv cty.Value, attrs map[string]cty.Value) *engine.StepContext {
	t.Helper()
	cfg := map[string]cty.Value{}
	for k, ty := range hcldec.ImpliedType(spec).AttributeTypes() {
		cfg[k] = cty.NullVal(ty)
	}
	cfg["target"] = tv
	cfg["duration"] = cty.StringVal("1s")
	cfg["output"] = cty.StringVal("flare-c4")
	for k, v := range attrs {
		cfg[k] = v
	}
	return &engine.StepContext{Addr: "nsys.t", Instance: &plans.Instance{}, Config: cty.ObjectVal(cfg), Dir: t.TempDir(), Log: zerolog.Nop()}
}

// On a simulator target the step takes the simulator's own capture: a real SQLite
// export with nsys's tables, of the frames the simulator ran under its load, that
// the report's analysis reads like any export, and that says it is simulated in the
// export and in capture.json.
func TestSimulatorCapture(t *testing.T) {
	tv := loadedSimTarget(t)
	sc := simStepContext(t, tv, nil)
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	if got := res.Outputs.GetAttr("sqlite").AsString(); got != "flare-c4.sqlite" {
		t.Errorf("sqlite output %q", got)
	}
	var rec captureRecord
	b, _ := os.ReadFile(sc.Path("capture.json"))
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	if !rec.Simulated || rec.Where != "simulator" || rec.Source != "rigor-sim/flare" || rec.Frames < 10 || rec.RequestsCompleted < 1 || rec.Incarnation == "" || rec.Start == "" || rec.ElapsedS < 1 {
		t.Errorf("capture.json does not record a simulated capture under load: %+v", rec)
	}
	if _, err := os.Stat(sc.Path("sim-profile.json")); err != nil {
		t.Errorf("the simulator's answer is not kept: %v", err)
	}
	mods, err := CompileModules(map[string][]string{"moe": {"W4A16FusedMoe"}, "nccl": {"^nccl"}, "attention": {"^flash_"}, "gemm": {"gemm"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(sc.Path("flare-c4.sqlite"), Mapping{Modules: mods, RankDevices: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Kernels < 10*6*2 || !a.RankMapped || len(a.Devices) != 2 || a.Interval.DurationS < 1 || a.Interval.StartUTC == "" {
		t.Errorf("analysis: %d kernels, rank mapped %v, %d devices, interval %+v", a.Kernels, a.RankMapped, len(a.Devices), a.Interval)
	}
	// The norm and sampler kernels match no pattern: about 8% unmapped.
	if a.UnmappedFraction < 0.04 || a.UnmappedFraction > 0.12 {
		t.Errorf("unmapped fraction %.3f, want about 0.08 (norm + sampler)", a.UnmappedFraction)
	}
	if len(a.Modules) == 0 || a.Modules[0].Name != "moe" {
		t.Errorf("modules %+v, want moe first", a.Modules)
	}
	if a.GraphUnmappedFraction != 0 || len(a.Graphs) == 0 || !strings.HasPrefix(a.Graphs[0].Name, "speculative ") {
		t.Errorf("graphs %+v (unmapped %.3f): want every kernel in a speculative/mixed NVTX range", a.Graphs, a.GraphUnmappedFraction)
	}
	if !strings.Contains(a.ExportVersion, "simulated") || len(a.Warnings) != 1 || !strings.Contains(a.Warnings[0], "simulated capture") {
		t.Errorf("export not labelled as simulated: version %q, warnings %v", a.ExportVersion, a.Warnings)
	}
}

// The simulator takes a capture shorter than nsys's whole second: at a small time
// scale it stands for seconds of serving.
func TestSimulatorCaptureSubSecond(t *testing.T) {
	sc := simStepContext(t, loadedSimTarget(t), map[string]cty.Value{"duration": cty.StringVal("150ms")})
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	a, err := Analyze(sc.Path("flare-c4.sqlite"), Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Interval.DurationS < 0.15 || a.Interval.DurationS > 0.2 || a.Kernels == 0 {
		t.Errorf("interval %.3f s, %d kernels; want a 150 ms capture with kernels", a.Interval.DurationS, a.Kernels)
	}
}

// A simulator capture launches nothing: arguments that shape a launch are refused
// rather than accepted and never read; where = "simulator" needs a simulator target.
func TestSimulatorCaptureRefusesLaunchArguments(t *testing.T) {
	simT := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("flare"), "container": cty.StringVal("c"), "endpoint": cty.StringVal("http://127.0.0.1:1"),
		"host": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "runtime": cty.StringVal("sim")}),
	})
	docker := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("flare"), "container": cty.StringVal("c"), "endpoint": cty.StringVal("http://127.0.0.1:1"), "runtime": cty.StringVal("docker"),
		"host": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "docker": cty.StringVal("unix:///x.sock")}),
	})
	cases := map[string]struct {
		tv    cty.Value
		attrs map[string]cty.Value
		want  string
	}{
		"command":           {simT, map[string]cty.Value{"command": cty.ListVal([]cty.Value{cty.StringVal("sleep"), cty.StringVal("1")})}, "command: a simulator target's Nsight capture launches nothing"},
		"nsys":              {simT, map[string]cty.Value{"nsys": cty.StringVal("/opt/nsys")}, "nsys: a simulator target's Nsight capture launches nothing"},
		"env":               {simT, map[string]cty.Value{"env": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("b")})}, "env: a simulator target's"},
		"args":              {simT, map[string]cty.Value{"args": cty.ListVal([]cty.Value{cty.StringVal("--trace=cuda")})}, "args: a simulator target's Nsight capture launches nothing"},
		"docker":            {simT, map[string]cty.Value{"docker": cty.StringVal("/usr/bin/docker")}, "docker: a simulator target's Nsight capture launches nothing"},
		"container":         {simT, map[string]cty.Value{"container": cty.StringVal("other")}, "container: a simulator target's Nsight capture launches nothing"},
		"simulator, docker": {docker, map[string]cty.Value{"where": cty.StringVal("simulator")}, `where = "simulator" needs a target on a host with runtime = "sim"`},
		"host, no command":  {simT, map[string]cty.Value{"where": cty.StringVal("host")}, "command is empty"},
		"unknown where":     {simT, map[string]cty.Value{"where": cty.StringVal("gpu")}, `want "host", "container" or "simulator"`},
		"host, under 1s":    {simT, map[string]cty.Value{"where": cty.StringVal("host"), "duration": cty.StringVal("500ms"), "command": cty.ListVal([]cty.Value{cty.StringVal("true")})}, "nsys profiles whole seconds"},
		"simulator, 2m":     {simT, map[string]cty.Value{"duration": cty.StringVal("2m")}, "the simulator captures at most 1m0s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res := Step{}.Run(context.Background(), simStepContext(t, tc.tv, tc.attrs))
			if res.Class != engine.ClassConfig || !strings.Contains(res.Message, tc.want) {
				t.Errorf("%s (%s): %s; want config containing %q", res.Status, res.Class, res.Message, tc.want)
			}
		})
	}
}

// A simulator container that is not running before the capture is an identity
// failure: there is no server whose work could be profiled.
func TestSimulatorCaptureNeedsARunningContainer(t *testing.T) {
	host := simtest.Host(t, "nsys-stopped")
	prof, _ := sim.LookupProfile("flare")
	if _, err := host.Create(sim.ContainerSpec{Name: "c", Image: "sim:flare", Listen: "127.0.0.1:1", Config: sim.Config{Profile: prof}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Remove("c") })
	tv := cty.ObjectVal(map[string]cty.Value{
		"name":      cty.StringVal("flare"),
		"host":      cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(host.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(host.Dir())}),
		"container": cty.StringVal("c"),
		"endpoint":  cty.StringVal("http://127.0.0.1:1"),
	})
	res := Step{}.Run(context.Background(), simStepContext(t, tv, nil))
	if res.Class != engine.ClassIdentity || !strings.Contains(res.Message, "before the capture, not running") {
		t.Errorf("%s (%s): %s; want identity: not running", res.Status, res.Class, res.Message)
	}
}

// A restart during the capture is class restart: the export would mix two servers.
func TestSimulatorCaptureAcrossARestart(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host := simtest.Host(t, "nsys-restart")
	prof, _ := sim.LookupProfile("flare")
	if _, err := host.Create(sim.ContainerSpec{Name: "c", Image: "sim:flare", Listen: addr, Config: sim.Config{Profile: prof, TimeScale: 0.05}}); err != nil {
		t.Fatal(err)
	}
	if err := host.Start("c"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Stop("c"); _ = host.Remove("c") })
	tv := cty.ObjectVal(map[string]cty.Value{
		"name":      cty.StringVal("flare"),
		"host":      cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(host.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(host.Dir())}),
		"container": cty.StringVal("c"),
		"endpoint":  cty.StringVal("http://" + addr),
	})
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = host.Stop("c")
		_ = host.Start("c")
	}()
	res := Step{}.Run(context.Background(), simStepContext(t, tv, map[string]cty.Value{"duration": cty.StringVal("2s")}))
	if res.Class != engine.ClassRestart || !strings.Contains(res.Message, "changed incarnation during the capture") {
		t.Errorf("%s (%s): %s; want restart", res.Status, res.Class, res.Message)
	}
}
