package schemas

import (
	"strings"
	"testing"
)

func TestJournalRecordSchema(t *testing.T) {
	good := `{"seq":1,"time":"2026-10-22T02:00:00Z","kind":"plan_frozen","prev":"` + strings.Repeat("0", 64) + `","plan_sha256":"` + strings.Repeat("a", 64) + `"}`
	if err := Validate("journal-record", []byte(good)); err != nil {
		t.Fatalf("valid record rejected: %v", err)
	}
	withFiles := strings.Replace(good, `"plan_sha256"`, `"artefacts":[{"path":"plan/plan.json","size":12,"sha256":"`+strings.Repeat("b", 64)+`"}],"plan_sha256"`, 1)
	if err := Validate("journal-record", []byte(withFiles)); err != nil {
		t.Fatalf("plan_frozen with its file hashes rejected: %v", err)
	}
	cases := map[string]string{
		"unknown kind":                  strings.Replace(good, "plan_frozen", "plan_thawed", 1),
		"short prev":                    strings.Replace(good, strings.Repeat("0", 64), "00", 1),
		"frozen without hash":           `{"seq":1,"time":"2026-10-22T02:00:00Z","kind":"plan_frozen","prev":"` + strings.Repeat("0", 64) + `"}`,
		"seq zero":                      strings.Replace(good, `"seq":1`, `"seq":0`, 1),
		"plan file without hash":        strings.Replace(good, `"plan_sha256"`, `"artefacts":[{"path":"plan/plan.json","size":12}],"plan_sha256"`, 1),
		"amendment zero":                strings.Replace(good, `"plan_sha256"`, `"amendment":0,"plan_sha256"`, 1),
		"post_hoc outside an amendment": strings.Replace(good, `"plan_sha256"`, `"post_hoc":true,"plan_sha256"`, 1),
	}
	postHoc := strings.Replace(strings.Replace(good, "plan_frozen", "amendment", 1), `"plan_sha256"`, `"amendment":1,"post_hoc":true,"plan_sha256"`, 1)
	if err := Validate("journal-record", []byte(postHoc)); err != nil {
		t.Fatalf("a post-hoc amendment record rejected: %v", err)
	}
	for name, doc := range cases {
		if err := Validate("journal-record", []byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := Validate("no-such", []byte(good)); err == nil || !strings.Contains(err.Error(), "journal-record") {
		t.Errorf("unknown schema error should list the schemas: %v", err)
	}
}

func TestOverlapSchema(t *testing.T) {
	good := `{"block":"block.primary[\"flare_instrumented/c4/r2\"]","declared":"after 8 completed requests",` +
		`"block_window":{"start":"2026-10-22T03:00:00.5Z","end":null},` +
		`"capture_window":{"start":"2026-10-22T03:00:10.123456789Z","end":"2026-10-22T03:00:11.123456789Z"},` +
		`"block_requests_completed_at_capture_end":12,"overlapped":true,"detail":"the capture ran within the load"}`
	if err := Validate("overlap", []byte(good)); err != nil {
		t.Fatalf("valid overlap rejected: %v", err)
	}
	if err := Validate("overlap", []byte(strings.Replace(good, `"start":"2026-10-22T03:00:00.5Z","end":null`, `"start":null,"end":null`, 1))); err != nil {
		t.Errorf("a block that sent nothing has no window: %v", err)
	}
	cases := map[string]string{
		"no block":              strings.Replace(good, `"block":"block.primary[\"flare_instrumented/c4/r2\"]",`, "", 1),
		"local time":            strings.Replace(good, "03:00:00.5Z", "03:00:00.5+02:00", 1),
		"window without end":    strings.Replace(good, `,"end":null`, "", 1),
		"capture without start": strings.Replace(good, `"start":"2026-10-22T03:00:10.123456789Z"`, `"start":null`, 1),
		"overlapped as text":    strings.Replace(good, `"overlapped":true`, `"overlapped":"yes"`, 1),
		"negative requests":     strings.Replace(good, `:12,`, `:-1,`, 1),
	}
	for name, doc := range cases {
		if doc == good {
			t.Fatalf("%s: the case changes nothing", name)
		}
		if err := Validate("overlap", []byte(doc)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
