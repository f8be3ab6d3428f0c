package dataset

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// Kinds of source, as SourceInfo.Kind names them.
const (
	KindPrompts  = "prompts"
	KindShareGPT = "sharegpt"
	KindRandom   = "random"
)

// ErrDataset wraps every problem with a dataset file or setting.
var ErrDataset = errors.New("dataset")

// fileSource is a finite list of inputs read from a file.
type fileSource struct {
	kind, path, sum string
	inputs          []loadgen.Input
	settings        any
}

var _ loadgen.Source = (*fileSource)(nil)

// Input implements loadgen.Source: input i mod n.
func (s *fileSource) Input(i int) (loadgen.Input, error) {
	if i < 0 {
		return loadgen.Input{}, fmt.Errorf("%w: negative index %d", ErrDataset, i)
	}
	return s.inputs[i%len(s.inputs)], nil
}

// Distinct implements loadgen.Source.
func (s *fileSource) Distinct() int { return len(s.inputs) }

// Describe implements loadgen.Source.
func (s *fileSource) Describe() loadgen.SourceInfo {
	return loadgen.SourceInfo{Kind: s.kind, Path: s.path, FileSHA256: s.sum, Settings: s.settings, Distinct: len(s.inputs)}
}

// promptLine is one line of a prompts file. Exactly one of Prompt and Messages.
type promptLine struct {
	Prompt    *string          `json:"prompt"`
	Messages  []corpus.Message `json:"messages"`
	MaxTokens *int             `json:"max_tokens"`
}

// Prompts reads a prompts file: JSON Lines, each line an object with either "prompt"
// (a string, sent as one user message to the chat API) or "messages" (a list of
// {"role", "content"} strings), and optionally "max_tokens" (that request's max_tokens
// in place of the workload's). Blank lines are skipped; any other field, an empty
// prompt, both or neither of prompt and messages, is an error naming the line.
func Prompts(path string) (loadgen.Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDataset, err)
	}
	s := &fileSource{kind: KindPrompts, path: path, sum: sha(data)}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		in, err := parsePromptLine(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s:%d: %v", ErrDataset, path, line, err)
		}
		s.inputs = append(s.inputs, in)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %s:%d: %w", ErrDataset, path, line+1, err)
	}
	if len(s.inputs) == 0 {
		return nil, fmt.Errorf(`%w: %s has no prompts: want one JSON object per line, {"prompt": "..."} or {"messages": [...]}`, ErrDataset, path)
	}
	return s, nil
}

func parsePromptLine(b []byte) (loadgen.Input, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var pl promptLine
	if err := dec.Decode(&pl); err != nil {
		return loadgen.Input{}, fmt.Errorf(`%v (want {"prompt": "..."} or {"messages": [{"role": "user", "content": "..."}]}, optionally "max_tokens")`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return loadgen.Input{}, errors.New("more than one JSON value on the line")
	}
	var in loadgen.Input
	switch {
	case pl.Prompt != nil && pl.Messages != nil:
		return in, errors.New(`both "prompt" and "messages": give one`)
	case pl.Prompt != nil:
		if *pl.Prompt == "" {
			return in, errors.New(`empty "prompt"`)
		}
		in.Messages = []corpus.Message{{Role: "user", Content: *pl.Prompt}}
		in.Text = *pl.Prompt
	case len(pl.Messages) > 0:
		for i, m := range pl.Messages {
			if m.Role == "" || m.Content == "" {
				return in, fmt.Errorf("message %d: want a non-empty role and content", i+1)
			}
		}
		in.Messages = pl.Messages
	default:
		return in, errors.New(`neither "prompt" nor "messages"`)
	}
	if pl.MaxTokens != nil {
		if *pl.MaxTokens < 1 {
			return in, fmt.Errorf(`"max_tokens" %d: want >= 1`, *pl.MaxTokens)
		}
		in.MaxTokens = pl.MaxTokens
	}
	return in, nil
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
