package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"
)

// The block's HTTP/1.1 client. It is deliberately small: one connection per
// concurrent stream, owned by one goroutine from the moment it is dialled (before
// the block clock starts) to the end of the block. A request is a single write of
// bytes rendered before the block (request line, headers and body), stamped right
// before that write; the response is read on the same goroutine, so there is no
// goroutine hand-off, no per-request connection set-up and no per-chunk channel
// between the socket and the SSE parser. net/http's transport does all three, and
// at high concurrency its per-connection set-up (two goroutines and two 64 KB
// buffers on a connection's first request) ran after the block clock started.
//
// What it supports is what an OpenAI-compatible streaming endpoint needs: status
// line and headers (1xx skipped; lines end in CRLF or a bare LF), bodies framed by
// Transfer-Encoding: chunked, Content-Length or the end of the connection, and
// keep-alive unless the server says "Connection: close" or speaks HTTP/1.0, or
// has closed the idle connection anyway (closedByPeer, checked before each send).
// It never retries: a POST that may have reached the server is never sent twice.

const (
	connReadSize   = 32 << 10 // socket read size; a burst of events is taken in one read
	maxHeaderBytes = 1 << 20
)

var (
	errMalformedResponse = errors.New("malformed HTTP response")
	errHeaderTooLarge    = errors.New("response header exceeds 1 MiB")
)

// h1conn is one pooled connection and its read buffer.
type h1conn struct {
	nc       net.Conn
	buf      []byte // buf[r:w] is received and not yet consumed
	r, w     int
	lastUsed time.Time
	reused   bool // carried a request before
	// readAt is the clock reading right after the latest socket read that returned
	// bytes: every byte in buf[r:w] arrived no later than this.
	readAt time.Time
	now    func() time.Time
}

func newH1Conn(nc net.Conn) *h1conn {
	return &h1conn{nc: nc, buf: make([]byte, connReadSize), lastUsed: time.Now(), now: time.Now}
}

// fill reads once from the socket into the free space of buf, compacting first.
func (c *h1conn) fill() error {
	if c.r > 0 {
		n := copy(c.buf, c.buf[c.r:c.w])
		c.r, c.w = 0, n
	}
	if c.w == len(c.buf) {
		nb := make([]byte, 2*len(c.buf))
		copy(nb, c.buf[:c.w])
		c.buf = nb
	}
	n, err := c.nc.Read(c.buf[c.w:])
	if n > 0 {
		c.readAt = c.now()
		c.w += n
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// response is the parsed head of a response and its body framing.
type response struct {
	status    int
	close     bool  // the connection cannot carry another request
	chunked   bool  // Transfer-Encoding: chunked
	length    int64 // Content-Length, -1 when absent
	headersAt time.Time
	head      []byte // status line and headers; valid until the next read on the connection (copy it to keep it)
}

// readHead reads the status line and headers, skipping 1xx interim responses.
func (c *h1conn) readHead() (response, error) {
	for {
		var i, term int
		for {
			if i, term = headEnd(c.buf[c.r:c.w]); i >= 0 {
				break
			}
			if c.w-c.r > maxHeaderBytes {
				return response{}, errHeaderTooLarge
			}
			if err := c.fill(); err != nil {
				if errors.Is(err, io.EOF) {
					if c.w > c.r {
						return response{}, io.ErrUnexpectedEOF
					}
					return response{}, fmt.Errorf("server closed the connection before responding: %w", io.EOF)
				}
				return response{}, err
			}
		}
		head := c.buf[c.r : c.r+i]
		c.r += i + term
		resp, err := parseHead(head)
		if err != nil {
			return response{}, err
		}
		resp.headersAt = c.readAt
		resp.head = head
		if resp.status >= 100 && resp.status < 200 && resp.status != 101 {
			continue
		}
		return resp, nil
	}
}

// headEnd finds the empty line that ends a response head in b: i is where the
// head's last line ends and term the length of the line break and empty line
// after it; i is -1 while the head is incomplete. Lines end in CRLF or, as
// net/http's client accepts, a bare LF.
func headEnd(b []byte) (i, term int) {
	for from := 0; ; {
		j := bytes.IndexByte(b[from:], '\n')
		if j < 0 {
			return -1, 0
		}
		j += from
		switch {
		case j+1 < len(b) && b[j+1] == '\n':
			return j, 2
		case j+2 < len(b) && b[j+1] == '\r' && b[j+2] == '\n':
			return j, 3
		}
		from = j + 1
	}
}

// cutLine cuts the first line of a response head off b, without its CRLF or bare LF.
func cutLine(b []byte) (line, rest []byte) {
	line, rest, _ = bytes.Cut(b, []byte("\n"))
	return bytes.TrimSuffix(line, []byte("\r")), rest
}

// parseHead parses "HTTP/1.x SSS reason\r\nName: value\r\n...".
func parseHead(head []byte) (response, error) {
	resp := response{length: -1}
	line, rest := cutLine(head)
	proto, after, ok := bytes.Cut(line, []byte(" "))
	if !ok || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(after) < 3 {
		return resp, fmt.Errorf("%w: status line %q", errMalformedResponse, excerptBytes(line))
	}
	code, err := strconv.Atoi(string(after[:3]))
	if err != nil || code < 100 || code > 999 || (len(after) > 3 && after[3] != ' ') {
		return resp, fmt.Errorf("%w: status line %q", errMalformedResponse, excerptBytes(line))
	}
	resp.status = code
	resp.close = string(proto) == "HTTP/1.0"
	for len(rest) > 0 {
		var h []byte
		h, rest = cutLine(rest)
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return resp, fmt.Errorf("%w: header line %q", errMalformedResponse, excerptBytes(h))
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return resp, fmt.Errorf("%w: Content-Length %q", errMalformedResponse, excerptBytes(value))
			}
			resp.length = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if containsToken(value, "chunked") {
				resp.chunked = true
			}
		case bytes.EqualFold(name, []byte("Connection")):
			if containsToken(value, "close") {
				resp.close = true
			} else if containsToken(value, "keep-alive") && string(proto) == "HTTP/1.0" {
				resp.close = false
			}
		}
	}
	if resp.chunked {
		resp.length = -1
	}
	if resp.status == 204 || resp.status == 304 {
		resp.length, resp.chunked = 0, false
	}
	if !resp.chunked && resp.length < 0 {
		resp.close = true // delimited by the end of the connection
	}
	return resp, nil
}

