package loadgen

import (
	"fmt"
	"time"
)

// progressEvery is the shortest interval between two progress reports from a Tally.
const progressEvery = 100 * time.Millisecond

// Tally turns the records of a running block into live progress: requests done and
// failed (any outcome but ok), completion tokens, and the output rate since the first
// record. Feed it from Config.OnRecord (whose calls never overlap); it is not safe for
// concurrent use otherwise.
type Tally struct {
	Total, Done, Failed, Tokens int

	start, last time.Time
	now         func() time.Time
}

// NewTally starts a tally for a block of total requests; the rate clock starts now.
func NewTally(total int) *Tally {
	t := &Tally{Total: total, now: time.Now}
	t.start = t.now()
	return t
}

// Add counts r and reports whether it is time to show progress: at most every 100 ms,
// and always for the last record.
func (t *Tally) Add(r Record) bool {
	t.Done++
	if r.Outcome != OK {
		t.Failed++
	}
	if r.Usage != nil {
		t.Tokens += r.Usage.CompletionTokens
	}
	now := t.now()
	if t.Done >= t.Total || now.Sub(t.last) >= progressEvery {
		t.last = now
		return true
	}
	return false
}

// TokPerS is the completion tokens of finished requests per second since the start.
func (t *Tally) TokPerS() float64 {
	el := t.now().Sub(t.start).Seconds()
	if el <= 0 {
		return 0
	}
	return float64(t.Tokens) / el
}

// Rate is the rate as progress text, e.g. "412 tok/s".
func (t *Tally) Rate() string { return fmt.Sprintf("%.0f tok/s", t.TokPerS()) }
