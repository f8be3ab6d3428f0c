package steps

import (
	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// SimOptions configure a standalone simulator server (`rigor sim serve`).
type SimOptions struct {
	Profile        string
	Listen         string
	Model          string
	ReasoningField string
	TimeScale      float64
	Seed           uint64
}

// SimProfiles lists the simulator's built-in profiles.
func SimProfiles() []string { return sim.ProfileNames() }

// ServeSimulator starts the simulator on a real socket and returns its URL and a
// function that stops it.
func ServeSimulator(o SimOptions) (string, func() error, error) {
	prof, err := sim.LookupProfile(o.Profile)
	if err != nil {
		return "", nil, err
	}
	r, err := sim.Listen(o.Listen, sim.Config{Profile: prof, ModelName: o.Model, Seed: o.Seed, TimeScale: o.TimeScale, ReasoningField: o.ReasoningField})
	if err != nil {
		return "", nil, err
	}
	return r.URL(), r.Close, nil
}
