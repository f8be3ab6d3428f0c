package gpu

import (
	"fmt"
	"strings"
)

// Gate is the GPU part of a gate block.
type Gate struct {
	Name        string
	PowerLimitW *float64 // every device's management and enforced limit
	Count       *int     // exact number of devices
	Driver      string   // driver version, or a prefix of its components ("570")
}

// Empty reports whether the gate checks nothing about GPUs.
func (g Gate) Empty() bool { return g.PowerLimitW == nil && g.Count == nil && g.Driver == "" }

// Check is one checked property, as gates.json records them.
type Check struct {
	Gate   string `json:"gate"`
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Check evaluates the gate against a snapshot: one check per property, and for the
// power limit one per device, so evidence names the device that failed.
func (g Gate) Check(devs []Device) []Check {
	var out []Check
	add := func(name string, ok bool, format string, args ...any) {
		out = append(out, Check{Gate: g.Name, Check: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	if g.Count != nil {
		add("gpu_count", len(devs) == *g.Count, "%d GPU(s) present, %d expected", len(devs), *g.Count)
	}
	if g.Driver != "" {
		var bad []string
		for _, d := range devs {
			if !DriverMatches(g.Driver, d.Driver) {
				bad = append(bad, fmt.Sprintf("%s has %s", d.Label(), d.Driver))
			}
		}
		switch {
		case len(devs) == 0:
			add("driver", false, "no GPU to read a driver version from; %s expected", g.Driver)
		case len(bad) > 0:
			add("driver", false, "%s; %s expected", strings.Join(bad, ", "), g.Driver)
		default:
			add("driver", true, "driver %s on every GPU (%s expected)", devs[0].Driver, g.Driver)
		}
	}
	if g.PowerLimitW != nil {
		want := *g.PowerLimitW
		if len(devs) == 0 {
			add("power_limit_watts", false, "no GPU to check; %g W expected", want)
		}
		for _, d := range devs {
			ok := SameLimit(d.PowerLimitW, want) && SameLimit(d.EnforcedPowerLimitW, want)
			add("power_limit_watts", ok, "%s: limit %g W, enforced %g W, %g W expected", d.Label(), d.PowerLimitW, d.EnforcedPowerLimitW, want)
		}
	}
	return out
}

// Failed returns the first failed check, if any.
func Failed(checks []Check) (Check, bool) {
	for _, c := range checks {
		if !c.OK {
			return c, true
		}
	}
	return Check{}, false
}
