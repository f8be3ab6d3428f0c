package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// ErrPortInUse is returned (wrapped, with the address) when the listen address is taken.
var ErrPortInUse = errors.New("port already in use")

// Running is a simulated server listening on a real TCP address.
type Running struct {
	srv    *Server
	http   *http.Server
	ln     net.Listener
	served chan struct{}
}

// Listen starts a server for cfg on addr ("127.0.0.1:0" picks a free port).
func Listen(addr string, cfg Config) (*Running, error) {
	srv, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("sim: listen on %s: %w", addr, ErrPortInUse)
		}
		return nil, fmt.Errorf("sim: listen on %s: %w", addr, err)
	}
	rl := newRecycleListener(ln)
	rn := &Running{
		srv:    srv,
		ln:     rl,
		served: make(chan struct{}),
		http: &http.Server{
			Handler:           srv,
			ReadHeaderTimeout: 10 * time.Second,
			// Streaming responses write their connection directly and hand it back
			// through rl (see rawstream.go).
			ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
				return context.WithValue(ctx, recycleKey{}, rl)
			},
		},
	}
	go func() {
		defer close(rn.served)
		// Serve returns ErrServerClosed after Close; any other error also ends the server,
		// and Close still cleans up.
		_ = rn.http.Serve(rl)
	}()
	return rn, nil
}

// Addr is the address the server listens on, with the real port when ":0" was asked for.
func (r *Running) Addr() string { return r.ln.Addr().String() }

// URL is the server's base URL, e.g. "http://127.0.0.1:8000".
func (r *Running) URL() string { return "http://" + r.Addr() }

// Server is the handler behind the listener, for faults and stats.
func (r *Running) Server() *Server { return r.srv }

// Close stops listening, drops every connection, and returns once every handler (hung
// ones included) and the accept loop have ended, so the port is free again.
func (r *Running) Close() error {
	err := r.http.Close()
	r.srv.Close()
	<-r.served
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
