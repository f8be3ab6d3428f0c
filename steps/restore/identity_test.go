package restore_test

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/identity"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rigor-bench/rigor/steps/restore"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// stepConfig is a step's configuration as decoding leaves it: every attribute of its
// schema present, null when unset.
func stepConfig(s engine.Step, attrs map[string]cty.Value) cty.Value {
	m := map[string]cty.Value{}
	for name, sp := range s.Spec() {
		m[name] = cty.NullVal(hcldec.ImpliedType(sp))
	}
	for k, v := range attrs {
		m[k] = v
	}
	return cty.ObjectVal(m)
}

// campaignDir is a campaign directory with two protected files.
func campaignDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "fixtures"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"fixtures/discovery.json": `{"models":["m"]}`, "fixtures/route.txt": "route a\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func stepContext(t *testing.T, cfg cty.Value, base string) *engine.StepContext {
	return &engine.StepContext{Config: cfg, Dir: t.TempDir(), BaseDir: base, StateDir: t.TempDir(), Log: zerolog.Nop(),
		Outage: func() engine.OutageView { return engine.OutageView{} }}
}

// incumbent is a sim target on a fresh host, on a port of its own.
func incumbent(t *testing.T) (*sim.Host, cty.Value) {
	h := simtest.Host(t, "refresh")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return h, simtest.Target(h, map[string]cty.Value{
		"name": cty.StringVal("incumbent"), "container": cty.StringVal("inc"), "image": cty.StringVal("sim:incumbent"),
		"endpoint": cty.StringVal("http://" + addr), "time_scale": cty.NumberFloatVal(0.01),
		"protected_files": cty.ListVal([]cty.Value{cty.StringVal("fixtures/discovery.json")}),
	})
}

