package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// chunkReader returns its chunks one per Read, the way a socket hands over
// whatever arrived, and records how many reads were made.
type chunkReader struct {
	chunks [][]byte
	reads  int
	err    error // returned after the chunks; io.EOF when nil
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.chunks) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		return 0, io.EOF
	}
	c.reads++
	n := copy(p, c.chunks[0])
	if n < len(c.chunks[0]) {
		c.chunks[0] = c.chunks[0][n:]
	} else {
		c.chunks = c.chunks[1:]
	}
	return n, nil
}

func chunks(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// tickClock returns 1970 + k seconds on the k-th call, so a stamp names the read.
func tickClock() func() time.Time {
	k := 0
	return func() time.Time { k++; return time.Unix(int64(k), 0) }
}

type got struct {
	Type         string
	Data         string
	Read         int64 // which read stamped the event
	Done         bool
	Unterminated bool
}

func readAll(t *testing.T, r *Reader) ([]got, error) {
	t.Helper()
	var out []got
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, got{ev.Type, string(ev.Data), ev.Received.Unix(), ev.Done, ev.Unterminated})
	}
}

func TestFraming(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	cases := map[string]struct {
		in      [][]byte
		want    []got
		wantErr error
	}{
		"one event per read": {
			in:      chunks("data: a\n\n", "data: b\n\n"),
			want:    []got{{Data: "a", Read: 1}, {Data: "b", Read: 2}},
			wantErr: io.EOF,
		},
		"event split across reads is stamped by the completing read": {
			in:      chunks("da", "ta: {\"x\"", ":1}\n", "\n"),
			want:    []got{{Data: `{"x":1}`, Read: 4}},
			wantErr: io.EOF,
		},
		"merged events in one read share its stamp": {
			in:      chunks("data: a\n\ndata: b\n\ndata: c", "\n\n"),
			want:    []got{{Data: "a", Read: 1}, {Data: "b", Read: 1}, {Data: "c", Read: 2}},
			wantErr: io.EOF,
		},
		"CRLF line endings": {
			in:      chunks("data: a\r\n\r\ndata: b\r", "\n\r\n"),
			want:    []got{{Data: "a", Read: 1}, {Data: "b", Read: 2}},
			wantErr: io.EOF,
		},
		"comments and pings are skipped": {
			in:      chunks(": ping\n\n", ":keep-alive\n", "data: a\n: mid-event comment\n\n"),
			want:    []got{{Data: "a", Read: 3}},
			wantErr: io.EOF,
		},
		"multi-line data joined with newline": {
			in:      chunks("data: {\"a\":\ndata: 1}\n\n"),
			want:    []got{{Data: "{\"a\":\n1}", Read: 1}},
			wantErr: io.EOF,
		},
		"event error with data": {
			in:      chunks("event: error\ndata: {\"message\":\"boom\"}\n\n"),
			want:    []got{{Type: "error", Data: `{"message":"boom"}`, Read: 1}},
			wantErr: io.EOF,
		},
		"bare event error is still dispatched": {
			in:      chunks("event: error\n\n"),
			want:    []got{{Type: "error", Read: 1}},
			wantErr: io.EOF,
		},
		"no space after colon": {
			in:      chunks("data:a\n\n"),
			want:    []got{{Data: "a", Read: 1}},
			wantErr: io.EOF,
		},
		"DONE stops reading": {
			in:      chunks("data: a\n\ndata: [DONE]\n\n", "data: never\n\n"),
			want:    []got{{Data: "a", Read: 1}, {Data: "[DONE]", Read: 1, Done: true}},
			wantErr: io.EOF,
		},
		"2 MB event across many reads": {
			in:      chunks("data: "+big[:1<<20], big[1<<20:], "\n\n"),
			want:    []got{{Data: big, Read: 3}},
			wantErr: io.EOF,
		},
		"cut inside a line": {
			in:      chunks("data: a\n\ndata: {\"par"),
			want:    []got{{Data: "a", Read: 1}},
			wantErr: io.ErrUnexpectedEOF,
		},
		"complete lines without blank line at EOF": {
			in:      chunks("data: a\n\ndata: b\n"),
			want:    []got{{Data: "a", Read: 1}, {Data: "b", Read: 1, Unterminated: true}},
			wantErr: io.ErrUnexpectedEOF,
		},
		"DONE without blank line at EOF still ends cleanly": {
			in:      chunks("data: [DONE]\n"),
			want:    []got{{Data: "[DONE]", Read: 1, Done: true, Unterminated: true}},
			wantErr: io.EOF,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := NewReader(&chunkReader{chunks: tc.in}, WithClock(tickClock()), WithReadSize(4<<20))
			out, err := readAll(t, r)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("final error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, out); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDoneLeavesRestUnread(t *testing.T) {
	src := &chunkReader{chunks: chunks("data: [DONE]\n\n", "data: x\n\n", "data: y\n\n")}
	r := NewReader(src)
	if _, err := readAll(t, r); err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	if src.reads != 1 {
		t.Errorf("reads after [DONE]: made %d reads, want 1", src.reads)
	}
}

func TestByteAtATime(t *testing.T) {
	stream := "data: {\"a\":1}\r\n\r\n: ping\n\nevent: error\ndata: x\n\ndata: [DONE]\n\n"
	var cs [][]byte
	for i := range len(stream) {
		cs = append(cs, []byte{stream[i]})
	}
	out, err := readAll(t, NewReader(&chunkReader{chunks: cs}, WithReadSize(1)))
	if err != io.EOF {
		t.Fatalf("err = %v", err)
	}
	var datas []string
	for _, g := range out {
		datas = append(datas, g.Type+"|"+g.Data)
	}
	if diff := cmp.Diff([]string{`|{"a":1}`, "error|x", "|[DONE]"}, datas); diff != "" {
		t.Error(diff)
	}
}

func TestMaxEventSize(t *testing.T) {
	cases := map[string][][]byte{
		"one long line":       chunks("data: "+strings.Repeat("y", 5000), "\n\n"),
		"many data lines":     chunks(strings.Repeat("data: "+strings.Repeat("z", 100)+"\n", 60) + "\n"),
		"long line never end": chunks("data: "+strings.Repeat("y", 3000), strings.Repeat("y", 3000)),
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, NewReader(&chunkReader{chunks: in}, WithMaxEventSize(4096), WithReadSize(512)))
			if !errors.Is(err, ErrEventTooLarge) {
				t.Errorf("err = %v, want ErrEventTooLarge", err)
			}
		})
	}
}

func TestReadErrorAfterEvents(t *testing.T) {
	boom := errors.New("connection reset")
	src := &chunkReader{chunks: chunks("data: a\n\n"), err: boom}
	out, err := readAll(t, NewReader(src))
	if len(out) != 1 || out[0].Data != "a" {
		t.Errorf("events = %+v, want the one completed before the error", out)
	}
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want %v", err, boom)
	}
}

func TestFirstRead(t *testing.T) {
	r := NewReader(bytes.NewReader([]byte("data: a\n\n")), WithClock(tickClock()))
	if !r.FirstRead().IsZero() {
		t.Fatal("FirstRead set before any read")
	}
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if r.FirstRead().Unix() != 1 {
		t.Errorf("FirstRead = %v, want the first read's stamp", r.FirstRead())
	}
}
