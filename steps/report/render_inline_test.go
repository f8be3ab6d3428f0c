package report

import "testing"

func TestInlineHTML(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"strong":          {"**Promoted.** Criterion interval", "<strong>Promoted.</strong> Criterion interval"},
		"code":            {"stated by `rigor status`", "stated by <code>rigor status</code>"},
		"escaped first":   {"**a < b** & `x > y`", "<strong>a &lt; b</strong> &amp; <code>x &gt; y</code>"},
		"unpaired stays":  {"2 ** 3 and a lone `", "2 ** 3 and a lone `"},
		"no markup":       {"p99 of 52 samples", "p99 of 52 samples"},
		"two code spans":  {"`a` then `b`", "<code>a</code> then <code>b</code>"},
		"markup in a tag": {`<script>**x**</script>`, "&lt;script&gt;<strong>x</strong>&lt;/script&gt;"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := inlineHTML(tc.in); got != tc.want {
				t.Errorf("inlineHTML(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
