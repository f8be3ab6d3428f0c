package loadgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"sync"
	"time"
)

// warmMaxAge bounds how long a pre-dialed connection may sit unused before it is
// handed out. Servers close idle connections (uvicorn's keep-alive default is 5 s);
// handing out a dead one would fail a request for a reason that has nothing to do
// with the server under test, so an older one is closed and a fresh dial recorded.
const warmMaxAge = 2 * time.Second

// testRootCAs, when a test sets it, replaces the system's roots (an httptest
// server's certificate); nil, always outside tests, is the system's.
var testRootCAs *x509.CertPool

type warmConn struct {
	conn net.Conn
	at   time.Time
}

// pool pre-dials connections before the block and hands them to the block's
// workers, so the first requests of the block do not pay for TCP (and TLS) setup.
// Dials made after warm-up are recorded separately.
type pool struct {
	addr   string
	dialFn func(ctx context.Context, addr string) (net.Conn, error)

	mu    sync.Mutex
	warm  []warmConn
	stats DialStats
}

func newPool(endpoint string) (*pool, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	p := &pool{addr: net.JoinHostPort(u.Hostname(), port)}
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	if u.Scheme == "https" {
		host := u.Hostname()
		p.dialFn = func(ctx context.Context, addr string) (net.Conn, error) {
			raw, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			// HTTP/1.1 only: one connection per concurrent stream, as measured.
			tc := tls.Client(raw, &tls.Config{ServerName: host, NextProtos: []string{"http/1.1"}, RootCAs: testRootCAs})
			if err := tc.HandshakeContext(ctx); err != nil {
				raw.Close()
				return nil, err
			}
			return tc, nil
		}
	} else {
		p.dialFn = func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}
	}
	return p, nil
}

// warmUp dials n connections in parallel. Any failure fails the warm-up: a block
// must not start against an endpoint that cannot be reached.
func (p *pool) warmUp(ctx context.Context, n int) error {
	type res struct {
		c   net.Conn
		d   time.Duration
		err error
	}
	ch := make(chan res, n)
	for range n {
		go func() {
			t0 := time.Now()
			c, err := p.dialFn(ctx, p.addr)
			ch <- res{c, time.Since(t0), err}
		}()
	}
	var firstErr error
	for range n {
		r := <-ch
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
			}
			continue
		}
		p.warm = append(p.warm, warmConn{r.c, time.Now()})
		p.stats.Warm++
		p.stats.WarmMS = append(p.stats.WarmMS, durMS(r.d))
	}
	if firstErr != nil {
		p.close()
		return fmt.Errorf("%w: %d of %d dials to %s failed: %v", ErrWarmup, n-len(p.warm), n, p.addr, firstErr)
	}
	return nil
}

// take hands out a warm connection, or nil when none is left. One older than
// warmMaxAge is closed instead: the server may have dropped it.
func (p *pool) take() *h1conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.warm) > 0 {
		w := p.warm[len(p.warm)-1]
		p.warm = p.warm[:len(p.warm)-1]
		if time.Since(w.at) < warmMaxAge {
			c := newH1Conn(w.conn)
			c.lastUsed = w.at
			return c
		}
		w.conn.Close()
	}
	return nil
}

// dial opens a connection during the block; it is recorded as an in-block dial.
func (p *pool) dial(ctx context.Context) (*h1conn, error) {
	t0 := time.Now()
	c, err := p.dialFn(ctx, p.addr)
	d := time.Since(t0)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.stats.InBlockFails++
		return nil, err
	}
	p.stats.InBlock++
	p.stats.InBlockMS = append(p.stats.InBlockMS, durMS(d))
	return newH1Conn(c), nil
}

// close closes unused warm connections.
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range p.warm {
		w.conn.Close()
	}
	p.warm = nil
}

func (p *pool) snapshot() DialStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.WarmMS = append([]float64{}, s.WarmMS...)
	s.InBlockMS = append([]float64{}, s.InBlockMS...)
	return s
}

// durMS converts to milliseconds at microsecond resolution.
func durMS(d time.Duration) float64 { return float64(d.Round(time.Microsecond)) / 1e6 }
