package calibrate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strconv"
	"syscall"
	"time"
)

// arrivalListener stamps when each request reaches the server: the kernel receive
// time (SO_TIMESTAMPNS) of the socket read that returned the request's first bytes.
// It reads the request framing itself (request line and headers up to the blank
// line, then Content-Length bytes of body) to know where each request on a
// keep-alive connection starts and which X-Request-Id it carries, so the stamp is
// taken before net/http parses anything and before any handler queueing: when C
// requests arrive at once, the last handler starts long after its request arrived,
// and that wait is part of the server's TTFT, not an error of the client.
type arrivalListener struct {
	net.Listener
	truth *Truth
}

func (l *arrivalListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c, nil
	}
	ac := &arrivalConn{TCPConn: tc, rc: rc, truth: l.truth}
	_ = rc.Control(func(fd uintptr) {
		ac.kernel = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1) == nil
	})
	return ac, nil
}

// arrivalConn is an accepted connection whose reads go through recvmsg, to get the
// kernel's receive timestamp with the bytes.
type arrivalConn struct {
	*net.TCPConn
	rc     syscall.RawConn
	truth  *Truth
	kernel bool
	oob    [128]byte

	// request framing
	state    int // 0: between requests, 1: in the header, 2: in the body, 3: untracked
	start    int64
	source   string
	hdr      []byte
	bodyLeft int64
}

const maxTrackedHeader = 1 << 20

func (c *arrivalConn) Read(p []byte) (int, error) {
	if !c.kernel {
		n, err := c.TCPConn.Read(p)
		if n > 0 {
			c.track(p[:n], time.Now().UnixNano(), RecvRead)
		}
		return n, err
	}
	var n, oobn int
	var rerr error
	err := c.rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = syscall.Recvmsg(int(fd), p, c.oob[:], 0)
		return !errors.Is(rerr, syscall.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if n < 0 {
			n = 0
		}
		return n, err
	}
	if n == 0 {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	ns, source := time.Now().UnixNano(), RecvRead
	if k, ok := kernelStamp(c.oob[:oobn]); ok {
		ns, source = k, RecvKernel
	}
	c.track(p[:n], ns, source)
	return n, nil
}

// kernelStamp extracts SCM_TIMESTAMPNS from a control message buffer.
func kernelStamp(oob []byte) (int64, bool) {
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SCM_TIMESTAMPNS && len(m.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(m.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(m.Data[8:16]))
			if sec > 0 {
				return sec*1e9 + nsec, true
			}
		}
	}
	return 0, false
}

// track follows the request framing over the bytes of one read stamped at ns.
func (c *arrivalConn) track(b []byte, ns int64, source string) {
	for len(b) > 0 {
		switch c.state {
		case 0: // between requests: CRLFs may precede a request line
			for len(b) > 0 && (b[0] == '\r' || b[0] == '\n') {
				b = b[1:]
			}
			if len(b) == 0 {
				return
			}
			c.start, c.source, c.hdr, c.state = ns, source, c.hdr[:0], 1
		case 1:
			from := max(len(c.hdr)-3, 0)
			c.hdr = append(c.hdr, b...)
			b = nil
			i := bytes.Index(c.hdr[from:], []byte("\r\n\r\n"))
			if i < 0 {
				if len(c.hdr) > maxTrackedHeader {
					c.state, c.hdr = 3, nil
				}
				continue
			}
			end := from + i + 4
			id, length, ok := requestFraming(c.hdr[:end])
			if !ok {
				c.state, c.hdr = 3, nil // chunked or malformed: stop tracking this connection
				return
			}
			if id != "" {
				c.truth.Arrived(id, c.start, c.source)
			}
			rest := c.hdr[end:]
			c.bodyLeft, c.state = length, 2
			if c.bodyLeft == 0 {
				c.state = 0
			}
			b = rest // body bytes (and maybe a next request) that came with the header
			c.hdr = c.hdr[:0:cap(c.hdr)]
			// rest aliases hdr's array beyond its new length: consume it before the
			// next append can overwrite it.
			c.consumeLocal(b, ns, source)
			return
		case 2:
			k := min(int64(len(b)), c.bodyLeft)
			b = b[k:]
			c.bodyLeft -= k
			if c.bodyLeft == 0 {
				c.state = 0
			}
		default:
			return
		}
	}
}

// consumeLocal handles bytes that alias c.hdr's backing array by copying them out
// first.
func (c *arrivalConn) consumeLocal(b []byte, ns int64, source string) {
	if len(b) == 0 {
		return
	}
	cp := append([]byte(nil), b...)
	c.track(cp, ns, source)
}

// requestFraming returns the X-Request-Id and Content-Length of a request head; ok is
// false for a body framed any other way.
func requestFraming(head []byte) (id string, length int64, ok bool) {
	lines := bytes.Split(head[:len(head)-4], []byte("\r\n"))
	for _, h := range lines[1:] {
		name, value, found := bytes.Cut(h, []byte(":"))
		if !found {
			continue
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("X-Request-Id")):
			id = string(value)
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return "", 0, false
			}
			length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return "", 0, false
		}
	}
	return id, length, true
}
