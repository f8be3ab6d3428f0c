package target

import (
	"fmt"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// SimSpec is the simulator container a target describes.
func SimSpec(t Target) (sim.ContainerSpec, error) {
	listen, err := t.Listen()
	if err != nil {
		return sim.ContainerSpec{}, err
	}
	if !strings.HasPrefix(t.Image, "sim:") {
		return sim.ContainerSpec{}, fmt.Errorf("target %s: a sim target needs image = \"sim:<profile>\" or profile = \"<profile>\", got %q", t.Name, t.Image)
	}
	prof, err := sim.LookupProfile(strings.TrimPrefix(t.Image, "sim:"))
	if err != nil {
		return sim.ContainerSpec{}, fmt.Errorf("target %s: %w", t.Name, err)
	}
	cfg := sim.Config{Profile: prof, ModelName: t.Model, Seed: t.Seed, TimeScale: t.TimeScale, ReasoningField: t.Reasoning, Faults: t.Faults, Engine: t.Engine}
	return sim.ContainerSpec{Name: t.Container, Image: t.Image, Listen: listen, Config: cfg}, nil
}

// SimOccupant returns the running simulator container that serves an endpoint, if
// any: the container a deploy must take out of service first.
func SimOccupant(h *sim.Host, endpoint string) (sim.ContainerInfo, bool, error) {
	list, err := h.List()
	if err != nil {
		return sim.ContainerInfo{}, false, err
	}
	for _, c := range list {
		if c.Status == sim.StatusRunning && strings.TrimRight(c.Endpoint, "/") == endpoint {
			return c, true, nil
		}
	}
	return sim.ContainerInfo{}, false, nil
}

// SimInspect inspects a sim target's container on its host.
func SimInspect(t Target) (sim.ContainerInfo, error) {
	h, err := SimHost(t)
	if err != nil {
		return sim.ContainerInfo{}, err
	}
	return h.Inspect(t.Container)
}
