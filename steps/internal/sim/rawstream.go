package sim

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// The raw streaming path. Through net/http every token event costs a trip through the
// response's bufio.Writer, the chunk writer (fmt for the chunk size) and the connection's
// bufio.Writer before its write syscall. When the server is served by Listen, a streaming
// response instead hijacks its connection, writes the HTTP/1.1 header and every chunk
// itself (each flush one chunk, framed in place, in one write), and afterwards hands the
// connection back to the http.Server through the listener, so keep-alive clients reuse it
// exactly as before. Anywhere else (httptest, a mux of someone else's server) the
// net/http path serves, with the same bytes on the wire.

// chunkHeadRoom is the space reserved at the start of a raw stream's buffer for the chunk
// size line: 8 hex digits and CRLF cover any buffer the server builds.
const chunkHeadRoom = 10

// recycleKey marks, in a request's context, the listener that takes hijacked connections back.
type recycleKey struct{}

// recycleListener is a net.Listener whose Accept also returns connections handed back
// after a raw stream, so that the http.Server serves their next request.
type recycleListener struct {
	net.Listener
	conns chan net.Conn
	errc  chan error

	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func newRecycleListener(ln net.Listener) *recycleListener {
	l := &recycleListener{Listener: ln, conns: make(chan net.Conn), errc: make(chan error), done: make(chan struct{})}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				// The http.Server decides: it retries temporary errors and stops on others.
				select {
				case l.errc <- err:
				case <-l.done:
					return
				}
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue
			}
			select {
			case l.conns <- c:
			case <-l.done:
				c.Close()
				return
			}
		}
	}()
	return l
}

func (l *recycleListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case err := <-l.errc:
		return nil, err
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *recycleListener) Close() error {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// recycle hands c back for its next request, or closes it once the listener is closed.
func (l *recycleListener) recycle(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		c.Close()
	}
}

// rawConn is a hijacked connection carrying one streaming response.
type rawConn struct {
	conn    net.Conn
	l       *recycleListener
	pending []byte // request bytes already read from the client: its next request
	// watching is closed when the client-gone watcher has stopped; the watcher cancels the
	// exchange's context when the client closes the connection.
	watching chan struct{}
	readErr  error
}

// hijackRaw takes over the connection of r for a streaming response with the given
// header, or returns nil when this request must go through net/http. The request body
// must already have been read.
func hijackRaw(w http.ResponseWriter, r *http.Request, header http.Header, cancel context.CancelFunc) *rawConn {
	l, _ := r.Context().Value(recycleKey{}).(*recycleListener)
	if l == nil || r.ProtoMajor != 1 || r.ProtoMinor < 1 || r.Close {
		return nil
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil
	}
	// Whatever the decoder left unread (trailing whitespace) must not be taken for the
	// next request; a body too long to drain cheaply goes the net/http way.
	if n, _ := bufio.NewReader(r.Body).Discard(64 << 10); n >= 64<<10 {
		return nil
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil
	}
	rc := &rawConn{conn: conn, l: l, watching: make(chan struct{})}
	_ = conn.SetDeadline(time.Time{})
	if n := brw.Reader.Buffered(); n > 0 {
		// A pipelined request is already here: keep it for later and rely on write errors
		// to notice a client that leaves.
		b, _ := brw.Reader.Peek(n)
		rc.pending = append([]byte(nil), b...)
		close(rc.watching)
	} else {
		go rc.watch(cancel)
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	h := header.Clone()
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Transfer-Encoding", "chunked")
	_ = h.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		cancel()
	}
	return rc
}

// watch waits for the client to close the connection (or to send its next request) and
// cancels the exchange in the first case.
func (rc *rawConn) watch(cancel context.CancelFunc) {
	defer close(rc.watching)
	buf := make([]byte, 4096)
	n, err := rc.conn.Read(buf)
	rc.pending = append(rc.pending, buf[:n]...)
	rc.readErr = err
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		cancel()
	}
}

// frame turns buf, whose first chunkHeadRoom bytes are reserved, into one HTTP chunk
// and returns the bytes to write.
func frame(buf []byte) []byte {
	n := len(buf) - chunkHeadRoom
	var size [chunkHeadRoom]byte
	h := strconv.AppendUint(size[:0], uint64(n), 16)
	h = append(h, '\r', '\n')
	start := chunkHeadRoom - len(h)
	copy(buf[start:], h)
	buf = append(buf, '\r', '\n')
	return buf[start:]
}

// finish ends the raw stream: a complete response (ok) gets its terminating chunk and the
// connection goes back to the http.Server for the client's next request; otherwise it is
// closed, which is how a client sees a cut or abandoned stream. As with net/http, the
// terminating chunk leaves after the handler's last OnChunk call.
func (rc *rawConn) finish(ok bool) {
	if ok {
		_, err := rc.conn.Write([]byte("0\r\n\r\n"))
		ok = err == nil
	}
	_ = rc.conn.SetReadDeadline(time.Unix(1, 0))
	<-rc.watching
	if !ok || (rc.readErr != nil && !errors.Is(rc.readErr, os.ErrDeadlineExceeded)) {
		rc.conn.Close()
		return
	}
	_ = rc.conn.SetReadDeadline(time.Time{})
	c := rc.conn
	for {
		pc, ok := c.(*prefixConn)
		if !ok || len(pc.prefix) > 0 {
			break
		}
		c = pc.Conn
	}
	if len(rc.pending) > 0 {
		c = &prefixConn{Conn: c, prefix: rc.pending}
	}
	rc.l.recycle(c)
}

// prefixConn replays bytes already read from a connection before reading on from it.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}
