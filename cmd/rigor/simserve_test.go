package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// simServeArgsEnv carries the arguments of `rigor sim serve` to the child process of
// startSimServe, as JSON.
const simServeArgsEnv = "RIGOR_TEST_SIM_SERVE_ARGS"

// startSimServe runs `rigor sim serve --listen 127.0.0.1:0 args...` in a child
// process (serve waits for a signal, which a test process must not take) and
// returns its URL, read from the line serve prints, and its process ID.
func startSimServe(t *testing.T, args ...string) (string, int) {
	t.Helper()
	b, _ := json.Marshal(append([]string{"sim", "serve", "--listen", "127.0.0.1:0", "--time-scale", "0.01"}, args...))
	cmd := exec.Command(os.Args[0], "-test.run=^TestSimServeChild$")
	cmd.Env = append(os.Environ(), simServeArgsEnv+"="+string(b))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	m := regexp.MustCompile(` at (http://\S+) `).FindStringSubmatch(line)
	if err != nil || m == nil {
		t.Fatalf("sim serve %v printed %q (%v)", args, line, err)
	}
	return m[1], cmd.Process.Pid
}

// TestSimServeChild is the child of startSimServe; run alone it does nothing.
func TestSimServeChild(t *testing.T) {
	raw := os.Getenv(simServeArgsEnv)
	if raw == "" {
		return
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		panic(err)
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// chatStream sends one streamed chat request and returns the stream as sent.
func chatStream(t *testing.T, url, model, id string) string {
	t.Helper()
	body := `{"model":"` + model + `","messages":[{"role":"user","content":"Summarise the plan."}],"max_tokens":96,` +
		`"reasoning_effort":"low","stream":true,"stream_options":{"include_usage":true}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s: %s", url, resp.Status, b)
	}
	return string(b)
}

// completionTokens are the completion token counts of requests r0..r7 in turn.
func completionTokens(t *testing.T, url, model string) []int {
	t.Helper()
	var out []int
	for i := range 8 {
		m := regexp.MustCompile(`"completion_tokens":(\d+)`).FindStringSubmatch(chatStream(t, url, model, "r"+strconv.Itoa(i)))
		if m == nil {
			t.Fatalf("%s: a stream without usage", url)
		}
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// TestSimServeFlags: what `rigor sim serve`'s flags say reaches the server. The
// model is the profile's unless --model names another; --reasoning-field names the
// delta field of reasoning tokens; --seed decides the per-request choices (the same
// seed answers the same request IDs alike, another seed differently);
// --allocate-mb makes the process hold that much memory, from --allocate-after on.
func TestSimServeFlags(t *testing.T) {
	models := func(url string) []string {
		resp, err := http.Get(url + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var list struct{ Data []struct{ ID string } }
		_ = json.NewDecoder(resp.Body).Decode(&list)
		var ids []string
		for _, d := range list.Data {
			ids = append(ids, d.ID)
		}
		return ids
	}
	def, _ := startSimServe(t, "--seed", "7")
	if got := models(def); !slices.Equal(got, []string{"glm53-nvidia-fp4-local-tp2-327k-c4-mtp3-r2"}) {
		t.Errorf("without --model, /v1/models lists %v, want the incumbent profile's model", got)
	}
	if s := chatStream(t, def, "glm53-nvidia-fp4-local-tp2-327k-c4-mtp3-r2", "r"); !strings.Contains(s, `"reasoning_content":`) {
		t.Errorf("the default reasoning field is not reasoning_content:\n%.400s", s)
	}
	named, _ := startSimServe(t, "--seed", "7", "--model", "served-x", "--reasoning-field", "reasoning")
	if got := models(named); !slices.Equal(got, []string{"served-x"}) {
		t.Errorf("with --model served-x, /v1/models lists %v", got)
	}
	if s := chatStream(t, named, "served-x", "r"); !strings.Contains(s, `"reasoning":`) || strings.Contains(s, `"reasoning_content"`) {
		t.Errorf("--reasoning-field reasoning: the stream does not carry reasoning tokens in delta.reasoning:\n%.400s", s)
	}
	other, _ := startSimServe(t, "--seed", "8")
	a, b, c := completionTokens(t, def, "glm53-nvidia-fp4-local-tp2-327k-c4-mtp3-r2"),
		completionTokens(t, named, "served-x"), completionTokens(t, other, "glm53-nvidia-fp4-local-tp2-327k-c4-mtp3-r2")
	if !slices.Equal(a, b) || slices.Equal(a, c) {
		t.Errorf("completion tokens by request: seed 7 %v, seed 7 again %v, seed 8 %v; want the first two equal and the third not", a, b, c)
	}

	started := time.Now()
	_, pid := startSimServe(t, "--allocate-mb", "96", "--allocate-after", "1s")
	rss := func() int {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
		m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n >> 10
	}
	// --allocate-after: nothing is held before the delay, all of it after.
	if got := rss(); got >= 96 && time.Since(started) < time.Second {
		t.Errorf("--allocate-after 1s: the server already holds %d MiB", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rss() < 96 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := rss(); got < 96 {
		t.Errorf("--allocate-mb 96: the server holds %d MiB", got)
	}
	if took := time.Since(started); took < time.Second {
		t.Errorf("--allocate-after 1s: 96 MiB held after %s", took)
	}
}
