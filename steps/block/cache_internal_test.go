package block

import (
	"strings"
	"testing"
)

// TestContradictionThresholds holds the documented bounds: a cold block may have at
// most 5 % of its prompt tokens cached, a primed block needs at least 50 %, a block of
// shared prefixes at least 5 %; without an observed fraction nothing is contradicted.
func TestContradictionThresholds(t *testing.T) {
	cases := map[string]struct {
		expected string
		fraction *float64
		want     string // a substring; "" = no contradiction
	}{
		"cold at the bound":      {"cold", ptr(0.05), ""},
		"cold above it":          {"cold", ptr(0.0501), "expected cold, but 5.0 % of prompt tokens came from the prefix cache"},
		"primed at the bound":    {"primed", ptr(0.50), ""},
		"primed below it":        {"primed", ptr(0.4999), "primed needs at least 50.0 %): the primed corpus was not resident"},
		"shared at the bound":    {"shared", ptr(0.05), ""},
		"shared below it":        {"shared", ptr(0.0499), "shared needs at least 5.0 %"},
		"nothing observed, cold": {"cold", nil, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := contradiction(tc.expected, observed{Source: "native", Fraction: tc.fraction})
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("contradiction %q, want %q", got, tc.want)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }
