package loadgen

import "bytes"

// headerValue returns the value of the first header called name (case-insensitive)
// in a response head ("HTTP/1.1 200 OK\r\nName: value\r\n..."), or "" when name is
// empty or the header is absent. It reads the bytes parseHead already checked.
func headerValue(head []byte, name string) string {
	if name == "" {
		return ""
	}
	_, rest := cutLine(head)
	for len(rest) > 0 {
		var line []byte
		line, rest = cutLine(rest)
		k, v, ok := bytes.Cut(line, []byte(":"))
		if ok && bytes.EqualFold(bytes.TrimSpace(k), []byte(name)) {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}
