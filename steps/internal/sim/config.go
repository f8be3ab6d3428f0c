package sim

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Reasoning field names a server may stream reasoning tokens under. vLLM renamed
// reasoning_content to reasoning (PR #27752); most other servers kept the old name.
const (
	ReasoningFieldReasoningContent = "reasoning_content"
	ReasoningFieldReasoning        = "reasoning"
)

// ReasoningFields are the field names the simulator can stream reasoning under.
func ReasoningFields() []string {
	return []string{ReasoningFieldReasoning, ReasoningFieldReasoningContent}
}

// FaultNames are the keys a faults object takes: the JSON names of Faults' fields.
func FaultNames() []string {
	t := reflect.TypeOf(Faults{})
	names := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Chat template overhead: each message is preceded by one role-marker token and the
// prompt ends with one assistant marker, so a chat prompt's token count is
// tokens.Count(all contents) + TemplateTokensPerMessage*len(messages) +
// TemplateTokensGenerationPrompt. The markers are real tokens in the hashed sequence, so
// two prompts that share a system message share a prefix.
const (
	TemplateTokensPerMessage       = 1
	TemplateTokensGenerationPrompt = 1
)

// Config configures one simulated server.
type Config struct {
	// Profile is the timing and capacity model; the zero value means "incumbent".
	Profile Profile
	// ModelName is the served model name; empty means Profile.ServedModelName. Requests
	// naming another model get 404, as vLLM does.
	ModelName string
	// Seed is mixed into every per-request RNG.
	Seed uint64
	// TimeScale multiplies every modelled delay: 1 is real time, 0.01 is 100x faster.
	// Zero means 1.
	TimeScale float64
	// Engine is the serving engine the server imitates on /metrics and on its prefix
	// cache reset endpoint: EngineVLLM (the default; POST /reset_prefix_cache) or
	// EngineSGLang (POST /flush_cache). The wire protocol is the same for both.
	Engine string
	// ReasoningField is the delta field reasoning tokens stream under:
	// ReasoningFieldReasoningContent (the default) or ReasoningFieldReasoning.
	ReasoningField string
	// MaxRunning, when > 0, overrides Profile.MaxRunning (benchmarks run far wider batches
	// than the seed stacks allow).
	MaxRunning int
	// PrefixCacheTokens, when > 0, overrides Profile.PrefixCacheTokens; < 0 disables the
	// prefix cache.
	PrefixCacheTokens int
	// TokensPerChunk is how many tokens one SSE event carries at most (speculative decoding
	// and stream batching send several); zero means 1.
	TokensPerChunk int
	// Faults is the initial fault injection; Server.SetFaults changes it at run time.
	Faults Faults
	// Incarnation is the identity the server returns in IncarnationHeader on every
	// response: the container runtime sets its incarnation; empty means one is drawn
	// when the server is built, so a restarted server answers as a new one.
	Incarnation string
	// OnChunk, when set, is called for every token-bearing SSE event right after the write
	// that carried it was flushed, with the event's index among the request's
	// token-bearing events (the role-only and usage chunks are not counted) and the number
	// of tokens it carried. Client calibration compares these stamps with client arrivals.
	// It runs on the handler goroutine and must be fast.
	OnChunk func(requestID string, index int, tokens int, sentAt time.Time)
}

// Faults injects failures. Rates are probabilities per request, decided by the
// request's own RNG, so the same request IDs fail the same way on every run. At most one
// of the HTTP error, stream cut, in-band error, hang and abort applies to a request, in
// that order of precedence; reasoning exhaustion and omitted usage combine with any of them.
type Faults struct {
	// HTTPErrorRate answers with HTTPErrorStatus (default 500) and an OpenAI error body
	// before any header of a stream is sent.
	HTTPErrorRate   float64 `json:"http_error_rate,omitempty"`
	HTTPErrorStatus int     `json:"http_error_status,omitempty"`
	// StreamCutRate closes the connection after StreamCutAfter tokens, with no [DONE].
	StreamCutRate  float64 `json:"stream_cut_rate,omitempty"`
	StreamCutAfter int     `json:"stream_cut_after,omitempty"`
	// InbandErrorRate sends data: {"error":{...}} and then [DONE] after InbandErrorAfter
	// tokens, on a stream that already answered 200.
	InbandErrorRate  float64 `json:"inband_error_rate,omitempty"`
	InbandErrorAfter int     `json:"inband_error_after,omitempty"`
	// HangRate stops sending after HangAfter tokens and keeps the connection open until
	// the client goes away or the server closes.
	HangRate  float64 `json:"hang_rate,omitempty"`
	HangAfter int     `json:"hang_after,omitempty"`
	// AbortRate ends the stream after AbortAfter tokens with a finish_reason "abort"
	// chunk, then usage and [DONE]: how vLLM ends a request its engine aborted.
	AbortRate  float64 `json:"abort_rate,omitempty"`
	AbortAfter int     `json:"abort_after,omitempty"`
	// Slowdown multiplies every delay of every request (values below 1 are ignored).
	Slowdown float64 `json:"slowdown,omitempty"`
	// ReasoningExhaustionRate makes a chat request reason until max_tokens: no content,
	// finish_reason "length" (seed 002's failure).
	ReasoningExhaustionRate float64 `json:"reasoning_exhaustion_rate,omitempty"`
	// OmitUsageRate drops the usage (the terminal metadata) even when it was requested.
	OmitUsageRate float64 `json:"omit_usage_rate,omitempty"`
	// Unhealthy makes GET /health answer 503.
	Unhealthy bool `json:"unhealthy,omitempty"`
	// TraceDropRate drops each scheduler-trace sample with this probability (trace.go).
	TraceDropRate float64 `json:"trace_drop_rate,omitempty"`
	// TraceOverflow shrinks the scheduler-trace buffer so that a capture overflows.
	TraceOverflow bool `json:"trace_overflow,omitempty"`
}

// Validate refuses rates that are not probabilities, negative token counts and a
// status that is not an error; a campaign's faults are checked with it when the
// plan is validated.
func (f Faults) Validate() error {
	rates := []struct {
		name string
		v    float64
	}{
		{"http_error_rate", f.HTTPErrorRate}, {"stream_cut_rate", f.StreamCutRate},
		{"inband_error_rate", f.InbandErrorRate}, {"hang_rate", f.HangRate},
		{"reasoning_exhaustion_rate", f.ReasoningExhaustionRate}, {"omit_usage_rate", f.OmitUsageRate},
		{"abort_rate", f.AbortRate},
	}
	for _, r := range rates {
		if r.v < 0 || r.v > 1 {
			return fmt.Errorf("faults: %s = %g is not a probability", r.name, r.v)
		}
	}
	if f.StreamCutAfter < 0 || f.InbandErrorAfter < 0 || f.HangAfter < 0 || f.AbortAfter < 0 {
		return fmt.Errorf("faults: *_after token counts must be >= 0")
	}
	if f.HTTPErrorStatus != 0 && (f.HTTPErrorStatus < 400 || f.HTTPErrorStatus > 599) {
		return fmt.Errorf("faults: http_error_status %d is not an error status", f.HTTPErrorStatus)
	}
	return nil
}

func (f Faults) slowdown() float64 {
	if f.Slowdown < 1 {
		return 1
	}
	return f.Slowdown
}

// normalized fills defaults and checks the configuration.
func (c Config) normalized() (Config, error) {
	if c.Profile == (Profile{}) {
		c.Profile = builtinProfiles["incumbent"]
	}
	if c.MaxRunning > 0 {
		c.Profile.MaxRunning = c.MaxRunning
	}
	switch {
	case c.PrefixCacheTokens > 0:
		c.Profile.PrefixCacheTokens = c.PrefixCacheTokens
	case c.PrefixCacheTokens < 0:
		c.Profile.PrefixCacheTokens = 0
	}
	if err := c.Profile.Validate(); err != nil {
		return c, err
	}
	if c.ModelName == "" {
		c.ModelName = c.Profile.ServedModelName
	}
	if c.ModelName == "" {
		c.ModelName = "sim-" + c.Profile.Name
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.TimeScale < 0 {
		return c, fmt.Errorf("time scale %g must be > 0", c.TimeScale)
	}
	switch c.Engine {
	case "":
		c.Engine = EngineVLLM
	case EngineVLLM, EngineSGLang:
	default:
		return c, fmt.Errorf("engine %q: want %q or %q", c.Engine, EngineVLLM, EngineSGLang)
	}
	switch c.ReasoningField {
	case "":
		c.ReasoningField = ReasoningFieldReasoningContent
	case ReasoningFieldReasoningContent, ReasoningFieldReasoning:
	default:
		return c, fmt.Errorf("reasoning field %q: want %q or %q", c.ReasoningField, ReasoningFieldReasoningContent, ReasoningFieldReasoning)
	}
	if c.TokensPerChunk <= 0 {
		c.TokensPerChunk = 1
	}
	if err := c.Faults.Validate(); err != nil {
		return c, err
	}
	return c, nil
}
