package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rogpeppe/go-internal/testscript"
)

// pilotBlocks are the blocks of a campaign that its pilot needs: everything the
// pilot's freeze step depends on, and nothing that runs after it.
var pilotBlocks = map[string]bool{
	"campaign": true, "variable": true, "host": true, "gate": true, "workload": true,
}

// pilotSteps are the steps of examples/flare-wave1 up to and including the frozen
// counts; the target they use is the incumbent.
var pilotSteps = []string{"deploy incumbent", "identity incumbent", "calibrate client", "block pilot", "freeze counts"}

// cmdPilotOf writes the pilot part of a campaign: `pilot-of SRC_DIR DST_DIR` copies the
// campaign's fixtures and its campaign.hcl keeping only the campaign, variable, host,
// gate and workload blocks, target "incumbent" and the steps of pilotSteps. The pilot
// blocks are the campaign's own text, so the test runs the campaign's pilot, not a copy.
func cmdPilotOf(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pilot-of SRC_DIR DST_DIR")
	}
	src, dst := ts.MkAbs(args[0]), ts.MkAbs(args[1])
	b, err := os.ReadFile(filepath.Join(src, "campaign.hcl"))
	ts.Check(err)
	f, diags := hclwrite.ParseConfig(b, "campaign.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		ts.Fatalf("parse: %s", diags.Error())
	}
	body := f.Body()
	var kept []string
	for _, blk := range body.Blocks() {
		labels := strings.Join(blk.Labels(), " ")
		keep := pilotBlocks[blk.Type()] ||
			(blk.Type() == "target" && labels == "incumbent") ||
			(blk.Type() == "step" && slices.Contains(pilotSteps, labels))
		if !keep {
			body.RemoveBlock(blk)
			continue
		}
		kept = append(kept, blk.Type()+" "+labels)
	}
	for _, s := range pilotSteps {
		if !slices.Contains(kept, "step "+s) {
			ts.Fatalf("%s has no step %s: the pilot changed, update pilotSteps", src, s)
		}
	}
	ts.Check(os.MkdirAll(filepath.Join(dst, "fixtures"), 0o755))
	fixtures, _ := filepath.Glob(filepath.Join(src, "fixtures", "*"))
	for _, fx := range fixtures {
		data, err := os.ReadFile(fx)
		ts.Check(err)
		ts.Check(os.WriteFile(filepath.Join(dst, "fixtures", filepath.Base(fx)), data, 0o644))
	}
	ts.Check(os.WriteFile(filepath.Join(dst, "campaign.hcl"), f.Bytes(), 0o644))
}

// cmdCountWithin checks a frozen count: `count-within STATE KEY LO HI` reads the
// values freeze.counts recorded and fails unless LO <= values[KEY] <= HI.
func cmdCountWithin(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 4 {
		ts.Fatalf("usage: count-within STATE KEY LO HI")
	}
	b, err := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), "attempts", "freeze.counts", "1", "values.json"))
	ts.Check(err)
	var values map[string]float64
	ts.Check(json.Unmarshal(b, &values))
	lo, hi := bounds(ts, args[2], args[3])
	v, ok := values[args[1]]
	in := ok && v >= lo && v <= hi
	ts.Logf("frozen %s = %v (want %v..%v)", args[1], v, lo, hi)
	if in == neg {
		ts.Fatalf("frozen %s = %v, %s %v..%v (values %s)", args[1], v, map[bool]string{false: "want", true: "must not be in"}[neg], lo, hi, fmt.Sprint(values))
	}
}

// cmdCachedWithin checks the reuse a block observed: `cached-within STATE BLOCK LO HI`
// reads attempts/BLOCK/1/result.json and fails unless its cache.observed.fraction is
// within LO..HI.
func cmdCachedWithin(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: cached-within STATE BLOCK LO HI")
	}
	b, err := os.ReadFile(filepath.Join(ts.MkAbs(args[0]), "attempts", filepath.FromSlash(args[1]), "1", "result.json"))
	ts.Check(err)
	var res struct {
		Cache struct {
			Observed struct {
				Fraction *float64 `json:"fraction"`
			} `json:"observed"`
		} `json:"cache"`
	}
	ts.Check(json.Unmarshal(b, &res))
	lo, hi := bounds(ts, args[2], args[3])
	f := res.Cache.Observed.Fraction
	if f == nil || *f < lo || *f > hi {
		ts.Fatalf("%s: cached fraction %v, want %v..%v", args[1], f, lo, hi)
	}
	ts.Logf("%s: cached fraction %.4f", args[1], *f)
}

// bounds parses the LO and HI arguments of a range check.
func bounds(ts *testscript.TestScript, lo, hi string) (float64, float64) {
	l, err1 := strconv.ParseFloat(lo, 64)
	h, err2 := strconv.ParseFloat(hi, 64)
	if err1 != nil || err2 != nil {
		ts.Fatalf("bad bounds %q %q", lo, hi)
	}
	return l, h
}

// cmdTmpfs: tmpfs DIR SIZE mounts a real tmpfs of SIZE on DIR (created if missing),
// so a full disk is the kernel's ENOSPC, and unmounts it when the script ends.
// Mounting needs privileges: scripts guard it with [tmpfs] (canMountTmpfs).
func cmdTmpfs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: tmpfs DIR SIZE")
	}
	dir := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(dir, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+args[1], "tmpfs", dir).CombinedOutput(); err != nil {
		ts.Fatalf("mount a tmpfs on %s: %v %s", dir, err, out)
	}
	ts.Defer(func() { _ = exec.Command("umount", "-l", dir).Run() })
}

// canMountTmpfs is the [tmpfs] condition: whether a tmpfs can be mounted here.
// Where RIGOR_REQUIRE_TMPFS is set (.ci/run sets it where it can mount), not
// being able to is an error, so the disk-full scripts cannot skip there.
func canMountTmpfs() (bool, error) {
	dir, err := os.MkdirTemp("", "rigor-tmpfs-probe-")
	if err != nil {
		return false, err
	}
	defer os.Remove(dir)
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("RIGOR_REQUIRE_TMPFS") != "" {
			return false, fmt.Errorf("RIGOR_REQUIRE_TMPFS is set but mounting a tmpfs failed: %v %s", err, out)
		}
		return false, nil
	}
	return true, exec.Command("umount", dir).Run()
}
