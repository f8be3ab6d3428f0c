package report

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// errFast makes decodeRecord fall back to encoding/json for a line the fast path
// does not handle; the fast path never guesses.
var errFast = errors.New("fast path declined")

// decodeRecord decodes one requests.jsonl line. A hand-written scanner handles the
// flat shape loadgen writes (numbers, null, strings, the usage object); anything
// else goes through encoding/json, so the result is always what json.Unmarshal
// gives. TestFastDecodeMatchesJSON holds the two equal on every checked-in record.
func decodeRecord(b []byte, r *loadgen.Record) error {
	*r = loadgen.Record{}
	if err := fastRecord(b, r); err == nil {
		return nil
	}
	*r = loadgen.Record{}
	return json.Unmarshal(b, r)
}

type scan struct {
	b []byte
	i int
}

func (s *scan) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

func (s *scan) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string without escapes; a string with a backslash declines.
func (s *scan) str() (string, error) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", errFast
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return string(s.b[start:j]), nil
		case c == '\\' || c < 0x20:
			return "", errFast
		}
	}
	return "", errFast
}

func (s *scan) null() bool {
	s.ws()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

func (s *scan) number() (float64, error) {
	s.ws()
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			s.i++
			continue
		}
		break
	}
	if start == s.i {
		return 0, errFast
	}
	return strconv.ParseFloat(string(s.b[start:s.i]), 64)
}

func (s *scan) int() (int, error) {
	f, err := s.number()
	if err != nil || f != float64(int(f)) {
		return 0, errFast
	}
	return int(f), nil
}

func (s *scan) optFloat() (*float64, error) {
	if s.null() {
		return nil, nil
	}
	f, err := s.number()
	if err != nil {
		return nil, err
	}
	return &f, nil
}

func (s *scan) optInt() (*int, error) {
	if s.null() {
		return nil, nil
	}
	n, err := s.int()
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// object walks one object, calling field for every key.
func (s *scan) object(field func(key string) error) error {
	if !s.eat('{') {
		return errFast
	}
	if s.eat('}') {
		return nil
	}
	for {
		k, err := s.str()
		if err != nil || !s.eat(':') {
			return errFast
		}
		if err := field(k); err != nil {
			return err
		}
		if s.eat(',') {
			continue
		}
		if s.eat('}') {
			return nil
		}
		return errFast
	}
}

func fastRecord(b []byte, r *loadgen.Record) error {
	s := &scan{b: b}
	err := s.object(func(k string) error {
		var err error
		switch k {
		case "id":
			r.ID, err = s.str()
		case "index":
			r.Index, err = s.int()
		case "repetition":
			r.Repetition, err = s.int()
		case "concurrency":
			r.Concurrency, err = s.int()
		case "nominal_context":
			r.NominalContext, err = s.int()
		case "scheduled_at_ms":
			r.ScheduledAtMS, err = s.optFloat()
		case "send_at_ms":
			r.SendAtMS, err = s.optFloat()
		case "headers_at_ms":
			r.HeadersAtMS, err = s.optFloat()
		case "first_byte_at_ms":
			r.FirstByteAtMS, err = s.optFloat()
		case "ttfo_at_ms":
			r.TTFOAtMS, err = s.optFloat()
		case "ttft_visible_at_ms":
			r.TTFTVisibleAtMS, err = s.optFloat()
		case "last_token_at_ms":
			r.LastTokenAtMS, err = s.optFloat()
		case "end_at_ms":
			r.EndAtMS, err = s.optFloat()
		case "schedule_lag_ms":
			r.ScheduleLagMS, err = s.optFloat()
		case "http_status":
			r.HTTPStatus, err = s.int()
		case "chunks":
			r.Chunks, err = s.int()
		case "content_chunks":
			r.ContentChunks, err = s.int()
		case "reasoning_chunks":
			r.ReasoningChunks, err = s.int()
		case "token_chunks":
			r.TokenChunks, err = s.int()
		case "outcome":
			var o string
			o, err = s.str()
			r.Outcome = loadgen.Outcome(o)
		case "error":
			r.Error, err = s.str()
		case "served_by":
			r.ServedBy, err = s.str()
		case "finish_reason":
			if s.null() {
				return nil
			}
			var f string
			f, err = s.str()
			r.FinishReason = &f
		case "usage":
			if s.null() {
				return nil
			}
			u := &loadgen.Usage{}
			err = s.object(func(k string) error {
				var err error
				switch k {
				case "prompt_tokens":
					u.PromptTokens, err = s.int()
				case "completion_tokens":
					u.CompletionTokens, err = s.int()
				case "reasoning_tokens":
					u.ReasoningTokens, err = s.optInt()
				case "cached_tokens":
					u.CachedTokens, err = s.optInt()
				default:
					return errFast
				}
				return err
			})
			r.Usage = u
		default:
			return errFast // a field this path does not know: let encoding/json decide
		}
		return err
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errFast
	}
	return nil
}
