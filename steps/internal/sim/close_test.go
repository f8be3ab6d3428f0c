package sim

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// Close must end hung and queued requests and leave no goroutine behind.
func TestCloseEndsEverythingWithoutLeaks(t *testing.T) {
	settle := func() int {
		runtime.GC()
		time.Sleep(20 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	base := settle()

	rn, err := Listen("127.0.0.1:0", Config{TimeScale: fastScale, MaxRunning: 1, Faults: Faults{HangRate: 1, HangAfter: 1}})
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{}
	client := &http.Client{Transport: tr}
	results := make(chan *streamResult, 3)
	for i := 0; i < 3; i++ { // one hangs holding the only slot, two queue behind it
		go func() {
			res, err := doStreamClient(context.Background(), client, rn.URL(), "/v1/chat/completions", "", streamChat(promptOf("c", 10), 100))
			if err != nil {
				res = &streamResult{readErr: err}
			}
			results <- res
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for st := rn.Server().Stats(); st.Running != 1 || st.Waiting != 2; st = rn.Server().Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v, want 1 running and 2 waiting", st)
		}
		time.Sleep(2 * time.Millisecond)
	}

	closed := make(chan error)
	go func() { closed <- rn.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return with a hung request in flight")
	}
	for i := 0; i < 3; i++ {
		if r := <-results; r.done || r.readErr == nil && r.status == http.StatusOK {
			t.Errorf("request %d ended cleanly across Close: %+v", i, r)
		}
	}
	tr.CloseIdleConnections()
	deadline = time.Now().Add(5 * time.Second)
	for n := settle(); n > base; n = settle() {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after Close, %d before:\n%s", n, base, buf[:runtime.Stack(buf, true)])
		}
	}
}
