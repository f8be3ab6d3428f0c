package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
)

func TestShortDuration(t *testing.T) {
	cases := map[string]struct {
		in   time.Duration
		want string
	}{
		"zero":              {0, "0s"},
		"milliseconds":      {274*time.Millisecond + 400*time.Microsecond, "274ms"},
		"seconds rounded":   {1943 * time.Millisecond, "1.94s"},
		"minutes rounded":   {61*time.Second + 600*time.Millisecond, "1m2s"},
		"whole minutes":     {20 * time.Minute, "20m"},
		"hours and minutes": {90 * time.Minute, "1h30m"},
		"whole hours":       {2 * time.Hour, "2h"},
		"every unit":        {time.Hour + 9*time.Minute + 51*time.Second, "1h9m51s"},
		"ten seconds":       {10 * time.Second, "10s"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := shortDuration(tc.in); got != tc.want {
				t.Errorf("shortDuration(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// The outage clock is truncated to whole seconds, never rounded up: 8.7 s is 8s.
func TestOutageText(t *testing.T) {
	o := engine.OutageView{Open: true, Elapsed: 8*time.Second + 700*time.Millisecond, Budget: 90 * time.Minute, Reserve: 20 * time.Minute}
	if diff := cmp.Diff("8s of 1h30m (20m reserved, 1h9m51s available)", outageText(o)); diff != "" {
		t.Error(diff)
	}
}

// TestClassField: the console line leaves out a class that its status or message
// already says, and keeps one it does not; JSON keeps every class.
func TestClassField(t *testing.T) {
	cases := map[string]struct {
		format, status, class, msg, want string
	}{
		"same as status":        {"console", "interrupted", "interrupted", "block cancelled", ""},
		"named by the message":  {"console", "blocked", "interrupted", "not started: interrupted by SIGINT", ""},
		"upstream class in msg": {"console", "blocked", "health", "not started: deploy.incumbent failed (health): port in use", ""},
		"only a longer word":    {"console", "failed", "health", "target incumbent did not become healthy", "health"},
		"not said anywhere":     {"console", "failed", "identity", "container restarted", "identity"},
		"json keeps it":         {"json", "interrupted", "interrupted", "block cancelled", "interrupted"},
		"none":                  {"console", "succeeded", "", "end", ""},
		"first line names it":   {"console", "failed", "gate", "gate failed\nsecond line names gate", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := &globals{logFormat: tc.format}
			e := engine.Event{Status: engine.Status(tc.status), Class: engine.FailureClass(tc.class), Message: tc.msg}
			if got := classField(g, e); got != tc.want {
				t.Errorf("classField = %q, want %q", got, tc.want)
			}
		})
	}
}