func containsToken(v []byte, tok string) bool {
	for part := range bytes.SplitSeq(v, []byte(",")) {
		if bytes.EqualFold(bytes.TrimSpace(part), []byte(tok)) {
			return true
		}
	}
	return false
}

func excerptBytes(b []byte) []byte {
	if len(b) > 80 {
		return b[:80]
	}
	return b
}

// body reads one response body from an h1conn, undoing the chunked framing. A Read
// returns everything already received (across any number of chunks) and blocks on
// the socket only when it has nothing to return, so the caller's clock reading
// after Read is the arrival time of those bytes, to within one read.
type body struct {
	c       *h1conn
	chunked bool
	left    int64 // bytes left in the current chunk, or of a Content-Length body; -1: until EOF
	state   int   // chunked: 0 want chunk size line, 1 in data, 2 want CRLF after data, 3 want trailers, 4 done
	eof     bool
	err     error
}

const (
	chSize = iota
	chData
	chDataEnd
	chTrailer
	chDone
)

func newBody(c *h1conn, resp response) *body {
	b := &body{c: c, chunked: resp.chunked, left: resp.length}
	if !resp.chunked && resp.length == 0 {
		b.eof = true
	}
	return b
}

// reset reuses b for the next response on c.
func (b *body) reset(resp response) {
	*b = body{c: b.c, chunked: resp.chunked, left: resp.length}
	if !resp.chunked && resp.length == 0 {
		b.eof = true
	}
}

// Done reports whether the body was read to its end, so that the connection can
// carry another request.
func (b *body) Done() bool { return b.eof }

func (b *body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := b.decode(p)
		if n > 0 || err != nil || b.eof {
			if err != nil {
				b.err = err
			}
			if n == 0 && b.eof {
				return 0, io.EOF
			}
			return n, err
		}
		if err := b.c.fill(); err != nil {
			if errors.Is(err, io.EOF) {
				if !b.chunked && b.left < 0 {
					b.eof = true
					return 0, io.EOF
				}
				err = io.ErrUnexpectedEOF
			}
			b.err = err
			return 0, err
		}
	}
}

// decode moves buffered body bytes into p without touching the socket.
func (b *body) decode(p []byte) (int, error) {
	c := b.c
	if !b.chunked {
		avail := c.w - c.r
		if b.left >= 0 && int64(avail) > b.left {
			avail = int(b.left)
		}
		n := copy(p, c.buf[c.r:c.r+avail])
		c.r += n
		if b.left >= 0 {
			b.left -= int64(n)
			if b.left == 0 {
				b.eof = true
			}
		}
		return n, nil
	}
	n := 0
	for n < len(p) {
		switch b.state {
		case chSize:
			i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
			if i < 0 {
				if c.w-c.r > 4096 {
					return n, fmt.Errorf("%w: chunk size line too long", errMalformedResponse)
				}
				return n, nil
			}
			line := c.buf[c.r : c.r+i]
			c.r += i + 1
			line = bytes.TrimRight(line, "\r")
			if j := bytes.IndexByte(line, ';'); j >= 0 {
				line = line[:j]
			}
			size, err := strconv.ParseUint(string(bytes.TrimSpace(line)), 16, 62)
			if err != nil {
				return n, fmt.Errorf("%w: chunk size %q", errMalformedResponse, excerptBytes(line))
			}
			if size == 0 {
				b.state = chTrailer
			} else {
				b.left, b.state = int64(size), chData
			}
		case chData:
			avail := c.w - c.r
			if avail == 0 {
				return n, nil
			}
			k := min(int64(avail), b.left, int64(len(p)-n))
			copy(p[n:], c.buf[c.r:c.r+int(k)])
			c.r += int(k)
			n += int(k)
			b.left -= k
			if b.left == 0 {
				b.state = chDataEnd
			}
		case chDataEnd:
			i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
			if i < 0 {
				if c.w-c.r > 2 {
					return n, fmt.Errorf("%w: missing CRLF after chunk", errMalformedResponse)
				}
				return n, nil
			}
			if len(bytes.TrimRight(c.buf[c.r:c.r+i], "\r")) != 0 {
				return n, fmt.Errorf("%w: missing CRLF after chunk", errMalformedResponse)
			}
			c.r += i + 1
			b.state = chSize
		case chTrailer:
			// Trailer lines until an empty one.
			i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
			if i < 0 {
				return n, nil
			}
			line := bytes.TrimRight(c.buf[c.r:c.r+i], "\r")
			c.r += i + 1
			if len(line) == 0 {
				b.state, b.eof = chDone, true
				return n, nil
			}
		default:
			return n, nil
		}
	}
	return n, nil
}
