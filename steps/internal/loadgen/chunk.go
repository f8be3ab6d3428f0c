package loadgen

import (
	"encoding/json"
)

// chunkInfo is what the measurement takes from one data event.
type chunkInfo struct {
	err       json.RawMessage // the in-band error object, when non-empty
	usage     *wireUsage      // nil when absent or null
	visible   bool            // some choice carries content, tool_calls or text
	reasoning bool            // some choice carries reasoning or reasoning_content
	finish    *string         // the last non-empty finish_reason of the choices
}

// parseChunk reads one chunk. The common shape (choices with a delta, no usage, no
// error) is read by fastChunk without allocating; whatever it does not vouch for
// goes through encoding/json, whose result is the reference (chunk_test.go checks
// that both agree wherever the fast path answers).
func parseChunk(data []byte) (chunkInfo, error) {
	if info, ok := fastChunk(data); ok {
		return info, nil
	}
	return slowChunk(data)
}

// slowChunk is the reference reading, with encoding/json.
func slowChunk(data []byte) (chunkInfo, error) {
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return chunkInfo{}, err
	}
	info := chunkInfo{usage: c.Usage}
	if nonEmpty(c.Error) {
		info.err = c.Error
	}
	// Older vLLM and servers modelled on it send their error response itself as an
	// event: {"object":"error","message":...,"type":...,"code":...}.
	var object string
	if info.err == nil && len(c.Object) > 0 && json.Unmarshal(c.Object, &object) == nil && object == "error" {
		info.err = json.RawMessage(data)
	}
	for _, ch := range c.Choices {
		if nonEmpty(ch.Delta.Content) || nonEmpty(ch.Delta.ToolCalls) || nonEmpty(ch.Text) {
			info.visible = true
		}
		if nonEmpty(ch.Delta.Reasoning) || nonEmpty(ch.Delta.ReasoningContent) {
			info.reasoning = true
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			f := *ch.FinishReason
			info.finish = &f
		}
	}
	return info, nil
}

// Interned finish reasons, so that the fast path does not allocate for them.
var knownFinish = map[string]*string{}

func init() {
	for _, f := range []string{"stop", "length", "tool_calls", "content_filter", "abort", "error", "function_call"} {
		knownFinish[f] = &f
	}
}

// fastChunk reads data when it is a JSON object whose only fields of interest are
// "choices" (an array of objects, each with an optional object "delta", "text" and a
// string or null "finish_reason"), an absent, null or flat "usage" (only the integer
// counts prompt_tokens, completion_tokens and total_tokens), an absent or null
// "error" and an absent or plain-string "object" other than "error". It validates
// the whole event as JSON. ok is false whenever the input is anything else
// (invalid JSON, a usage or error object, an error response, a key that
// encoding/json would match case-insensitively, a duplicate key, an escaped key or
// finish reason, deep nesting): then the caller falls back to encoding/json.
func fastChunk(data []byte) (info chunkInfo, ok bool) {
	s := scanner{b: data}
	s.ws()
	if !s.consume('{') {
		return info, false
	}
	var seenChoices, seenUsage, seenError bool
	okObj := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices {
				return false
			}
			seenChoices = true
			return s.choices(&info)
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if s.literal("null") {
				return true
			}
			// vLLM's per-chunk usage (continuous_usage_stats) is a flat object of
			// counts, on every chunk: read it here. Anything richer (the final
			// usage with its details) takes the slow path.
			u, ok := s.flatUsage()
			info.usage = u
			return ok
		case "error":
			if seenError {
				return false
			}
			seenError = true
			return s.literal("null") // a real error object: the slow path
		case "object":
			// "object":"error" makes the event an error response: the slow path.
			v, ok := s.plainString()
			return ok && string(v) != "error"
		}
		if foldsTo(key, "choices", "usage", "error", "object") {
			return false
		}
		return s.skip(0)
	})
	if !okObj {
		return chunkInfo{}, false
	}
	s.ws()
	if s.i != len(s.b) {
		return chunkInfo{}, false
	}
	return info, true
}

// scanner is a minimal validating JSON reader over one event.
type scanner struct {
	b []byte
	i int
}

