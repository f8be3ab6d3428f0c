package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// The identity step on the simulator runtime: the same comparisons as on docker.
func TestIdentityOnSim(t *testing.T) {
	h := simtest.Host(t, "identity-test")
	if _, err := h.Create(sim.ContainerSpec{Name: "inc", Image: "sim:incumbent", Listen: "127.0.0.1:0", Config: sim.Config{TimeScale: 0.01}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("inc"); err != nil {
		t.Fatal(err)
	}
	info, _ := h.Inspect("inc")
	tgt := func(image string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("incumbent"), "container": cty.StringVal("inc"),
			"host":  cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(h.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(h.Dir())}),
			"image": cty.StringVal(image), "endpoint": cty.StringVal(info.Endpoint),
		})
	}
	cases := map[string]struct {
		image, incarnation string
		containerID        string
		class              engine.FailureClass
		msg                string
	}{
		"matches":           {image: "sim:incumbent", incarnation: info.Incarnation},
		"wrong profile":     {image: "sim:flare", class: engine.ClassIdentity, msg: "image_id is " + info.ImageID},
		"wrong incarnation": {image: "sim:incumbent", incarnation: "x@y", class: engine.ClassIdentity, msg: "incarnation is " + info.Incarnation + ", expected x@y"},
		"exact container":   {image: "sim:incumbent", containerID: info.ID},
		"wrong container":   {image: "sim:incumbent", containerID: "c0ffee", class: engine.ClassIdentity, msg: "container_id is " + info.ID + ", expected c0ffee"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := cty.ObjectVal(map[string]cty.Value{
				"target": tgt(tc.image), "image": cty.NullVal(cty.String), "container_id": cty.StringVal(tc.containerID),
				"incarnation": cty.StringVal(tc.incarnation),
			})
			sc := &engine.StepContext{Config: cfg, Dir: t.TempDir(), Log: zerolog.Nop()}
			res := Step{}.Run(context.Background(), sc)
			if tc.class == "" {
				if res.Status != engine.StatusSucceeded || res.Outputs.GetAttr("container_id").AsString() != info.ID ||
					res.Outputs.GetAttr("incarnation").AsString() != info.Incarnation || res.Outputs.GetAttr("endpoint").AsString() != info.Endpoint {
					t.Fatalf("%+v", res)
				}
				return
			}
			if res.Status != engine.StatusFailed || res.Class != tc.class || !strings.Contains(res.Message, tc.msg) {
				t.Fatalf("got %s (%s) %q; want %s containing %q", res.Status, res.Class, res.Message, tc.class, tc.msg)
			}
		})
	}
}

// What the package documents beyond a mismatch: identity.json keeps the digest of
// each protected file; a container that is not running is an identity failure, one
// the OOM killer ended is "oom", and a protected file that cannot be read is
// "config".
func TestIdentityStoppedContainerAndUnreadableProtectedFile(t *testing.T) {
	h := simtest.Host(t, "identity-more")
	if _, err := h.Create(sim.ContainerSpec{Name: "inc", Image: "sim:incumbent", Listen: "127.0.0.1:0", Config: sim.Config{TimeScale: 0.01}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("inc"); err != nil {
		t.Fatal(err)
	}
	info, _ := h.Inspect("inc")
	run := func(protected cty.Value) engine.Result {
		tv := cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("incumbent"), "container": cty.StringVal("inc"),
			"host":  cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(h.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(h.Dir())}),
			"image": cty.StringVal("sim:incumbent"), "endpoint": cty.StringVal(info.Endpoint), "protected_files": protected,
		})
		cfg := cty.ObjectVal(map[string]cty.Value{"target": tv, "image": cty.NullVal(cty.String), "container_id": cty.NullVal(cty.String), "incarnation": cty.NullVal(cty.String)})
		return Step{}.Run(context.Background(), &engine.StepContext{Config: cfg, Dir: t.TempDir(), BaseDir: t.TempDir(), Log: zerolog.Nop()})
	}
	// A readable protected file's digest is kept in identity.json.
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "route.txt"), []byte("route a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgOf := func(protected cty.Value) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"target": cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("incumbent"), "container": cty.StringVal("inc"),
			"host":  cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(h.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(h.Dir())}),
			"image": cty.StringVal("sim:incumbent"), "endpoint": cty.StringVal(info.Endpoint), "protected_files": protected,
		}), "image": cty.NullVal(cty.String), "container_id": cty.NullVal(cty.String), "incarnation": cty.NullVal(cty.String)})
	}
	sc := &engine.StepContext{Config: cfgOf(cty.ListVal([]cty.Value{cty.StringVal("route.txt")})), Dir: t.TempDir(), BaseDir: base, Log: zerolog.Nop()}
	if res := (Step{}).Run(context.Background(), sc); res.Status != engine.StatusSucceeded {
		t.Fatalf("readable protected file: %s (%s) %s", res.Status, res.Class, res.Message)
	}
	var rep struct {
		ProtectedFiles map[string]string `json:"protected_files"`
	}
	b, _ := os.ReadFile(sc.Path("identity.json"))
	sum := sha256.Sum256([]byte("route a\n"))
	want := hex.EncodeToString(sum[:])
	if err := json.Unmarshal(b, &rep); err != nil || rep.ProtectedFiles["file route.txt"] != want {
		t.Errorf("identity.json protected_files %v (%v), want file route.txt: %s", rep.ProtectedFiles, err, want)
	}

	res := run(cty.ListVal([]cty.Value{cty.StringVal("no-such-discovery.json")}))
	if res.Class != engine.ClassConfig || !strings.Contains(res.Message, "no-such-discovery.json") {
		t.Errorf("unreadable protected file: %s (%s) %q; want config naming the file", res.Status, res.Class, res.Message)
	}
	// Killed by the kernel's OOM killer: class oom, not identity.
	if err := h.InjectOOM("inc"); err != nil {
		t.Fatal(err)
	}
	res = run(cty.ListValEmpty(cty.String))
	if res.Class != engine.ClassOOM || !strings.Contains(res.Message, "container inc was OOM-killed") {
		t.Errorf("OOM-killed container: %s (%s) %q; want oom", res.Status, res.Class, res.Message)
	}
	// Stopped by hand: identity.
	if err := h.Start("inc"); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop("inc"); err != nil {
		t.Fatal(err)
	}
	res = run(cty.ListValEmpty(cty.String))
	if res.Class != engine.ClassIdentity || !strings.Contains(res.Message, "status is exited, expected running") {
		t.Errorf("stopped container: %s (%s) %q; want identity: status is exited, expected running", res.Status, res.Class, res.Message)
	}
}
