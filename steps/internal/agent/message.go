package agent

import (
	"bufio"
	"encoding/json"
	"net"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// Version is the protocol version; an agent of another version is refused.
const Version = 1

// Message kinds.
const (
	kindHello  = "hello"  // agent: version and CPUs, on connect
	kindClock  = "clock"  // both: a clock exchange
	kindJob    = "job"    // authority: the slice to run
	kindReady  = "ready"  // agent: prompts rendered, connections dialled
	kindStart  = "start"  // authority: the block clock's origin, in the agent's clock
	kindCancel = "cancel" // authority: stop the slice now
	kindRecord = "rec"    // agent: one finished request
	kindBeat   = "beat"   // agent: alive
	kindDone   = "done"   // agent: the slice's result
	kindError  = "error"  // agent: the slice could not start
)

// beatEvery is how often a busy agent says it is alive.
const beatEvery = 500 * time.Millisecond

// message is one line of the protocol; T says which fields are set.
type message struct {
	T       string          `json:"t"`
	Version int             `json:"version,omitempty"`
	CPUs    int             `json:"cpus,omitempty"`
	RecvNS  int64           `json:"recv_ns,omitempty"` // clock: agent's receive stamp
	SendNS  int64           `json:"send_ns,omitempty"` // clock: agent's send stamp
	Job     *job            `json:"job,omitempty"`
	AtNS    int64           `json:"at_ns,omitempty"` // start: Unix ns on the agent's clock
	Record  *loadgen.Record `json:"rec,omitempty"`
	Result  *loadgen.Result `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
	Warmup  bool            `json:"warmup,omitempty"` // error: the target refused the warm-up

	at time.Time // when the line was read (not sent)
}

// job is the slice an agent runs. The key travels apart because loadgen.Secret
// redacts itself when encoded.
type job struct {
	Config loadgen.Config `json:"config"`
	APIKey string         `json:"api_key,omitempty"`
}

// conn writes whole lines under a lock, flushing each, so records, beats and
// control messages from several goroutines never interleave.
type conn struct {
	nc net.Conn
	r  *bufio.Reader
	mu sync.Mutex
	w  *bufio.Writer
}

func newConn(nc net.Conn) *conn {
	return &conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10), w: bufio.NewWriterSize(nc, 64<<10)}
}

func (c *conn) send(m message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

func (c *conn) writeLine(b []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w.Write(b)
	c.w.WriteByte('\n')
	return c.w.Flush()
}

// read reads one message, stamped with the time its line was read.
func (c *conn) read() (message, error) {
	line, err := c.r.ReadBytes('\n')
	at := time.Now()
	if err != nil {
		return message{}, err
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return message{}, err
	}
	m.at = at
	return m, nil
}

// recordWriter is the out of an agent's loadgen.Run: each requests.jsonl line it
// writes goes to the authority as a record message, as the request finishes.
type recordWriter struct{ c *conn }

func (w recordWriter) Write(p []byte) (int, error) {
	line := p
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	b := make([]byte, 0, len(line)+24)
	b = append(b, `{"t":"rec","rec":`...)
	b = append(b, line...)
	b = append(b, '}')
	if err := w.c.writeLine(b); err != nil {
		return 0, err
	}
	return len(p), nil
}
