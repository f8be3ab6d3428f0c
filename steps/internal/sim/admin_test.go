package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFaultsEndpointSlowsTheSameServer: a slowdown posted to /debug/faults makes the
// same request on the same server (same incarnation) take longer by about the
// factor; a bad body is refused and changes nothing.
func TestFaultsEndpointSlowsTheSameServer(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.2}) // modelled delays well above scheduling noise on a loaded machine
	// Each request sends a prompt of the same size the prefix cache has not seen,
	// so the two differ only by the slowdown.
	e2e := func(prefix string) time.Duration {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		start := time.Now()
		res, err := doStream(ctx, rn.URL(), "/v1/chat/completions", "same-id", streamChat(promptOf(prefix, 200), 200))
		if err != nil || !res.done {
			t.Fatalf("request: %v", err)
		}
		return time.Since(start)
	}
	post := func(body string) (int, Faults) {
		t.Helper()
		resp, err := http.Post(rn.URL()+"/debug/faults", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var f Faults
		_ = json.NewDecoder(resp.Body).Decode(&f)
		return resp.StatusCode, f
	}
	before := e2e("d")
	if code, f := post(`{"slowdown": 3}`); code != http.StatusOK || f.Slowdown != 3 {
		t.Fatalf("POST slowdown: %d %+v", code, f)
	}
	after := e2e("e")
	if ratio := float64(after) / float64(before); ratio < 2 || ratio > 5 {
		t.Errorf("slowdown 3 changed E2E %v → %v (×%.2f), want about ×3", before, after, ratio)
	}
	for name, body := range map[string]string{
		"not json":      `slowdown=2`,
		"unknown field": `{"slow": 2}`,
		"bad rate":      `{"stream_cut_rate": 2}`,
	} {
		if code, _ := post(body); code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400", name, code)
		}
	}
	resp, err := http.Get(rn.URL() + "/debug/faults")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var f Faults
	if err := json.NewDecoder(resp.Body).Decode(&f); err != nil || f.Slowdown != 3 || rn.Server().Faults().Slowdown != 3 {
		t.Errorf("after refused bodies the faults must be unchanged: %+v %v", f, err)
	}
}
