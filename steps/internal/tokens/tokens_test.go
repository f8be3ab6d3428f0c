package tokens

import "testing"

func TestCountAndSplitAgree(t *testing.T) {
	cases := map[string]int{"": 0, "a": 1, "  a  b\n\tc ": 3, "one two": 2}
	for in, want := range cases {
		if got := Count(in); got != want {
			t.Errorf("Count(%q) = %d, want %d", in, got, want)
		}
		if got := len(Split(in)); got != want {
			t.Errorf("len(Split(%q)) = %d, want %d", in, got, want)
		}
	}
}
