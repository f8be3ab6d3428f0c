package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/schemas"
)

// TestOutputsMatchSchemas runs a block in which every outcome class occurs (and, with
// a block bound, cancelled requests too) and validates result.json and every line of
// requests.jsonl against the embedded schemas. It then checks that the schemas bite:
// documents that break the accounting are rejected.
func TestOutputsMatchSchemas(t *testing.T) {
	checkLeaks(t)
	handlers := []http.HandlerFunc{
		script(okStream(3)),
		func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 503) },
		script(roleChunk, ev(`{"error":{"message":"x"}}`), doneEvent),
		script(roleChunk, contentChunk("a"), finishChunk("stop"), doneEvent),
		script(roleChunk, reasoningChunk("reasoning", "r"), finishChunk("length"), usageChunk(190, 9), doneEvent),
		hang(roleChunk),
		script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(191, 1), doneEvent),
	}
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers[indexOf(r)%len(handlers)](w, r)
	}))
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests = 2, 40
	cfg.RequestTimeout, cfg.Timeout = 100*time.Millisecond, 250*time.Millisecond
	asserted := 190
	cfg.Workload.AssertPromptTokens, cfg.RecordChunks = &asserted, true
	var out bytes.Buffer
	res, _ := Run(context.Background(), cfg, &out)
	if res == nil {
		t.Fatal("no result")
	}
	seen := map[Outcome]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out.Bytes()))
	lines := 0
	var firstOK []byte
	for sc.Scan() {
		lines++
		if err := schemas.Validate("request-record", sc.Bytes()); err != nil {
			t.Errorf("line %d: %v\n%s", lines, err, sc.Bytes())
		}
		var r Record
		_ = json.Unmarshal(sc.Bytes(), &r)
		seen[r.Outcome] = true
		if r.Outcome == OK && len(r.TokenChunkAtMS) == 0 {
			t.Errorf("line %d: ok record without token_chunk_at_ms although chunks are recorded", lines)
		}
		if r.Outcome == OK && firstOK == nil {
			firstOK = append([]byte(nil), sc.Bytes()...)
		}
	}
	for _, o := range Outcomes() {
		if !seen[o] {
			t.Errorf("outcome %s never occurred; the schema was not exercised on it", o)
		}
	}
	b, _ := json.Marshal(res)
	if err := schemas.Validate("result", b); err != nil {
		t.Errorf("result.json: %v", err)
	}

	bad := map[string]struct{ schema, doc string }{
		"ok without usage":      {"request-record", strings.Replace(string(firstOK), `"usage":{`, `"usage":null,"x":{`, 1)},
		"unknown outcome":       {"request-record", strings.Replace(string(firstOK), `"outcome":"ok"`, `"outcome":"fine"`, 1)},
		"outcome table missing": {"result", strings.Replace(string(b), `"cancelled":`, `"canceled":`, 1)},
		"p99 without samples":   {"result", strings.Replace(string(b), `"samples":0,"p50":null`, `"samples":0,"p50":1`, 1)},
	}
	for name, tc := range bad {
		if tc.doc == string(firstOK) || tc.doc == string(b) {
			t.Errorf("%s: the replacement did not apply", name)
			continue
		}
		if err := schemas.Validate(tc.schema, []byte(tc.doc)); err == nil {
			t.Errorf("%s: accepted by %s", name, tc.schema)
		}
	}
}