const maxFastDepth = 64

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// object reads the members of an object whose '{' was consumed; field is called with
// each key (positioned at the value, after the colon) and must consume the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	s.ws()
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.plainString()
		if !ok {
			return false
		}
		s.ws()
		if !s.consume(':') {
			return false
		}
		s.ws()
		if !field(key) {
			return false
		}
		s.ws()
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// plainString reads a string without escapes or non-ASCII bytes and returns its
// contents; anything else is left to the slow path.
func (s *scanner) plainString() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// str validates any JSON string (escapes included).
func (s *scanner) str() bool {
	if !s.consume('"') {
		return false
	}
	for s.i < len(s.b) {
		c := s.b[s.i]
		s.i++
		switch {
		case c == '"':
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i >= len(s.b) {
				return false
			}
			e := s.b[s.i]
			s.i++
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if s.i+4 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i : s.i+4] {
					if !isHex(h) {
						return false
					}
				}
				s.i += 4
			default:
				return false
			}
		}
	}
	return false
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// number validates a JSON number.
func (s *scanner) number() bool {
	s.consume('-')
	switch {
	case s.consume('0'):
	case isDigit(s.peek()):
		for isDigit(s.peek()) {
			s.i++
		}
	default:
		return false
	}
	if s.consume('.') {
		if !isDigit(s.peek()) {
			return false
		}
		for isDigit(s.peek()) {
			s.i++
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !isDigit(s.peek()) {
			return false
		}
		for isDigit(s.peek()) {
			s.i++
		}
	}
	return true
}

// skip validates and skips one value.
func (s *scanner) skip(depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		return s.str()
	case c == '{':
		s.i++
		s.ws()
		if s.consume('}') {
			return true
		}
		for {
			s.ws()
			if !s.str() {
				return false
			}
			s.ws()
			if !s.consume(':') {
				return false
			}
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.consume(',') {
				continue
			}
			return s.consume('}')
		}
	case c == '[':
		s.i++
		s.ws()
		if s.consume(']') {
			return true
		}
		for {
			s.ws()
			if !s.skip(depth + 1) {
				return false
			}
			s.ws()
			if s.consume(',') {
				continue
			}
			return s.consume(']')
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || isDigit(c):
		return s.number()
	}
	return false
}

// raw skips one value and reports whether it carries something, as nonEmpty does
// for the value's bytes.
func (s *scanner) raw() (nonEmptyValue, ok bool) {
	start := s.i
	if !s.skip(1) {
		return false, false
	}
	return nonEmpty(s.b[start:s.i]), true
}

// flatUsage reads a usage object whose members are only prompt_tokens,
// completion_tokens and total_tokens, each a JSON integer that fits an int without
// doubt (at most 18 digits). Anything else declines: a key encoding/json would match
// case-insensitively, a duplicate, a fraction or exponent (which encoding/json refuses
// for an int), details objects.
func (s *scanner) flatUsage() (*wireUsage, bool) {
	if !s.consume('{') {
		return nil, false
	}
	u := &wireUsage{}
	var seen [3]bool
	ok := s.object(func(key []byte) bool {
		idx := -1
		switch string(key) {
		case "prompt_tokens":
			idx = 0
		case "completion_tokens":
			idx = 1
		case "total_tokens":
			idx = 2
		}
		if idx < 0 || seen[idx] {
			return false
		}
		seen[idx] = true
		v, ok := s.integer()
		switch idx {
		case 0:
			u.PromptTokens = v
		case 1:
			u.CompletionTokens = v
		}
		return ok
	})
	return u, ok
}

// integer reads -?(0|[1-9][0-9]{0,17}) not followed by a fraction or exponent.
func (s *scanner) integer() (int, bool) {
	neg := s.consume('-')
	start := s.i
	v := 0
	for isDigit(s.peek()) {
		v = v*10 + int(s.b[s.i]-'0')
		s.i++
	}
	n := s.i - start
	if n == 0 || n > 18 || (n > 1 && s.b[start] == '0') {
		return 0, false
	}
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

// choices reads the choices array into info.
func (s *scanner) choices(info *chunkInfo) bool {
	if s.literal("null") {
		return true
	}
	if !s.consume('[') {
		return false
	}
	s.ws()
	if s.consume(']') {
		return true
	}
	for {
		s.ws()
		if !s.consume('{') {
			return false // null or non-object elements: the slow path
		}
		if !s.choice(info) {
			return false
		}
		s.ws()
		if s.consume(',') {
			continue
		}
		return s.consume(']')
	}
}

func (s *scanner) choice(info *chunkInfo) bool {
	var seenDelta, seenText, seenFinish bool
	var visible, reasoning bool
	var finish *string
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "delta":
			if seenDelta {
				return false
			}
			seenDelta = true
			if s.literal("null") {
				return true
			}
			if !s.consume('{') {
				return false
			}
			return s.delta(&visible, &reasoning)
		case "text":
			if seenText {
				return false
			}
			seenText = true
			v, ok := s.raw()
			visible = visible || v
			return ok
		case "finish_reason":
			if seenFinish {
				return false
			}
			seenFinish = true
			if s.literal("null") {
				return true
			}
			f, ok := s.plainString()
			if !ok {
				return false
			}
			if len(f) > 0 {
				p := knownFinish[string(f)]
				if p == nil {
					v := string(f)
					p = &v
				}
				finish = p
			}
			return true
		}
		if foldsTo(key, "delta", "text", "finish_reason") {
			return false
		}
		return s.skip(1)
	})
	if !ok {
		return false
	}
	info.visible = info.visible || visible
	info.reasoning = info.reasoning || reasoning
	if finish != nil {
		f := *finish
		info.finish = &f
	}
	return true
}

func (s *scanner) delta(visible, reasoning *bool) bool {
	var seen [4]bool
	return s.object(func(key []byte) bool {
		idx := -1
		switch string(key) {
		case "content":
			idx = 0
		case "tool_calls":
			idx = 1
		case "reasoning":
			idx = 2
		case "reasoning_content":
			idx = 3
		}
		if idx < 0 {
			if foldsTo(key, "content", "tool_calls", "reasoning", "reasoning_content") {
				return false
			}
			return s.skip(2)
		}
		if seen[idx] {
			return false
		}
		seen[idx] = true
		v, ok := s.raw()
		if idx < 2 {
			*visible = *visible || v
		} else {
			*reasoning = *reasoning || v
		}
		return ok
	})
}

// foldsTo reports whether key equals one of names under ASCII case folding
// (keys are ASCII here: plainString refuses the rest).
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if len(n) != len(key) {
			continue
		}
		eq := true
		for i := range len(n) {
			a, b := key[i], n[i]
			if 'A' <= a && a <= 'Z' {
				a += 'a' - 'A'
			}
			if a != b {
				eq = false
				break
			}
		}
		if eq {
			return true
		}
	}
	return false
}
