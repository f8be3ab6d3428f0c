package loadgen

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// Bounds on one run: every request is rendered before the block clock starts and
// every slot of the concurrency is a connection, so a typo such as requests =
// 2000000000 must be refused, not end the process out of memory.
const (
	MaxRequests       = 1_000_000
	MaxRunConcurrency = 100_000
	// maxRenderedBytes bounds the rendered requests together (prompts included).
	maxRenderedBytes = 4 << 30
)

// API shapes.
const (
	APIChat        = "chat"
	APICompletions = "completions"
)

// APIs lists the API shapes a workload may send, sorted.
func APIs() []string { return []string{APIChat, APICompletions} }

// Modes are the load modes a block's mode attribute may name.
func Modes() []string { return []string{ModeClosed, ModeOpen} }

// Load modes and arrival processes.
const (
	ModeClosed      = "closed"
	ModeOpen        = "open"
	ArrivalPoisson  = "poisson"
	ArrivalConstant = "constant"
)

// ErrConfig wraps every configuration problem.
var ErrConfig = errors.New("loadgen: invalid config")

// Secret holds the API key. Its String, GoString and MarshalJSON redact it, so
// printing or encoding a Config (by anyone, with any verb) cannot leak the key.
type Secret string

func (Secret) String() string   { return redacted }
func (Secret) GoString() string { return `"` + redacted + `"` }

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return json.Marshal(redacted) }

const redacted = "[redacted]"

// Workload is the request content and sampling of a block.
type Workload struct {
	Corpus         string // corpus kind, e.g. "synthetic-summary"
	CorpusSeed     int64  // binds prompt content; never sent as an API seed
	NominalContext int    // a budget; actual prompt ≈ 0.75 × this
	Prefixes       string // "unique" or "repeated"
	Fresh          bool   // a cold lane: new prompts every repetition

	// Sampling fields: nil means omitted from the request body, so the server's
	// pinned default applies (seed 000: an omitted field is not a client override).
	MaxTokens       *int
	Temperature     *float64
	TopP            *float64
	Seed            *int64
	ReasoningEffort *string

	// Fixed output length (seed 000's fixed-output fixture): MinTokens is sent as
	// min_tokens and IgnoreEOS as ignore_eos, the names vLLM and SGLang accept, so
	// that min_tokens = max_tokens with ignore_eos asks for an exact completion
	// length. nil and false are omitted from the body.
	MinTokens *int
	IgnoreEOS bool

	// Per-request assertions on the token counts the server reports in usage. A
	// completed stream whose count differs is outcome assertion_failed: it stays in
	// the denominator and out of the successes. nil asserts nothing.
	AssertPromptTokens     *int
	AssertCompletionTokens *int

	// ContinuousUsage sends stream_options.continuous_usage_stats (vLLM, SGLang): the
	// server reports usage on every chunk, so each chunk's token count is known and
	// inter-token latency handles multi-token chunks exactly (metrics.go, ITL).
	ContinuousUsage bool
}

// Config is one block.
type Config struct {
	Endpoint string // base URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is accepted)
	Model    string
	APIKey   Secret // sent as "Authorization: Bearer"; omitted when empty
	API      string // "chat" (default) or "completions"

	Concurrency int    // connections and the ceiling on requests in flight
	Requests    int    // exactly this many requests are planned and recorded
	Mode        string // "closed" (default) or "open"
	Rate        float64
	Arrival     string // open loop: "poisson" (default) or "constant"
	IDPrefix    string // request ID = IDPrefix + "/" + index

	// Cell and Lane, with the workload's corpus setting (and Repetition in a cold
	// lane), identify the corpus the block sends (see corpus.ID).
	Cell string // "c<concurrency>"; empty means the Concurrency's own cell
	Lane string // corpus.LaneMain (default) or corpus.LanePilot

	Timeout        time.Duration // block hard bound from the block clock start; 0 = none
	RequestTimeout time.Duration // per request, from its send; 0 = none
	// Duration, when set, closes the dispatch window: no request is dispatched once
	// Duration has passed since the block clock started (open loop: none is scheduled
	// at or after it), and the requests dispatched finish within Timeout. Requests is then
	// the most that are sent, and the block's planned requests are the ones
	// dispatched: the outcome table sums to them.
	Duration time.Duration

	// Source, when set, gives each request's input in place of the workload's corpus
	// (prompt files, ShareGPT, random prompts: package workload). Request i sends
	// Source.Input(i). The corpus settings of Workload are then not used.
	Source Source `json:"-"`
	// RecordChunks keeps every token chunk's arrival (and, with per-chunk usage, its
	// token count) in the record, so inter-token latency can be computed from
	// requests.jsonl (metrics.go, ITL). It costs one slice per request.
	RecordChunks bool

	Workload   Workload
	Repetition int

	// IdentityHeader, when set, names a response header whose value each record keeps
	// as served_by: the identity of the stack that answered (the simulator's
	// X-Rigor-Incarnation), so a takeover of the endpoint mid-block shows per request.
	IdentityHeader string

	// OnRecord, when set, is called with each record right after it was written to
	// the output, in the order they were written (calls never overlap). It drives
	// live progress; it runs while the writer lock is held and must be fast.
	OnRecord func(Record) `json:"-"`
	// OnStart, when set, is called once, right before the block clock starts and the
	// first request goes out: everything before it (rendering, dialling) is setup.
	OnStart func() `json:"-"`

	// Slice, when set, runs one agent's share of the block (package agent): the
	// requests whose index i has i mod Of == Index (open loop: those arrival times
	// of the block's one schedule), over Slice.Connections(Concurrency) connections.
	// Records keep the block's IDs, indices and concurrency, so the records of every
	// slice together are the records one client would have written.
	Slice *Slice `json:",omitempty"`
	// StartAt, when set, is called once the prompts are rendered and the connections
	// dialled, in place of starting at once: it blocks until the block may start and
	// returns the instant, on this machine's wall clock, at which the block clock
	// starts (its origin; Run waits for it). An error ends the run with nothing sent.
	StartAt func() (time.Time, error) `json:"-"`
}

