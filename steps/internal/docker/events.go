package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
)

// Event is one Engine event about a container.
type Event struct {
	Action string    `json:"action"` // oom, die or kill
	At     time.Time `json:"at"`
	// Detail is what the engine attached: the exit code of a die, the signal of a kill.
	Detail string `json:"detail,omitempty"`
}

// ResourceEvents returns the oom, die and kill events the engine recorded for a
// container between since and until, oldest first: the resource errors and
// interventions that inspect alone cannot show (an OOM kill of a process inside a
// container that keeps running, a signal sent to it).
func (c *Client) ResourceEvents(ctx context.Context, container string, since, until time.Time) ([]Event, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	f := filters.NewArgs(filters.Arg("type", string(events.ContainerEventType)), filters.Arg("container", container),
		filters.Arg("event", string(events.ActionOOM)), filters.Arg("event", string(events.ActionDie)), filters.Arg("event", string(events.ActionKill)))
	msgs, errs := c.api.Events(ctx, events.ListOptions{Since: stamp(since), Until: stamp(until), Filters: f})
	var out []Event
	for {
		select {
		case m := <-msgs:
			e := Event{Action: string(m.Action), At: time.Unix(0, m.TimeNano).UTC()}
			switch m.Action {
			case events.ActionDie:
				e.Detail = "exit code " + m.Actor.Attributes["exitCode"]
			case events.ActionKill:
				e.Detail = "signal " + m.Actor.Attributes["signal"]
			}
			out = append(out, e)
		case err := <-errs:
			if err != nil && !errors.Is(err, io.EOF) {
				return out, fmt.Errorf("events of container %s on docker host %s: %w", container, c.host, err)
			}
			sort.SliceStable(out, func(i, k int) bool { return out[i].At.Before(out[k].At) })
			return out, nil
		}
	}
}

// stamp is the engine's timestamp form: seconds.nanoseconds since the epoch.
func stamp(t time.Time) string { return fmt.Sprintf("%d.%09d", t.Unix(), t.Nanosecond()) }
