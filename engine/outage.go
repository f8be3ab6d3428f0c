package engine

import (
	"fmt"
	"time"
)

// OutageView is the outage clock at one moment.
type OutageView struct {
	Open    bool
	Window  int // the outage window's number, from 1
	Elapsed time.Duration
	Budget  time.Duration
	Reserve time.Duration
}

// Available is how long a step may still take without eating into the reserve
// (Reserve is what must stay free for the always-steps: the declared reserve, or
// their bounds if those are larger).
func (o OutageView) Available() time.Duration {
	return o.Budget - o.Reserve - o.Elapsed
}

// String renders the clock as "outage 12m3s of 1h30m0s (20m0s reserved, 57m57s
// available)", or "no outage open".
func (o OutageView) String() string {
	if !o.Open {
		return "no outage open"
	}
	return fmt.Sprintf("outage %s of %s (%s reserved, %s available)",
		o.Elapsed.Truncate(time.Second), o.Budget, o.Reserve, o.Available().Truncate(time.Second))
}
