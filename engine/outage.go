package engine

import (
	"fmt"
	"time"
)

// OutageView is the outage clock at one moment.
type OutageView struct {
	Open    bool
	Elapsed time.Duration
	Budget  time.Duration
	Reserve time.Duration
}

// Available is how long a step may still take without eating into the reserve.
func (o OutageView) Available() time.Duration {
	return o.Budget - o.Reserve - o.Elapsed
}

// String renders the clock as "outage 12m03s of 90m (20m reserved)".
func (o OutageView) String() string {
	if !o.Open {
		return "no outage open"
	}
	return fmt.Sprintf("outage %s of %s (%s reserved, %s available)",
		o.Elapsed.Truncate(time.Second), o.Budget, o.Reserve, o.Available().Truncate(time.Second))
}