// Refresh, as a resumed apply calls it, on each step type that leaves a target
// running: the recorded outputs are compared with the target as it is now.
func TestRefreshComparesTheTargetWithTheJournal(t *testing.T) {
	type refresher interface {
		engine.Step
		engine.Refresher
	}
	cases := map[string]struct {
		change func(t *testing.T, h *sim.Host)
		want   []string // in the error; none: no error
	}{
		"survived": {change: func(*testing.T, *sim.Host) {}},
		"restarted": {change: func(t *testing.T, h *sim.Host) {
			if err := h.InjectRestart("inc"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"container inc changed since the journal recorded it", "incarnation "}},
		"killed": {change: func(t *testing.T, h *sim.Host) {
			if err := h.Kill("inc"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"container inc is exited (exit code 137)", "recorded it running as incarnation"}},
		"removed": {change: func(t *testing.T, h *sim.Host) {
			if err := h.Stop("inc"); err != nil {
				t.Fatal(err)
			}
			if err := h.Remove("inc"); err != nil {
				t.Fatal(err)
			}
		}, want: []string{"container inc is gone", "the journal recorded container_id"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, tgt := incumbent(t)
			base := campaignDir(t)
			steps := []refresher{deploy.Step{}, identity.Step{}, restore.Step{}}
			outputs := make([]cty.Value, len(steps))
			for i, s := range steps {
				cfg := stepConfig(s, map[string]cty.Value{"target": tgt})
				res := s.Run(context.Background(), stepContext(t, cfg, base))
				if res.Status != engine.StatusSucceeded {
					t.Fatalf("%T: %s (%s) %s", s, res.Status, res.Class, res.Message)
				}
				outputs[i] = res.Outputs
			}
			before, _ := h.Inspect("inc")
			tc.change(t, h)
			after, _ := h.Inspect("inc")
			for i, s := range steps {
				cfg := stepConfig(s, map[string]cty.Value{"target": tgt})
				if key := s.RefreshKey(cfg); !strings.Contains(key, h.Dir()) || !strings.HasSuffix(key, before.Endpoint) {
					t.Errorf("%T: refresh key %q does not name the host and the endpoint", s, key)
				}
				err := s.Refresh(context.Background(), cfg, outputs[i])
				if len(tc.want) == 0 {
					if err != nil {
						t.Errorf("%T: %v", s, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("%T: no error after the target was %s", s, name)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%T: %q lacks %q", s, err, w)
					}
				}
				if name == "restarted" && !strings.Contains(err.Error(), before.Incarnation+" → "+after.Incarnation) {
					t.Errorf("%T: %q does not name the old and the new incarnation", s, err)
				}
			}
		})
	}
}

// Identity, deploy and restore name the protected files under the names the engine
// pins them by; restore adds its own.
func TestPinnedInputsNameTheProtectedFiles(t *testing.T) {
	_, tgt := incumbent(t)
	base := campaignDir(t)
	sum := func(p string) string {
		s, err := plans.FileSHA256(filepath.Join(base, p))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	target := map[string]string{"file fixtures/discovery.json": sum("fixtures/discovery.json")}
	both := map[string]string{"file fixtures/discovery.json": sum("fixtures/discovery.json"), "file fixtures/route.txt": sum("fixtures/route.txt")}
	cases := map[string]struct {
		step  engine.PinnedInputs
		attrs map[string]cty.Value
		want  map[string]string
	}{
		"identity": {identity.Step{}, nil, target},
		"deploy":   {deploy.Step{}, nil, target},
		"restore": {restore.Step{}, map[string]cty.Value{"protected_files": cty.ListVal([]cty.Value{
			cty.StringVal("./fixtures/route.txt"), cty.StringVal(filepath.Join(base, "fixtures/discovery.json"))})}, both},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			attrs := map[string]cty.Value{"target": tgt}
			for k, v := range tc.attrs {
				attrs[k] = v
			}
			got, err := tc.step.PinnedInputs(stepConfig(tc.step.(engine.Step), attrs), base)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Error(d)
			}
		})
	}
	t.Run("unreadable", func(t *testing.T) {
		gone := simtestTargetWith(tgt, "protected_files", cty.ListVal([]cty.Value{cty.StringVal("fixtures/missing.json")}))
		_, err := deploy.Step{}.PinnedInputs(stepConfig(deploy.Step{}, map[string]cty.Value{"target": gone}), base)
		if err == nil || !strings.Contains(err.Error(), "fixtures/missing.json") {
			t.Errorf("an unreadable protected file: %v", err)
		}
	})
}

func simtestTargetWith(v cty.Value, name string, val cty.Value) cty.Value {
	m := v.AsValueMap()
	m[name] = val
	return cty.ObjectVal(m)
}

// Restore compares every protected file with the digest the engine pinned, and says
// only what it compared.
func TestRestoreComparesProtectedFilesWithTheirPins(t *testing.T) {
	type receipt struct {
		Outcome string              `json:"outcome"`
		Checks  []restore.Check     `json:"checks"`
		Skipped []restore.Unchecked `json:"not_compared"`
	}
	cases := map[string]struct {
		edit      bool
		remove    bool
		pinned    bool
		wantClass engine.FailureClass // "" = succeeded
		wantMsg   []string
		check     string // the protected-file check's detail must contain this; "" = there is none
		skipped   string // the not_compared entry must contain this; "" = there is none
	}{
		"unchanged": {pinned: true, check: "the digest pinned when it was first seen"},
		"edited": {edit: true, pinned: true, wantClass: engine.ClassFrozenInputChanged,
			wantMsg: []string{"fixtures/discovery.json changed (pinned sha256 "}, check: "changed: pinned sha256"},
		"first seen at restore": {skipped: "first seen at restore, nothing to compare"},
		"unreadable": {remove: true, pinned: true, wantClass: engine.ClassFrozenInputChanged,
			wantMsg: []string{"fixtures/discovery.json cannot be read"}, check: "fixtures/discovery.json cannot be read"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, tgt := incumbent(t)
			base := campaignDir(t)
			if _, err := h.Create(sim.ContainerSpec{Name: "inc", Image: "sim:incumbent", Listen: strings.TrimPrefix(tgt.GetAttr("endpoint").AsString(), "http://")}); err != nil {
				t.Fatal(err)
			}
			pinnedSum, _ := plans.FileSHA256(filepath.Join(base, "fixtures/discovery.json"))
			if tc.edit {
				if err := os.WriteFile(filepath.Join(base, "fixtures/discovery.json"), []byte(`{"models":["edited"]}`), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.remove {
				if err := os.Remove(filepath.Join(base, "fixtures/discovery.json")); err != nil {
					t.Fatal(err)
				}
			}
			nowSum, _ := plans.FileSHA256(filepath.Join(base, "fixtures/discovery.json"))
			sc := stepContext(t, stepConfig(restore.Step{}, map[string]cty.Value{"target": tgt}), base)
			if tc.pinned {
				sc.Pinned = map[string]string{"file fixtures/discovery.json": pinnedSum}
			}
			res := restore.Step{}.Run(context.Background(), sc)
			if tc.wantClass == "" && res.Status != engine.StatusSucceeded {
				t.Fatalf("%s (%s) %s", res.Status, res.Class, res.Message)
			}
			if tc.wantClass != "" && (res.Status != engine.StatusFailed || res.Class != tc.wantClass) {
				t.Fatalf("%s (%s) %s; want failed (%s)", res.Status, res.Class, res.Message, tc.wantClass)
			}
			want := tc.wantMsg
			if tc.edit {
				want = append(want, pinnedSum+", now "+nowSum)
			}
			for _, w := range want {
				if !strings.Contains(res.Message, w) {
					t.Errorf("message %q lacks %q", res.Message, w)
				}
			}
			// The incumbent runs whatever the files say: restore restores first.
			if info, _ := h.Inspect("inc"); info.Status != sim.StatusRunning {
				t.Errorf("incumbent %s after restore", info.Status)
			}
			b, err := os.ReadFile(filepath.Join(sc.Dir, "receipt.json"))
			if err != nil {
				t.Fatal(err)
			}
			var rc receipt
			if err := json.Unmarshal(b, &rc); err != nil {
				t.Fatal(err)
			}
			var checks, skipped []string
			for _, c := range rc.Checks {
				if c.Name == "protected file" {
					checks = append(checks, c.Detail)
					if c.OK != (tc.check != "" && !tc.edit && !tc.remove) {
						t.Errorf("protected-file check ok=%v: %s", c.OK, c.Detail)
					}
				}
			}
			for _, c := range rc.Skipped {
				skipped = append(skipped, c.Detail)
			}
			if (tc.check == "") != (len(checks) == 0) || (tc.check != "" && !strings.Contains(strings.Join(checks, "|"), tc.check)) {
				t.Errorf("protected-file checks %q, want one containing %q", checks, tc.check)
			}
			if (tc.skipped == "") != (len(skipped) == 0) || (tc.skipped != "" && !strings.Contains(strings.Join(skipped, "|"), tc.skipped)) {
				t.Errorf("not-compared entries %q, want one containing %q", skipped, tc.skipped)
			}
			if strings.Contains(string(b), "compared it with the frozen hash") {
				t.Errorf("the receipt claims a comparison nobody made:\n%s", b)
			}
		})
	}
}

// TestRestoreRecreatesAGoneSimIncumbent: on the sim runtime an incumbent with no
// container by its name (never created here; removed, in a campaign) is recreated
// from the target's declared spec, under its name, with the profile's image, and
// answers health before the receipt says restored.
func TestRestoreRecreatesAGoneSimIncumbent(t *testing.T) {
	h, tgt := incumbent(t)
	base := campaignDir(t)
	sc := stepContext(t, stepConfig(restore.Step{}, map[string]cty.Value{"target": tgt}), base)
	sum, _ := plans.FileSHA256(filepath.Join(base, "fixtures/discovery.json"))
	sc.Pinned = map[string]string{"file fixtures/discovery.json": sum}
	res := restore.Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s) %s", res.Status, res.Class, res.Message)
	}
	info, err := h.Inspect("inc")
	if err != nil || info.Status != sim.StatusRunning {
		t.Fatalf("incumbent after restore: %+v %v", info, err)
	}
	prof, _ := sim.LookupProfile("incumbent")
	if info.ImageID != prof.ImageID() {
		t.Errorf("recreated with image %s, want the profile's %s", info.ImageID, prof.ImageID())
	}
	var rc struct {
		Action  string `json:"action"`
		Outcome string `json:"outcome"`
	}
	b, _ := os.ReadFile(filepath.Join(sc.Dir, "receipt.json"))
	if err := json.Unmarshal(b, &rc); err != nil || rc.Action != "recreated" || rc.Outcome != "restored" {
		t.Errorf("receipt %s (%v); want action recreated, outcome restored", b, err)
	}
}
