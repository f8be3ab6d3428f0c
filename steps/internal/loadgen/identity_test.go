package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHeaderValue(t *testing.T) {
	head := []byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nx-rigor-incarnation:  abc@2026-01-01T00:00:00Z/pid-7 \r\nX-Rigor-Incarnation: second\r\nX-Empty:\r\n")
	cases := map[string]struct {
		name, want string
	}{
		"case-insensitive, trimmed, first of two": {"X-Rigor-Incarnation", "abc@2026-01-01T00:00:00Z/pid-7"},
		"absent":                       {"X-Served-By", ""},
		"not asked for":                {"", ""},
		"empty value":                  {"X-Empty", ""},
		"the status line is no header": {"HTTP/1.1 200 OK", ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := headerValue(head, tc.name); got != tc.want {
				t.Errorf("headerValue(%q) = %q, want %q", tc.name, got, tc.want)
			}
		})
	}
}

// Every record keeps the identity header of the response that answered it, so a
// change of server mid-block shows request by request.
func TestRecordsKeepTheIdentityHeader(t *testing.T) {
	checkLeaks(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i := indexOf(r); i%3 != 2 {
			w.Header().Set("X-Served-By", fmt.Sprintf("server-%d", i%3))
		}
		script(okStream(2))(w, r)
	}))
	t.Cleanup(srv.Close)
	for name, header := range map[string]string{"asked for": "X-Served-By", "not asked for": ""} {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig(srv.URL)
			cfg.Requests, cfg.IdentityHeader = 6, header
			var out bytes.Buffer
			if _, err := Run(context.Background(), cfg, &out); err != nil {
				t.Fatal(err)
			}
			recs, err := ReadRecords(&out)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]string, len(recs))
			for _, r := range recs {
				got[r.Index] = r.ServedBy
			}
			want := []string{"server-0", "server-1", "", "server-0", "server-1", ""}
			if header == "" {
				want = make([]string, 6)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("served_by by request index (-want +got):\n%s", d)
			}
		})
	}
}
