package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// Server is a `rigor agent`: it runs, for each connection, one slice of a block.
type Server struct {
	// Logf, when set, reports each connection and slice.
	Logf func(format string, args ...any)
}

// Serve accepts connections on ln until ctx ends, each on its own goroutine.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		wg.Go(func() { s.handle(ctx, nc) })
	}
}

func (s *Server) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// handle serves one authority: clock exchanges, then one job. When the authority
// goes away (its connection closes) the slice is cancelled: its records would have
// nowhere to go.
func (s *Server) handle(ctx context.Context, nc net.Conn) {
	defer nc.Close()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	c := newConn(nc)
	shutdown := ctx // the agent's own: it ends when the agent is told to stop
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	peer := nc.RemoteAddr().String()
	if err := c.send(message{T: kindHello, Version: Version, CPUs: runtime.GOMAXPROCS(0)}); err != nil {
		return
	}
	start := make(chan int64, 1)
	var running sync.WaitGroup
	defer running.Wait()
	jobs := 0
	for {
		m, err := c.read()
		if err != nil {
			cancel()
			return
		}
		switch m.T {
		case kindClock:
			// The send stamp is the last thing before the write: the turnaround
			// between the stamps is taken out of the round trip.
			_ = c.send(message{T: kindClock, RecvNS: m.at.UnixNano(), SendNS: time.Now().UnixNano()})
		case kindJob:
			if jobs++; jobs > 1 || m.Job == nil {
				_ = c.send(message{T: kindError, Error: "one job per connection"})
				continue
			}
			running.Go(func() { s.run(ctx, shutdown, c, *m.Job, start, peer) })
		case kindStart:
			select {
			case start <- m.AtNS:
			default:
			}
		case kindCancel:
			cancel()
		}
	}
}

// run runs one slice with loadgen.Run and streams its records back. A slice cut
// short because the agent itself is stopping (SIGTERM: a pod deleted, a container
// stopped) ends with an error after its records, never with a plain done: the
// authority must not read a slice the agent gave up on as one the block's bound cut.
func (s *Server) run(ctx, shutdown context.Context, c *conn, j job, start <-chan int64, peer string) {
	cfg := j.Config
	cfg.APIKey = loadgen.Secret(j.APIKey)
	if cfg.Slice == nil {
		_ = c.send(message{T: kindError, Error: "the job names no slice"})
		return
	}
	beats, stopBeats := context.WithCancel(ctx)
	defer stopBeats()
	go func() {
		t := time.NewTicker(beatEvery)
		defer t.Stop()
		for {
			select {
			case <-beats.Done():
				return
			case <-t.C:
				if c.send(message{T: kindBeat}) != nil {
					return
				}
			}
		}
	}()
	cfg.StartAt = func() (time.Time, error) {
		if err := c.send(message{T: kindReady}); err != nil {
			return time.Time{}, err
		}
		select {
		case ns := <-start:
			return time.Unix(0, ns), nil
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("cancelled before the start: %w", ctx.Err())
		}
	}
	slice := fmt.Sprintf("%d of %d", cfg.Slice.Index+1, cfg.Slice.Of)
	s.logf("slice %s of %s for %s: %d connections", slice, cfg.IDPrefix, peer, cfg.Slice.Connections(cfg.Concurrency))
	res, err := loadgen.Run(ctx, cfg, recordWriter{c})
	stopBeats()
	if res == nil {
		msg := "no error"
		if err != nil {
			msg = err.Error()
		}
		_ = c.send(message{T: kindError, Error: msg, Warmup: errors.Is(err, loadgen.ErrWarmup)})
		s.logf("slice %s of %s could not start: %s", slice, cfg.IDPrefix, msg)
		return
	}
	if shutdown.Err() != nil && res.Incomplete {
		_ = c.send(message{T: kindError, Error: fmt.Sprintf("stopped: the agent process is shutting down, after %d of its records", res.Requests-res.Outcomes[loadgen.Cancelled])})
		s.logf("slice %s of %s stopped: the agent is shutting down", slice, cfg.IDPrefix)
		return
	}
	done := message{T: kindDone, Result: res}
	if err != nil {
		done.Error = err.Error()
	}
	_ = c.send(done)
	s.logf("slice %s of %s done: %d records", slice, cfg.IDPrefix, res.Requests)
}
