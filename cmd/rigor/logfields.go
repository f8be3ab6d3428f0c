package main

import (
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/rigor-bench/rigor/engine"
)

// Log fields are for people first: durations rounded and without trailing zero
// units ("1h30m", not "1h30m0s"), no field that repeats the message or another
// field, and signals by their names.

// shortDuration renders d rounded to the millisecond below one second, to 10 ms
// below a minute and to the second above, without the zero minutes and seconds
// time.Duration prints: 274ms, 1.94s, 1h30m.
func shortDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second && d > -time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute && d > -time.Minute:
		return d.Round(10 * time.Millisecond).String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// outageText is the outage clock as a log field or a bar shows it, without the
// word "outage" the field name or the bar's label already says:
// "8s of 1h30m (20m reserved, 1h9m52s available)".
func outageText(o engine.OutageView) string {
	return shortDuration(o.Elapsed.Truncate(time.Second)) + " of " + shortDuration(o.Budget) +
		" (" + shortDuration(o.Reserve) + " reserved, " + shortDuration(o.Available().Truncate(time.Second)) + " available)"
}

// classField is the failure class a step_end line shows, or "" when the line
// already says it: the class equals the status (interrupted), or the message
// names it ("not started: interrupted by SIGINT"). JSON logs keep every class:
// a program reads them field by field.
func classField(g *globals, e engine.Event) string {
	c := string(e.Class)
	if c == "" || g.logFormat == "json" {
		return c
	}
	if c == string(e.Status) || containsWord(firstLine(e.Message), c) {
		return ""
	}
	return c
}

// containsWord reports whether w occurs in s as a whole word (letters, digits and
// underscores delimit words): "health" is not in "healthy".
func containsWord(s, w string) bool {
	isWord := func(b byte) bool {
		return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
	}
	for i := 0; ; {
		j := strings.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !isWord(s[j-1])) && (end == len(s) || !isWord(s[end])) {
			return true
		}
		i = j + 1
	}
}

// signalName names a signal as people write it: SIGINT, not "interrupt".
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return s.String()
}
