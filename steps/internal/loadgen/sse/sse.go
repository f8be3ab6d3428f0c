package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// Event is one dispatched SSE event.
type Event struct {
	// Type is the "event:" field; empty means the default "message" type.
	Type string
	// Data is the "data:" lines joined with "\n".
	Data []byte
	// ID is the last "id:" field of the event, if any.
	ID string
	// Received is the clock reading taken right after the socket read that completed
	// this event. Every event completed by the same read carries the same stamp.
	Received time.Time
	// Done is true for the "data: [DONE]" sentinel.
	Done bool
	// Unterminated is true when the stream ended before the event's blank line.
	Unterminated bool
}

// ErrEventTooLarge is returned when one event (or one line) exceeds the configured
// maximum size; the limit exists only so a broken server cannot exhaust memory.
var ErrEventTooLarge = errors.New("sse: event exceeds maximum size")

const (
	// DefaultReadSize is how many bytes each Read asks for. Large, so a burst of
	// chunks is taken in one read and one stamp (vLLM #39963: small read buffers
	// cause backpressure).
	DefaultReadSize = 256 << 10
	// DefaultMaxEventSize bounds one event. Events of several MB occur (long
	// reasoning batched into one chunk, logprobs); 64 MiB is far above any of them.
	DefaultMaxEventSize = 64 << 20
)

// Option configures a Reader.
type Option func(*Reader)

// WithClock replaces time.Now; tests use it to check which read stamped an event.
func WithClock(now func() time.Time) Option { return func(r *Reader) { r.now = now } }

// WithReadSize sets the size of each Read request.
func WithReadSize(n int) Option {
	return func(r *Reader) {
		if n > 0 {
			r.readSize = n
		}
	}
}

// WithMaxEventSize sets the largest event (and the longest line) accepted.
func WithMaxEventSize(n int) Option {
	return func(r *Reader) {
		if n > 0 {
			r.maxEvent = n
		}
	}
}

// WithPreallocatedBuffer allocates the read buffer when the Reader is made, rather
// than on its first read.
func WithPreallocatedBuffer() Option { return func(r *Reader) { r.prealloc = true } }

// WithReusedData makes Event.Data valid only until the next call to Next: the
// Reader then keeps one data buffer for all events instead of allocating one per
// event. For callers that look at each event and let it go.
func WithReusedData() Option { return func(r *Reader) { r.reuse = true } }

// Reader frames events from an io.Reader. It is not safe for concurrent use.
type Reader struct {
	src      io.Reader
	now      func() time.Time
	readSize int
	maxEvent int
	reuse    bool
	prealloc bool

	buf       []byte // bytes not yet consumed; buf[:lineStart] is already processed
	lineStart int    // start of the current (incomplete) line
	scan      int    // where the search for the next '\n' resumes

	// the event being assembled; its data is data[dataStart:]
	typ       string
	id        string
	data      []byte
	dataStart int
	hasData   bool

	queue     []Event // completed events not yet returned
	firstRead time.Time
	lastRead  time.Time
	done      bool  // [DONE] seen: never read src again
	err       error // sticky error from src, returned once the queue drains
}

// NewReader returns a Reader over src.
func NewReader(src io.Reader, opts ...Option) *Reader {
	r := &Reader{src: src, now: time.Now, readSize: DefaultReadSize, maxEvent: DefaultMaxEventSize}
	for _, o := range opts {
		o(r)
	}
	if r.prealloc {
		r.buf = make([]byte, 0, 2*r.readSize)
	}
	return r
}

// Reset makes r read a new stream from src, keeping its buffers (and options).
func (r *Reader) Reset(src io.Reader) {
	data := r.data[:0]
	if !r.reuse {
		data = nil
	}
	*r = Reader{src: src, now: r.now, readSize: r.readSize, maxEvent: r.maxEvent, reuse: r.reuse,
		buf: r.buf[:0], queue: r.queue[:0], data: data}
}

// FirstRead is the stamp of the first read that returned at least one byte (the
// zero time when none has).
func (r *Reader) FirstRead() time.Time { return r.firstRead }

// LastRead is the stamp of the most recent read that returned bytes.
func (r *Reader) LastRead() time.Time { return r.lastRead }

