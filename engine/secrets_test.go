package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
)

func TestRedactorString(t *testing.T) {
	cases := map[string]struct {
		secrets []string
		in      string
		want    string
	}{
		"plain":            {[]string{"sk-123"}, "key sk-123 used twice: sk-123", "key (sensitive) used twice: (sensitive)"},
		"no secrets":       {nil, "sk-123", "sk-123"},
		"empty secret":     {[]string{""}, "abc", "abc"},
		"longest first":    {[]string{"abc", "abcdef"}, "xabcdefx", "x(sensitive)x"},
		"overlapping":      {[]string{"abcd", "cdef"}, "xabcdefx", "x(sensitive)x"},
		"self overlapping": {[]string{"aa"}, "aaa b", "(sensitive) b"},
		"json escaped":     {[]string{`p"w\d`}, `{"msg":"p\"w\\d"}`, `{"msg":"(sensitive)"}`},
		"json html form":   {[]string{"a<b"}, `"a\u003cb" and a<b`, `"(sensitive)" and (sensitive)`},
		"go quoted":        {[]string{"tab\there"}, `msg="tab\there"`, `msg="(sensitive)"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := engine.NewRedactor(tc.secrets...).String(tc.in); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRedactorStreamAnyCut writes output cut at every size, a secret straddling
// the cuts, and requires the same result as redacting the whole text at once.
func TestRedactorStreamAnyCut(t *testing.T) {
	secrets := []string{"sk-live-0123456789", "0123456789-tail", "zz"}
	r := engine.NewRedactor(secrets...)
	in := strings.Repeat("line sk-live-0123456789-tail and zzz and sk-live-01234 partial\n", 20)
	want := r.String(in)
	if strings.Contains(want, "0123456789") || !strings.Contains(want, "sk-live-01234 partial") {
		t.Fatalf("whole-text redaction is wrong: %q", want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for size := 1; size <= 40; size++ {
		for _, random := range []bool{false, true} {
			var out bytes.Buffer
			w := r.Stream(&out)
			for rest := in; len(rest) > 0; {
				n := size
				if random {
					n = 1 + rng.IntN(size)
				}
				n = min(n, len(rest))
				if k, err := w.Write([]byte(rest[:n])); err != nil || k != n {
					t.Fatalf("Write = %d, %v", k, err)
				}
				rest = rest[n:]
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if out.String() != want {
				t.Fatalf("cut every %d (random %v):\n%s", size, random, cmp.Diff(want, out.String()))
			}
		}
	}
}

// TestRedactorWriterJSONLines redacts a secret holding characters JSON escapes,
// as zerolog writes it in --log-format json.
func TestRedactorWriterJSONLines(t *testing.T) {
	secret := `pa"ss\word`
	var out bytes.Buffer
	w := engine.NewRedactor(secret).Writer(&out)
	line, _ := json.Marshal(map[string]string{"message": "auth with " + secret})
	if _, err := w.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), `pa\"ss`) || !strings.Contains(out.String(), "auth with (sensitive)") {
		t.Errorf("json line not redacted: %s", out.String())
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Errorf("redaction broke the JSON line: %v", err)
	}
	quoted := strconv.Quote("x " + secret)
	out.Reset()
	if _, err := w.Write([]byte("msg=" + quoted + "\n")); err != nil {
		t.Fatal(err)
	}
	if out.String() != `msg="x (sensitive)"`+"\n" {
		t.Errorf("console line not redacted: %s", out.String())
	}
}

// TestRedactorLearnsDerivedSecrets: a value derived from a sensitive variable
// (upper(var.key), a URL built around it) is not the variable's value, so a log
// redactor seeded with the variables misses it; the engine adds each step's
// sensitive strings to Options.Redactor before the step runs.
func TestRedactorLearnsDerivedSecrets(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
variable "key" {
  sensitive = true
  default   = "sk-derived-42"
}
step "probe" "a" { value = upper(var.key) }
step "probe" "b" { value = "Authorization: ${var.key} / ${upper(var.key)}" }
`)
	redact := engine.NewRedactor(p.Secrets()...)
	derived := "scrape http://h/metrics?token=SK-DERIVED-42: connection refused"
	if got := redact.String(derived); got != derived {
		t.Fatalf("the variable's value alone already redacts the derived one: %q", got)
	}
	if _, err := engine.Apply(context.Background(), p, h.reg, engine.Options{StateDir: h.state, Clock: h.clock, Redactor: redact}); err != nil {
		t.Fatal(err)
	}
	if got, want := redact.String(derived), "scrape http://h/metrics?token=(sensitive): connection refused"; got != want {
		t.Fatalf("after the steps ran: %q, want %q", got, want)
	}
	// A string that carries the secret and a copy changed beyond recognition is
	// redacted whole: redacting the secret alone would leave the copy.
	both := "Authorization: sk-derived-42 / SK-DERIVED-42"
	if got := redact.String("hdr " + both); got != "hdr (sensitive)" {
		t.Fatalf("%q", got)
	}
}
