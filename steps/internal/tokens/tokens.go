package tokens

// Count returns the number of whitespace-separated tokens in s.
func Count(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			in = false
			continue
		}
		if !in {
			n++
			in = true
		}
	}
	return n
}

// Split returns the tokens of s without allocating copies of their bytes.
func Split(s string) []string {
	out := make([]string, 0, len(s)/5+1)
	start := -1
	for i := 0; i < len(s); i++ {
		if isSpace(s[i]) {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }
