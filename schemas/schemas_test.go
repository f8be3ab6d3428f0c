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
