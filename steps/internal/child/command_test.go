package child

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCommandReturnsByItsDeadline runs a shell that leaves a background job holding
// its stdout: Run returns before the deadline, says the bound killed it, and the
// background job is dead too (gone, or a zombie where nothing reaps orphans).
func TestCommandReturnsByItsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	deadline, _ := ctx.Deadline()
	var out strings.Builder
	cmd := Command(ctx, []string{"sh", "-c", "sleep 60 & echo $!; sleep 60"})
	cmd.Stdout = &out
	err := cmd.Run()
	if returned := time.Now(); returned.After(deadline) {
		t.Errorf("Run returned %s after the deadline", returned.Sub(deadline))
	}
	if !errors.Is(err, ErrBound) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want ErrBound", err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(out.String()))
	if perr != nil {
		t.Fatalf("background job's pid %q: %v", out.String(), perr)
	}
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && !strings.Contains(string(stat), ") Z ") {
		t.Errorf("the background job is still running: %s", stat)
	}
}

// TestCommandCancelled reports an interrupt as the context's cancellation, not as
// the bound.
func TestCommandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	err := Command(ctx, []string{"sleep", "60"}).Run()
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrBound) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestCommandEnvironment gives the child only the inherited variables and what was
// declared.
func TestCommandEnvironment(t *testing.T) {
	t.Setenv("RIGOR_VAR_api_key", "sk-1")
	var out strings.Builder
	cmd := Command(context.Background(), []string{"sh", "-c", "echo ${RIGOR_VAR_api_key:-unset} $DECLARED"}, "DECLARED=yes")
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "unset yes\n" {
		t.Errorf("child printed %q, want %q", got, "unset yes\n")
	}
}

// TestCommandKilledAheadOfItsDeadline: a command that outlives its bound is killed
// KillGrace before the deadline, or a quarter of the time left when that is less,
// so Run has returned, output collected, by the deadline.
func TestCommandKilledAheadOfItsDeadline(t *testing.T) {
	for _, tc := range []struct {
		bound, lead time.Duration
	}{
		{6 * time.Second, KillGrace},              // four seconds or more: a second ahead
		{2 * time.Second, 500 * time.Millisecond}, // less: a quarter of the time left
	} {
		t.Run(tc.bound.String(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), tc.bound)
			defer cancel()
			deadline, _ := ctx.Deadline()
			err := Command(ctx, []string{"sleep", "60"}).Run()
			ahead := time.Until(deadline)
			if !errors.Is(err, ErrBound) {
				t.Errorf("err = %v, want ErrBound", err)
			}
			if ahead < tc.lead-400*time.Millisecond || ahead > tc.lead+50*time.Millisecond {
				t.Errorf("Run returned %s before the deadline, want about %s", ahead, tc.lead)
			}
		})
	}
}