// Slice is one agent's share of a block: Index of Of (0 <= Index < Of).
type Slice struct {
	Index int
	Of    int
}

// Connections is the slice's share of a block's concurrency: an even split, the
// first concurrency mod Of slices taking one more, so the shares sum to it.
func (s Slice) Connections(concurrency int) int {
	n := concurrency / s.Of
	if s.Index < concurrency%s.Of {
		n++
	}
	return n
}

// Owns reports whether request index i belongs to the slice.
func (s Slice) Owns(i int) bool { return i%s.Of == s.Index }

// connections is how many connections this run opens: the block's concurrency, or
// the slice's share of it.
func (c Config) connections() int {
	if c.Slice != nil {
		return c.Slice.Connections(c.Concurrency)
	}
	return c.Concurrency
}

// CorpusID is the corpus the block sends: the workload's corpus setting in the block's
// cell and lane (and repetition, in a cold lane).
func (c Config) CorpusID() corpus.ID {
	w := c.Workload
	c = c.withDefaults()
	return corpus.ID{
		Spec: corpus.Spec{Kind: w.Corpus, Seed: w.CorpusSeed, NominalContext: w.NominalContext, Prefixes: w.Prefixes, Fresh: w.Fresh},
		Cell: c.Cell, Lane: c.Lane, Repetition: c.Repetition,
	}
}

// withDefaults fills the documented defaults.
func (c Config) withDefaults() Config {
	if c.API == "" {
		c.API = APIChat
	}
	if c.Mode == "" {
		c.Mode = ModeClosed
	}
	if c.Mode == ModeOpen && c.Arrival == "" {
		c.Arrival = ArrivalPoisson
	}
	if c.Cell == "" && c.Concurrency > 0 {
		c.Cell = corpus.Cell(c.Concurrency)
	}
	if c.Lane == "" {
		c.Lane = corpus.LaneMain
	}
	return c
}

// Validate reports every problem with c (after defaults), joined.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if u, err := url.Parse(c.Endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("endpoint %q: want an http or https base URL", c.Endpoint)
	}
	if c.Model == "" {
		bad("model is empty")
	}
	if !slices.Contains(APIs(), c.API) {
		bad("api %q: want %q or %q", c.API, APIChat, APICompletions)
	}
	if c.Concurrency < 1 || c.Concurrency > MaxRunConcurrency {
		bad("concurrency %d: want 1 to %d", c.Concurrency, MaxRunConcurrency)
	}
	if c.Requests < 1 || c.Requests > MaxRequests {
		bad("requests %d: want 1 to %d", c.Requests, MaxRequests)
	}
	switch c.Mode {
	case ModeClosed:
	case ModeOpen:
		if !(c.Rate > 0) {
			bad("rate %v: open loop needs a positive request rate", c.Rate)
		}
		if c.Arrival != ArrivalPoisson && c.Arrival != ArrivalConstant {
			bad("arrival %q: want %q or %q", c.Arrival, ArrivalPoisson, ArrivalConstant)
		}
	default:
		bad("mode %q: want %q or %q", c.Mode, ModeClosed, ModeOpen)
	}
	if s := c.Slice; s != nil && (s.Of < 1 || s.Index < 0 || s.Index >= s.Of || s.Of > c.Concurrency || s.Of > c.Requests) {
		bad("slice %d of %d: want 0 <= index < count <= concurrency %d and <= requests %d", s.Index, s.Of, c.Concurrency, c.Requests)
	}
	if c.IDPrefix == "" {
		bad("id prefix is empty: request IDs must be deterministic and attributable")
	}
	if c.Timeout < 0 || c.RequestTimeout < 0 || c.Duration < 0 {
		bad("negative timeout or duration")
	}
	if c.Duration > 0 && c.Timeout > 0 && c.Duration >= c.Timeout {
		bad("duration %s: want shorter than the block hard bound %s, which must leave time for the last requests", c.Duration, c.Timeout)
	}
	w := c.Workload
	if w.MinTokens != nil && (*w.MinTokens < 0 || (w.MaxTokens != nil && *w.MinTokens > *w.MaxTokens)) {
		bad("min_tokens %d: want >= 0 and <= max_tokens", *w.MinTokens)
	}
	for name, v := range map[string]*int{"assert_prompt_tokens": w.AssertPromptTokens, "assert_completion_tokens": w.AssertCompletionTokens} {
		if v != nil && *v < 1 {
			bad("%s %d: want >= 1", name, *v)
		}
	}
	if c.Repetition < 0 {
		bad("repetition %d: want >= 0", c.Repetition)
	}
	// The corpus setting is checked whatever the concurrency; its cell and lane only
	// once there is a concurrency to name the cell. A Source replaces the corpus.
	if c.Source != nil {
		// nothing: the source validated its own input when it was built
	} else if id := c.CorpusID(); id.Spec.Validate() != nil {
		errs = append(errs, id.Spec.Validate())
	} else if err := id.Validate(); err != nil && c.Concurrency >= 1 {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
}

