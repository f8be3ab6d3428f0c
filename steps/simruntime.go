package steps

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// SimContainer is one simulator container as `rigor sim ps` shows it.
type SimContainer struct {
	Host        string    `json:"host"`
	HostDir     string    `json:"host_dir"`
	Name        string    `json:"name"`
	ID          string    `json:"id"`
	Image       string    `json:"image"`
	Status      string    `json:"status"`
	ExitCode    int       `json:"exit_code,omitempty"`
	OOMKilled   bool      `json:"oom_killed,omitempty"`
	PID         int       `json:"pid,omitempty"`
	Endpoint    string    `json:"endpoint"`
	StartedAt   time.Time `json:"started_at"`
	Incarnation string    `json:"incarnation,omitempty"`
	Log         string    `json:"log"`
}

// SimRoot is where simulator hosts keep their containers when a plan names no
// sim_dir.
func SimRoot() string { return sim.DefaultRoot() }

// simHosts opens the hosts under dir: dir itself when it is a host's directory (a
// plan's sim_dir), else every host below it; "" means SimRoot().
func simHosts(dir string) ([]*sim.Host, error) {
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, ".host")); err == nil {
			h, err := sim.OpenDir(dir)
			if err != nil {
				return nil, err
			}
			return []*sim.Host{h}, nil
		}
	}
	return sim.Hosts(dir)
}

// SimContainers lists the simulator containers under dir (see simHosts), by host
// then name: what a campaign left running, and what it left stopped.
func SimContainers(dir string) ([]SimContainer, error) {
	hosts, err := simHosts(dir)
	if err != nil {
		return nil, err
	}
	var out []SimContainer
	for _, h := range hosts {
		list, err := h.List()
		if err != nil {
			return nil, err
		}
		for _, c := range list {
			out = append(out, SimContainer{Host: h.Name(), HostDir: h.Dir(), Name: c.Name, ID: c.ID, Image: c.Image, Status: c.Status,
				ExitCode: c.ExitCode, OOMKilled: c.OOMKilled, PID: c.PID, Endpoint: c.Endpoint, StartedAt: c.StartedAt,
				Incarnation: c.Incarnation, Log: c.Log})
		}
	}
	return out, nil
}

// StopSimContainers stops the named containers under dir (all running ones when
// names is empty) and returns those it stopped. A name found nowhere is an error.
func StopSimContainers(dir string, names []string) ([]SimContainer, error) {
	list, err := SimContainers(dir)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	found := map[string]bool{}
	var stopped []SimContainer
	var errs []error
	for _, c := range list {
		if len(names) > 0 && !want[c.Name] && !want[c.ID] {
			continue
		}
		found[c.Name], found[c.ID] = true, true
		if c.Status != sim.StatusRunning {
			continue
		}
		h, err := sim.OpenHost(c.Host, c.HostDir)
		if err == nil {
			err = h.Stop(c.ID)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		stopped = append(stopped, c)
	}
	for _, n := range names {
		if !found[n] {
			errs = append(errs, fmt.Errorf("no simulator container %q under %s", n, orRoot(dir)))
		}
	}
	return stopped, errors.Join(errs...)
}

func orRoot(dir string) string {
	if dir == "" {
		return sim.DefaultRoot()
	}
	return dir
}

// ServeSimContainer serves the container whose directory is dir until stopped: what
// the runtime runs as `rigor sim serve --container DIR`, and what a person can run by
// hand to bring one back in the foreground.
func ServeSimContainer(dir string) int { return sim.ServeContainer(dir) }
