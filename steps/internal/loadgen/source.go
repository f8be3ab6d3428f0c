package loadgen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// Input is what one request sends besides the workload's sampling fields.
type Input struct {
	// Messages is the chat input (/v1/chat/completions).
	Messages []corpus.Message `json:"messages"`
	// Text is the /v1/completions input; empty means the message contents joined by
	// a blank line, as the corpus renders it.
	Text string `json:"text,omitempty"`
	// MaxTokens, when set, is this request's max_tokens in place of the workload's
	// (random output lengths).
	MaxTokens *int `json:"max_tokens,omitempty"`
}

// text is the completions prompt of the input.
func (in Input) text() string {
	if in.Text != "" || len(in.Messages) == 0 {
		return in.Text
	}
	parts := make([]string, len(in.Messages))
	for i, m := range in.Messages {
		parts[i] = m.Content
	}
	return strings.Join(parts, "\n\n")
}

// Source gives the input of each request of a block. Input(i) is a pure function of
// i, so a rerun sends the same requests and Digest identifies them.
type Source interface {
	// Input returns request index's input (index >= 0). A source with a finite set of
	// inputs cycles through them.
	Input(index int) (Input, error)
	// Distinct is how many different inputs the source has before it repeats; 0 means
	// it never repeats.
	Distinct() int
	// Describe names the source and its settings, for result.json.
	Describe() SourceInfo
}

// SourceInfo describes a source in result.json.
type SourceInfo struct {
	Kind string `json:"kind"` // corpus, prompts, sharegpt, random
	// Path and FileSHA256 name a file source's file and its content hash.
	Path       string `json:"path,omitempty"`
	FileSHA256 string `json:"file_sha256,omitempty"`
	// Settings are the source's own settings (corpus identity, random lengths...).
	Settings any `json:"settings,omitempty"`
	// Distinct is Source.Distinct.
	Distinct int `json:"distinct_inputs"`
}

// CorpusSource is the workload corpus id as a Source; Digest of it is corpus.Digest.
type CorpusSource struct{ ID corpus.ID }

var _ Source = CorpusSource{}

// Input implements Source.
func (s CorpusSource) Input(index int) (Input, error) {
	p, err := s.ID.Prompt(index)
	if err != nil {
		return Input{}, err
	}
	return Input{Messages: p.Messages, Text: p.Text}, nil
}

// Distinct implements Source: a corpus never repeats a prompt.
func (CorpusSource) Distinct() int { return 0 }

// Describe implements Source.
func (s CorpusSource) Describe() SourceInfo {
	return SourceInfo{Kind: "corpus", Settings: s.ID}
}

// Offset is src shifted by n: request i sends src's input n+i. Warm-up requests use it
// so that they send inputs the measured requests do not (while the source has them).
type Offset struct {
	Src Source
	N   int
}

// Input implements Source.
func (o Offset) Input(index int) (Input, error) { return o.Src.Input(o.N + index) }

// Distinct implements Source.
func (o Offset) Distinct() int { return o.Src.Distinct() }

// Describe implements Source.
func (o Offset) Describe() SourceInfo {
	d := o.Src.Describe()
	d.Settings = map[string]any{"offset": o.N, "source": d.Settings}
	return d
}

// Digest is the sha256 (hex) of the inputs of requests 0..n-1 of src: a corpus's own
// digest (corpus.Digest, the one the block step pins), else the source's description
// then every input in index order as canonical JSON, length-prefixed. It changes
// whenever any request the block sends would change.
func Digest(src Source, n int) (string, error) {
	if n < 1 {
		return "", fmt.Errorf("%w: digest of %d requests", ErrConfig, n)
	}
	if c, ok := src.(CorpusSource); ok {
		return corpus.Digest(c.ID, n)
	}
	h := sha256.New()
	head, err := json.Marshal(src.Describe())
	if err != nil {
		return "", err
	}
	h.Write(head)
	var lenBuf [8]byte
	for i := range n {
		in, err := src.Input(i)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(in)
		if err != nil {
			return "", err
		}
		binary.BigEndian.PutUint64(lenBuf[:], uint64(len(b)))
		h.Write(lenBuf[:])
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