// Next returns the next event. After the [DONE] event it returns io.EOF. A stream
// that ends cleanly on an event boundary without [DONE] gives io.EOF; one that ends
// inside an event gives io.ErrUnexpectedEOF (after any Unterminated event). Other
// read errors are returned as they are, after the events completed before them.
func (r *Reader) Next() (Event, error) {
	for len(r.queue) == 0 {
		if r.done {
			return Event{}, io.EOF
		}
		if r.err != nil {
			return Event{}, r.err
		}
		r.fill()
	}
	ev := r.queue[0]
	r.queue[0] = Event{}
	r.queue = r.queue[1:]
	return ev, nil
}

// fill performs one Read and processes what it returned.
func (r *Reader) fill() {
	// The queue is empty, so the caller has let go of every event returned.
	r.queue = r.queue[:0]
	if r.reuse && r.dataStart > 0 {
		n := copy(r.data, r.data[r.dataStart:])
		r.data, r.dataStart = r.data[:n], 0
	}
	if r.lineStart > 0 {
		// Drop processed bytes. Only the current partial line moves, and only once
		// per completed line, so a multi-MB line is not copied on every read.
		n := copy(r.buf, r.buf[r.lineStart:])
		r.buf = r.buf[:n]
		r.scan -= r.lineStart
		r.lineStart = 0
	}
	if cap(r.buf)-len(r.buf) < r.readSize {
		nb := make([]byte, len(r.buf), 2*cap(r.buf)+r.readSize)
		copy(nb, r.buf)
		r.buf = nb
	}
	n, err := r.src.Read(r.buf[len(r.buf):cap(r.buf)])
	if n > 0 {
		// Stamp before parsing: the time the bytes reached us, not when we
		// finished looking at them.
		t := r.now()
		if r.firstRead.IsZero() {
			r.firstRead = t
		}
		r.lastRead = t
		r.buf = r.buf[:len(r.buf)+n]
		if perr := r.process(t); perr != nil {
			r.err = perr
			return
		}
	}
	if err != nil && !r.done {
		r.finish(err)
	}
}

// process consumes every complete line in the buffer.
func (r *Reader) process(t time.Time) error {
	for !r.done {
		i := bytes.IndexByte(r.buf[r.scan:], '\n')
		if i < 0 {
			r.scan = len(r.buf)
			if len(r.buf)-r.lineStart > r.maxEvent {
				return fmt.Errorf("%w: line longer than %d bytes", ErrEventTooLarge, r.maxEvent)
			}
			return nil
		}
		end := r.scan + i
		line := r.buf[r.lineStart:end]
		r.lineStart = end + 1
		r.scan = r.lineStart
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if err := r.line(line, t); err != nil {
			return err
		}
	}
	return nil
}

// line applies one complete line to the event being assembled.
func (r *Reader) line(line []byte, t time.Time) error {
	if len(line) == 0 {
		r.dispatch(t, false)
		return nil
	}
	if line[0] == ':' {
		return nil // comment or keep-alive ping
	}
	field, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if r.hasData {
			r.data = append(r.data, '\n')
		}
		r.data = append(r.data, value...)
		r.hasData = true
		if len(r.data)-r.dataStart > r.maxEvent {
			return fmt.Errorf("%w: %d bytes", ErrEventTooLarge, r.maxEvent)
		}
	case "event":
		r.typ = string(value)
	case "id":
		r.id = string(value)
	}
	return nil
}

func (r *Reader) dispatch(t time.Time, unterminated bool) {
	if !r.hasData && r.typ == "" {
		r.id = ""
		return
	}
	data := r.data[r.dataStart:len(r.data):len(r.data)]
	ev := Event{Type: r.typ, Data: data, ID: r.id, Received: t, Unterminated: unterminated}
	if ev.Data == nil {
		ev.Data = []byte{}
	}
	ev.Done = r.hasData && r.typ == "" && string(data) == "[DONE]"
	r.queue = append(r.queue, ev)
	r.typ, r.id, r.hasData = "", "", false
	if r.reuse {
		r.dataStart = len(r.data) // valid until the next fill, which runs after Next
	} else {
		r.data = nil // a fresh slice per event: the previous one now belongs to the caller
	}
	if ev.Done {
		r.done = true
	}
}

// finish handles the end of src.
func (r *Reader) finish(err error) {
	if !errors.Is(err, io.EOF) {
		r.err = err
		return
	}
	partial := len(r.buf) > r.lineStart
	pending := r.hasData || r.typ != ""
	if pending {
		r.dispatch(r.lastRead, true)
	}
	if (partial || pending) && !r.done {
		r.err = io.ErrUnexpectedEOF
		return
	}
	r.err = io.EOF
}
