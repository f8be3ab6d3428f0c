// Package deploy is the deploy step type: it takes the current occupant of a
// target's endpoint out of service (saving its full inspect record first, as the
// restore manifest), then starts the target and waits for its health endpoint within
// a bound. A health timeout is the stop-class failure "health".
package deploy
