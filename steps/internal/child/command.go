package child

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/rigor-bench/rigor/engine/procgroup"
)

// KillGrace is how long a killed command may take to close its output. A command
// that started children of its own (a shell running a background job) leaves them
// holding its stdout; they die with it (the whole process group is killed), and
// whatever escaped the group is cut off after this.
const KillGrace = time.Second

// Cmd is a child process started by Command.
type Cmd struct {
	*osexec.Cmd
	ctx    context.Context
	cancel context.CancelFunc
}

// Command is argv with Env(declared...) for its whole environment, in a process
// group of its own so that killing it kills everything it started. When ctx has a
// deadline (a step's hard bound), the command is killed a little before it
// (KillGrace, or a quarter of the time left when that is less), so that Run has
// returned, output collected, by the deadline: the outage clock counts a step at
// its bound, and a step that returned later would eat into the restore's reserve.
func Command(ctx context.Context, argv []string, declared ...string) *Cmd {
	var cancel context.CancelFunc = func() {}
	lead := KillGrace
	if deadline, ok := ctx.Deadline(); ok {
		lead = min(KillGrace, time.Until(deadline)/4)
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-max(lead, 0)))
	}
	cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = Env(declared...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			return err
		}
		return os.ErrProcessDone
	}
	cmd.WaitDelay = max(lead, time.Millisecond)
	return &Cmd{Cmd: cmd, ctx: ctx, cancel: cancel}
}

// ErrBound is wrapped by Run's error when the command was killed because the
// deadline it was given came; errors.Is(err, context.DeadlineExceeded) holds too.
var ErrBound = fmt.Errorf("killed at its bound: %w", context.DeadlineExceeded)

// running holds the process groups of the commands started and not yet waited for.
var running = struct {
	sync.Mutex
	groups map[int]bool
}{groups: map[int]bool{}}

// KillAll kills the process group of every command started and not yet waited for
// and returns how many it killed: an apply that exits at once (a third interrupt)
// must not leave a step's command, a restore among them, running without it.
func KillAll() int {
	running.Lock()
	defer running.Unlock()
	n := 0
	for pgid := range running.groups {
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// Run runs the command. When it was killed at its bound the error wraps ErrBound;
// when the context was cancelled, the context's error.
func (c *Cmd) Run() error {
	defer c.cancel()
	err := c.Cmd.Start()
	if err == nil {
		pgid := c.Process.Pid // Setpgid: the group is the child's own
		running.Lock()
		running.groups[pgid] = true
		running.Unlock()
		// Should rigor be killed, the next apply kills the group (procgroup).
		forget := procgroup.Record(procgroup.Dir(c.ctx), pgid)
		err = c.Cmd.Wait()
		forget()
		running.Lock()
		delete(running.groups, pgid)
		running.Unlock()
	}
	switch ctxErr := c.ctx.Err(); {
	case err == nil || ctxErr == nil:
		return err
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return fmt.Errorf("%w (%v)", ErrBound, err)
	default:
		return fmt.Errorf("%w (%v)", ctxErr, err)
	}
}
