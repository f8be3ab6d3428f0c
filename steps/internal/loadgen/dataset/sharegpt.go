package dataset

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// shareGPTEntry is one conversation of a ShareGPT file; fields other than
// conversations (id, ...) are ignored, as every ShareGPT reader does.
type shareGPTEntry struct {
	Conversations []struct {
		From  string `json:"from"`
		Value string `json:"value"`
	} `json:"conversations"`
}

// ShareGPTSettings are what a ShareGPT source records besides its file.
type ShareGPTSettings struct {
	Entries int `json:"entries"` // conversations in the file
	Skipped int `json:"skipped"` // with fewer than two turns, or an empty first turn
}

// ShareGPT reads a ShareGPT-format file: a JSON array of {"conversations": [{"from":
// "human", "value": "..."}, {"from": "gpt", "value": "..."}, ...]}. As vllm bench
// serve does, each conversation with at least two turns gives one request whose
// prompt is the first turn (sent as a user message), in file order; the others are
// skipped and counted. The reference reply's length is not used: rigor has no
// tokenizer to measure it, so max_tokens is the workload's.
func ShareGPT(path string) (loadgen.Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDataset, err)
	}
	var entries []shareGPTEntry
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf(`%w: %s: not a ShareGPT file (want a JSON array of {"conversations": [{"from": ..., "value": ...}, ...]}): %v`, ErrDataset, path, err)
	}
	st := ShareGPTSettings{Entries: len(entries)}
	s := &fileSource{kind: KindShareGPT, path: path, sum: sha(data)}
	for _, e := range entries {
		if len(e.Conversations) < 2 || e.Conversations[0].Value == "" {
			st.Skipped++
			continue
		}
		v := e.Conversations[0].Value
		s.inputs = append(s.inputs, loadgen.Input{Messages: []corpus.Message{{Role: "user", Content: v}}, Text: v})
	}
	if len(s.inputs) == 0 {
		return nil, fmt.Errorf("%w: %s: none of its %d conversations has two turns", ErrDataset, path, len(entries))
	}
	s.settings = st
	return s, nil
}
