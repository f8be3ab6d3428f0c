package redact

import (
	"encoding/json"
	"io"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Text is what a secret is replaced with.
const Text = "(sensitive)"

// Forms is s as it may appear in text: as it is, inside a JSON string
// (encoding/json and zerolog escaping) and inside a Go-quoted string (a %q in a
// diagnostic, zerolog's console writer), so a secret holding a quote or a
// backslash is caught there too.
func Forms(s string) []string {
	forms := []string{s}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	forms = append(forms, strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(b.String(), `"`), "\n"), `"`))
	if j, err := json.Marshal(s); err == nil {
		forms = append(forms, strings.TrimSuffix(strings.TrimPrefix(string(j), `"`), `"`))
	}
	q := strconv.Quote(s)
	forms = append(forms, q[1:len(q)-1])
	return forms
}

// Redactor replaces secrets in text with Text. Besides each secret as
// it is, it replaces the forms a secret takes inside a JSON string (encoding/json
// and zerolog escaping) and inside a Go-quoted string (zerolog's console writer),
// so a secret holding a quote or a backslash is caught in a log line too.
// Overlapping secrets are redacted as one span, so no fragment of either leaks.
// The zero value redacts nothing; a Redactor is safe for concurrent use.
type Redactor struct {
	mu      sync.RWMutex
	needles []string // longest first
}

// New returns a Redactor for secrets; empty strings are ignored.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add adds secrets.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for _, n := range r.needles {
		seen[n] = true
	}
	for _, s := range secrets {
		for _, form := range Forms(s) {
			if form != "" && !seen[form] {
				seen[form] = true
				r.needles = append(r.needles, form)
			}
		}
	}
	sort.Slice(r.needles, func(i, j int) bool {
		if len(r.needles[i]) != len(r.needles[j]) {
			return len(r.needles[i]) > len(r.needles[j])
		}
		return r.needles[i] < r.needles[j]
	})
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if len(r.needles) == 0 {
		return s
	}
	out, _ := r.redact([]byte(s), len(s), true)
	return string(out)
}

// redact replaces the secrets in b that start before limit and returns the result
// and how many bytes of b it covers. A secret that starts before limit but runs
// past it ends the covered part at its start when final is false, so a streaming
// caller keeps those bytes for the next write.
func (r *Redactor) redact(b []byte, limit int, final bool) ([]byte, int) {
	type span struct{ from, to int }
	var spans []span
	s := string(b)
	for _, n := range r.needles {
		for at := 0; ; {
			i := strings.Index(s[at:], n)
			if i < 0 {
				break
			}
			spans = append(spans, span{at + i, at + i + len(n)})
			at += i + 1
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	var out []byte
	done := 0
	for k := 0; k < len(spans); {
		from, to := spans[k].from, spans[k].to
		for k++; k < len(spans) && spans[k].from <= to; k++ {
			to = max(to, spans[k].to)
		}
		if from >= limit {
			break
		}
		if to > limit && !final {
			limit = from
			break
		}
		out = append(out, b[done:from]...)
		out = append(out, Text...)
		done = to
	}
	if limit > done {
		out = append(out, b[done:limit]...)
		done = limit
	}
	return out, done
}

// maxNeedle is the length of the longest secret form.
func (r *Redactor) maxNeedle() int {
	if len(r.needles) == 0 {
		return 0
	}
	return len(r.needles[0])
}

// Writer returns a writer that redacts each Write before passing it to w. Each
// Write must hold whole lines, as zerolog's writers do; for output cut at
// arbitrary places use Stream.
func (r *Redactor) Writer(w io.Writer) io.Writer { return lineWriter{r: r, w: w} }

type lineWriter struct {
	r *Redactor
	w io.Writer
}

func (l lineWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(l.w, l.r.String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the writer underneath, so a caller can still ask whether it is a
// terminal.
func (l lineWriter) Unwrap() io.Writer { return l.w }

// Stream returns a writer that redacts output cut at arbitrary places, such as a
// child process's stdout: it holds back the last bytes that could be the start of
// a secret until the next Write or Close shows how they continue. Close flushes;
// it does not close w.
func (r *Redactor) Stream(w io.Writer) io.WriteCloser { return &streamWriter{r: r, w: w} }

type streamWriter struct {
	r   *Redactor
	w   io.Writer
	buf []byte
	err error
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	s.r.mu.RLock()
	defer s.r.mu.RUnlock()
	if len(s.r.needles) == 0 {
		_, s.err = s.w.Write(p)
		return len(p), s.err
	}
	s.buf = append(s.buf, p...)
	limit := len(s.buf) - (s.r.maxNeedle() - 1)
	if limit <= 0 {
		return len(p), nil
	}
	out, done := s.r.redact(s.buf, limit, false)
	if _, s.err = s.w.Write(out); s.err != nil {
		return 0, s.err
	}
	s.buf = append(s.buf[:0], s.buf[done:]...)
	return len(p), nil
}

// Close writes what was held back.
func (s *streamWriter) Close() error {
	if s.err != nil || len(s.buf) == 0 {
		return s.err
	}
	s.r.mu.RLock()
	out, _ := s.r.redact(s.buf, len(s.buf), true)
	s.r.mu.RUnlock()
	s.buf = nil
	_, s.err = s.w.Write(out)
	return s.err
}
