package procgroup

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startGroup starts a shell that leaves a job in the background, in a process
// group of its own, as the steps' command runner does. It returns the group and
// the background job's pid.
func startGroup(t *testing.T) (pgid, job int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $! > job.pid; wait")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "job.pid")); err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			job, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return cmd.Process.Pid, job
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell did not start its job")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func running(pid int) bool {
	_, zombie, err := Stat(pid)
	return err == nil && !zombie
}

func TestKillLeftKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pgid, job := startGroup(t)
	// The apply that would remove the record once the command ended was killed.
	Record(dir, pgid)
	killed, err := KillLeft(dir)
	if err != nil || len(killed) != 1 || killed[0].PGID != pgid {
		t.Fatalf("killed %+v (%v), want group %d", killed, err, pgid)
	}
	if running(pgid) || running(job) {
		t.Errorf("the shell (%v) or its background job (%v) still runs", running(pgid), running(job))
	}
	if got := Describe(killed); got != "process group "+strconv.Itoa(pgid) {
		t.Errorf("Describe = %q", got)
	}
	// The record stays, as evidence of what was killed; a second pass finds
	// nothing left to kill.
	if again, err := KillLeft(dir); err != nil || len(again) != 0 {
		t.Errorf("second pass killed %+v (%v)", again, err)
	}
}

func TestRecordIsRemovedWhenTheCommandEnds(t *testing.T) {
	dir := t.TempDir()
	forget := Record(dir, os.Getpid())
	names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
	if len(names) != 1 {
		t.Fatalf("records %v, want one", names)
	}
	// Empty: a record takes no block of a full file system.
	if st, err := os.Stat(names[0]); err != nil || st.Size() != 0 {
		t.Fatalf("record %v (%v), want an empty file", st, err)
	}
	forget()
	if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) != 0 {
		t.Errorf("left %v", names)
	}
	// Without an attempt directory nothing is written.
	Record("", os.Getpid())()
}

// A record whose leader's pid now belongs to a process that started at another
// time names a group that is gone: that process is not killed.
func TestKillLeftSparesAProcessThatReusedThePid(t *testing.T) {
	dir := t.TempDir()
	pgid, job := startGroup(t)
	ticks, _, err := Stat(pgid)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, Group{PGID: pgid, StartTicks: ticks + 1, Boot: bootID()}.name()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	killed, err := KillLeft(dir)
	if err != nil || len(killed) != 0 {
		t.Fatalf("killed %+v (%v), want nothing", killed, err)
	}
	if !running(pgid) || !running(job) {
		t.Error("a process that is not the recorded leader's group was killed")
	}
}

// A record from another boot (the machine was lost and restarted) names a group
// of that boot: whatever has its number now is not killed, even a group whose
// leader is gone, which the start time cannot tell apart.
func TestKillLeftSparesAGroupOfAnotherBoot(t *testing.T) {
	if bootID() == unknownBoot {
		t.Skip("this system does not say which boot it is")
	}
	dir := t.TempDir()
	pgid, job := startGroup(t)
	// The leader (the shell) exits; its background job stays in the group.
	if err := syscall.Kill(pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); running(pgid) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(dir, Group{PGID: pgid, StartTicks: 1, Boot: "00000000-0000-0000-0000-000000000000"}.name()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	killed, err := KillLeft(dir)
	if err != nil || len(killed) != 0 || !running(job) {
		t.Fatalf("killed %+v (%v), job running %v: want nothing killed", killed, err, running(job))
	}
	// The same group recorded in this boot is the step's: its job is killed.
	if err := os.WriteFile(filepath.Join(dir, Group{PGID: pgid, StartTicks: 1, Boot: bootID()}.name()), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if killed, err := KillLeft(dir); err != nil || len(killed) != 1 || running(job) {
		t.Fatalf("killed %+v (%v), job running %v: want the group killed", killed, err, running(job))
	}
}

func TestKillLeftNamesABadRecord(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, filePrefix+"12x")
	if err := os.WriteFile(bad, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := KillLeft(dir)
	if err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("error %v, want one naming %s", err, bad)
	}
}

func TestForgetRemovesOnlyRecords(t *testing.T) {
	dir := t.TempDir()
	Record(dir, os.Getpid())
	for _, name := range []string{"journal.jsonl", filePrefix + "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	Forget(dir)
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 2 {
		t.Errorf("left %v, want journal.jsonl and %snotes.txt", names, filePrefix)
	}
	if IsRecord(filePrefix+"notes.txt") || !IsRecord(Group{PGID: 12, StartTicks: 3, Boot: "b"}.name()) {
		t.Error("IsRecord takes a file for a record, or a record for a file")
	}
}

func TestDirTravelsInTheContext(t *testing.T) {
	if got := Dir(WithDir(context.Background(), "/s/attempts/x/1")); got != "/s/attempts/x/1" {
		t.Errorf("Dir = %q", got)
	}
	if got := Dir(context.Background()); got != "" {
		t.Errorf("Dir of a bare context = %q", got)
	}
}
