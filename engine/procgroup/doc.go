// Package procgroup keeps a record, in a step attempt's directory, of each process
// group a step's command runs in, from the command's start until it exits: an
// apply killed with SIGKILL (or by the OOM killer, or a lost machine session)
// cannot kill its children, and a restore or a benchmark left running would run
// beside the next apply's. The next apply's recovery kills the groups its dead attempts left
// (KillLeft) before anything else runs. When the attempt directory could not be
// made (a full disk), the record goes to the state's root, where recovery looks
// too and, having killed what it names, removes it (Forget). The record is
// removed when the command exits, so only a dead apply's attempts hold one (an apply that exits on a third
// interrupt, after killing the groups itself, leaves its records too). A process
// the command leaves behind after it exits is not covered, nor one it runs in a
// container through docker exec (only the docker client is in the group), nor a
// command killed with rigor in the instant between its start and its record.
//
// Steps never call Record themselves: the engine puts the attempt directory in
// the step's context (WithDir) and the command runner of the steps records the
// group (steps/internal/child).
package procgroup
