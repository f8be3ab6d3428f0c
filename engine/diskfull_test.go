package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rs/zerolog"
)

// mountTmpfs mounts a real tmpfs of the given size, so "disk full" is the kernel's
// ENOSPC and not a simulation. Mounting needs privileges: .ci/run sets
// RIGOR_REQUIRE_TMPFS=1 where it can mount, which makes these tests mandatory.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput()
	if err != nil {
		if os.Getenv("RIGOR_REQUIRE_TMPFS") != "" {
			t.Fatalf("RIGOR_REQUIRE_TMPFS is set but mounting a tmpfs failed: %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs here (%v %s); .ci/run sets RIGOR_REQUIRE_TMPFS=1 where it can", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

const diskFullCampaign = header + `
step "probe" "deploy" {
  outage   = "begin"
  write_kb = 4
}
step "probe" "b1" { write_kb = 12 }
step "probe" "b2" { write_kb = 12 }
step "probe" "b3" { write_kb = 12 }
step "probe" "b4" { write_kb = 12 }
step "probe" "b5" { write_kb = 12 }
step "probe" "b6" { write_kb = 12 }
step "probe" "restore" {
  always   = true
  outage   = "end"
  write_kb = 1
}
`

// chainOf reads the journal on disk and the rescue file the apply wrote, checks
// that together they form one hash chain, and returns the records.
func chainOf(t *testing.T, state, rescue string, unwritten [][]byte) []engine.Record {
	t.Helper()
	disk, err := os.ReadFile(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile)); err != nil {
		t.Fatalf("the journal on disk must stay a verifiable prefix: %v", err)
	}
	all := append([]byte(nil), disk...)
	if rescue != "" {
		b, err := os.ReadFile(rescue)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	for _, l := range unwritten {
		all = append(all, l...)
	}
	whole := filepath.Join(t.TempDir(), "whole.jsonl")
	must(t, os.WriteFile(whole, all, 0o644))
	recs, _, err := engine.ReadJournal(whole)
	if err != nil {
		t.Fatalf("disk journal + rescued records must form one chain: %v", err)
	}
	return recs
}

// A full disk ends measurement, never the restore: at every size the restore runs,
// the outage closes, and every journal record is on disk or in the rescue file,
// as one chain (issue 8, item 2).
func TestDiskFullStillRestores(t *testing.T) {
	for _, size := range []string{"40k", "56k", "72k", "96k", "128k", "4m"} {
		t.Run(size, func(t *testing.T) {
			mnt := mountTmpfs(t, size)
			h := newHarness(t)
			h.state = filepath.Join(mnt, "state")
			rescueDir := t.TempDir()
			var alerts []string
			sum, err := engine.Apply(context.Background(), h.load(diskFullCampaign), h.reg, engine.Options{
				StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), FlushWait: 300 * time.Millisecond, RescueDir: rescueDir,
				Observe: func(e engine.Event) {
					if e.Kind == "alert" {
						alerts = append(alerts, e.Message)
					}
				},
			})
			if err != nil {
				if strings.Contains(err.Error(), "freeze plan") {
					t.Fatalf("size %s too small even for the frozen plan; pick sizes that let the campaign start: %v", size, err)
				}
				t.Fatal(err)
			}
			ran := h.probe.ran()
			if ran[len(ran)-1] != "probe.restore" {
				t.Fatalf("the restore must run last whatever the disk, ran %v", ran)
			}
			if sum.OutageOpen || sum.Status == engine.EndRestoreFailed {
				t.Fatalf("the restore succeeded, so the outage is closed: %+v", sum)
			}
			recs := chainOf(t, h.state, sum.Rescue, sum.Unwritten)
			if len(kinds(recs, engine.KindOutageEnd)) != 1 || len(kinds(recs, engine.KindCampaignEnd)) != 1 {
				t.Fatalf("the chain must hold the outage_end and the campaign_end")
			}
			full := sum.EvidenceError != ""
			t.Logf("size %s: ran %d steps, evidence error %v, rescue %q", size, len(ran), full, sum.Rescue)
			if size == "4m" {
				if full || sum.Status != engine.EndCompleted {
					t.Fatalf("4m holds everything: %+v", sum)
				}
				return
			}
			if !full {
				t.Fatalf("size %s must run out of space (the campaign writes ~90 KiB)", size)
			}
			if sum.Status != engine.EndHeld || sum.Cause != engine.CauseEvidence || len(alerts) == 0 {
				t.Fatalf("a full disk holds the campaign with cause evidence_write and says so: %+v alerts %q", sum, alerts)
			}
			// The restore's own evidence is kept: in the state directory, or where the
			// step_end says it went.
			for _, r := range attemptsOf(recs, "probe.restore") {
				if dir := between(r.Message, "written to ", ":"); dir != "" {
					if _, err := os.Stat(filepath.Join(dir, "out.txt")); err != nil {
						t.Fatalf("the restore's rescued artefacts are missing: %v", err)
					}
				} else if len(r.Artefacts) == 0 {
					t.Fatalf("the restore's artefacts are neither recorded nor rescued: %+v", r)
				}
			}
			end := lastEnd(t, recs)
			if end.Cause != engine.CauseEvidence {
				t.Fatalf("campaign_end cause %q", end.Cause)
			}
		})
	}
}

// When space comes back while the apply ends, the records kept in memory reach the
// journal, and the state verifies.
func TestDiskFreedWritesTheKeptRecords(t *testing.T) {
	mnt := mountTmpfs(t, "256k")
	h := newHarness(t)
	h.state = filepath.Join(mnt, "state")
	filler := filepath.Join(mnt, "filler")
	// Leave about 60 KiB: the campaign starts, then fills the disk.
	must(t, os.WriteFile(filler, make([]byte, 196<<10), 0o644))
	freed := make(chan struct{})
	var alert string
	sum, err := engine.Apply(context.Background(), h.load(diskFullCampaign), h.reg, engine.Options{
		StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), FlushWait: 5 * time.Second, RescueDir: t.TempDir(),
		Observe: func(e engine.Event) {
			if e.Kind == "alert" && strings.Contains(e.Message, "measurement ends here, restore still runs") {
				select {
				case <-freed:
				default:
					alert = e.Message
					close(freed)
					// The operator frees space a moment later.
					go func() { time.Sleep(100 * time.Millisecond); _ = os.Remove(filler) }()
				}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.EvidenceError == "" || sum.Rescue != "" || len(sum.Unwritten) > 0 {
		t.Fatalf("the disk filled and was freed: everything must reach the journal: %+v", sum)
	}
	// The alert and the reason say once that evidence could not be written (the
	// journal's error already says it).
	for what, s := range map[string]string{"alert": alert, "reason": sum.Reason} {
		if n := strings.Count(s, "evidence could not be written"); n != 1 {
			t.Errorf("the %s says %d times that evidence could not be written: %s", what, n, s)
		}
	}
	recs := chainOf(t, h.state, "", nil)
	if len(kinds(recs, engine.KindOutageEnd)) != 1 || lastEnd(t, recs).Cause != engine.CauseEvidence {
		t.Fatal("the journal on disk must end with the outage closed and the campaign held for the evidence error")
	}
	problems, err := engine.Verify(h.state)
	if err != nil || len(problems) > 0 {
		t.Fatalf("verify after space came back: %v %v", problems, err)
	}
}

func TestRescueFileIsJSONLines(t *testing.T) {
	mnt := mountTmpfs(t, "40k")
	h := newHarness(t)
	h.state = filepath.Join(mnt, "state")
	sum, err := engine.Apply(context.Background(), h.load(diskFullCampaign), h.reg, engine.Options{
		StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), FlushWait: 100 * time.Millisecond, RescueDir: t.TempDir(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rescue == "" {
		t.Fatalf("at 40k the journal cannot take every record: want a rescue file, got %+v", sum)
	}
	f, err := os.Open(sum.Rescue)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var r engine.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("rescue line %d: %v", n+1, err)
		}
		n++
	}
	if n == 0 {
		t.Fatal("empty rescue file")
	}
}

// TestFailedFsyncIsAFailedWrite: a record is on disk only once it is fsynced. A
// write the kernel took but could not sync (EIO) is an evidence-write failure; the
// file is cut back to the records that were synced, the record is kept in memory,
// and it is written with the next append once syncing works again.
func TestFailedFsyncIsAFailedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := engine.OpenJournal(path, engine.NewFakeClock(time.Date(2026, 12, 1, 5, 0, 0, 0, time.UTC)))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if _, err := j.Append(engine.Record{Kind: engine.KindApplyStart}); err != nil {
		t.Fatal(err)
	}
	synced, _ := os.ReadFile(path)
	engine.FailSyncs(j, syscall.EIO)
	_, err = j.Append(engine.Record{Kind: engine.KindStepStart, Step: "exec.x"})
	if !errors.Is(err, engine.ErrEvidenceWrite) || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("append with a failing fsync: %v, want ErrEvidenceWrite", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, synced) {
		t.Fatalf("the file holds an unsynced record:\n%s", now)
	}
	if n := len(j.Unwritten()); n != 1 {
		t.Fatalf("%d record(s) kept in memory, want 1", n)
	}
	engine.FailSyncs(j, nil)
	if _, err := j.Append(engine.Record{Kind: engine.KindStepEnd, Step: "exec.x"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(must1(os.ReadFile(path)))), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"step_start"`) || len(j.Unwritten()) != 0 {
		t.Fatalf("after syncing works again the file has %d records:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

func must1(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