// requestURL appends the API path to the base endpoint.
func (c Config) requestURL() string {
	base := strings.TrimRight(c.Endpoint, "/")
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	if c.API == APICompletions {
		return base + "/completions"
	}
	return base + "/chat/completions"
}

type streamOptions struct {
	IncludeUsage         bool `json:"include_usage"`
	ContinuousUsageStats bool `json:"continuous_usage_stats,omitempty"`
}

// requestBody is the JSON body. Pointer fields with omitempty are left out when nil
// and sent when set, even to a zero value (temperature 0 is a real setting).
type requestBody struct {
	Model           string           `json:"model"`
	Messages        []corpus.Message `json:"messages,omitempty"`
	Prompt          *string          `json:"prompt,omitempty"`
	Stream          bool             `json:"stream"`
	StreamOptions   streamOptions    `json:"stream_options"`
	MaxTokens       *int             `json:"max_tokens,omitempty"`
	Temperature     *float64         `json:"temperature,omitempty"`
	TopP            *float64         `json:"top_p,omitempty"`
	Seed            *int64           `json:"seed,omitempty"`
	ReasoningEffort *string          `json:"reasoning_effort,omitempty"`
	MinTokens       *int             `json:"min_tokens,omitempty"`
	IgnoreEOS       bool             `json:"ignore_eos,omitempty"`
}

// input is request index's input: the Source's, else the corpus prompt.
func (c Config) input(index int) (Input, error) {
	if c.Source != nil {
		return c.Source.Input(index)
	}
	return CorpusSource{c.CorpusID()}.Input(index)
}

// buildBody renders the request body of one request.
func (c Config) buildBody(index int) ([]byte, error) {
	in, err := c.input(index)
	if err != nil {
		return nil, err
	}
	w := c.Workload
	b := requestBody{
		Model: c.Model, Stream: true, StreamOptions: streamOptions{IncludeUsage: true, ContinuousUsageStats: w.ContinuousUsage},
		MaxTokens: w.MaxTokens, Temperature: w.Temperature, TopP: w.TopP, Seed: w.Seed, ReasoningEffort: w.ReasoningEffort,
		MinTokens: w.MinTokens, IgnoreEOS: w.IgnoreEOS,
	}
	if in.MaxTokens != nil {
		b.MaxTokens = in.MaxTokens
	}
	if c.API == APICompletions {
		text := in.text()
		b.Prompt = &text
	} else {
		b.Messages = in.Messages
	}
	return json.Marshal(b)
}

// RequestID is the deterministic ID of request index.
func (c Config) RequestID(index int) string { return fmt.Sprintf("%s/%d", c.IDPrefix, index) }

// renderRequest renders request index as the exact bytes written to the socket: the
// request line, the headers and the JSON body. Everything is built before the block
// clock starts, so sending a request is one write of prepared bytes.
func (c Config) renderRequest(index int) ([]byte, error) {
	body, err := c.buildBody(index)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(c.requestURL())
	if err != nil {
		return nil, err
	}
	id := c.RequestID(index)
	key := string(c.APIKey)
	for _, v := range []string{u.Host, id, key} {
		if strings.ContainsAny(v, "\r\n") {
			return nil, errors.New("a header value contains CR or LF")
		}
	}
	b := make([]byte, 0, len(body)+256)
	b = append(b, "POST "...)
	b = append(b, u.RequestURI()...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, u.Host...)
	b = append(b, "\r\nUser-Agent: rigor-loadgen\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nX-Request-Id: "...)
	b = append(b, id...)
	if key != "" {
		b = append(b, "\r\nAuthorization: Bearer "...)
		b = append(b, key...)
	}
	b = append(b, "\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n\r\n"...)
	return append(b, body...), nil
}
