package sshsig

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"golang.org/x/crypto/ssh"
)

// AllowedSigner is one line of an OpenSSH allowed_signers file (ssh-keygen(1),
// "ALLOWED SIGNERS"): principals, options, and a public key.
type AllowedSigner struct {
	Principals string
	// Namespaces is the namespaces="..." pattern list; empty allows every namespace.
	Namespaces string
	Key        ssh.PublicKey
	Line       int
}

// AllowedSigners is a parsed allowed_signers file.
type AllowedSigners []AllowedSigner

// ParseAllowedSigners reads an allowed_signers file. Blank lines and # comments
// are skipped; a line that does not parse, or that uses an option this package
// does not implement, is an error naming the line, so no entry is silently wider
// or narrower than the file says.
func ParseAllowedSigners(data []byte) (AllowedSigners, error) {
	var out AllowedSigners
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		principals, rest, err := firstField(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", n, err)
		}
		key, _, options, tail, err := ssh.ParseAuthorizedKey([]byte(rest))
		if err != nil || len(bytes.TrimSpace(tail)) != 0 {
			return nil, fmt.Errorf("line %d: no public key after the principals %q (want: principals [options] keytype base64-key [comment])", n, principals)
		}
		s := AllowedSigner{Principals: principals, Key: key, Line: n}
		for _, o := range options {
			name, value, hasValue := strings.Cut(o, "=")
			switch strings.ToLower(name) {
			case "namespaces":
				if !hasValue {
					return nil, fmt.Errorf("line %d: namespaces needs a value", n)
				}
				s.Namespaces = strings.Trim(value, `"`)
			case "cert-authority", "valid-after", "valid-before":
				return nil, fmt.Errorf("line %d: option %s is not supported by rigor (plain keys only, no validity window); remove it or verify with ssh-keygen -Y verify", n, name)
			default:
				return nil, fmt.Errorf("line %d: unknown option %q", n, o)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no signer listed")
	}
	return out, nil
}

// firstField splits off the principals, which may be quoted.
func firstField(line string) (string, string, error) {
	if strings.HasPrefix(line, `"`) {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return "", "", fmt.Errorf("unterminated quoted principals")
		}
		return line[1 : end+1], strings.TrimSpace(line[end+2:]), nil
	}
	i := strings.IndexAny(line, " \t")
	if i < 0 {
		return "", "", fmt.Errorf("a principals field and a key are needed")
	}
	return line[:i], strings.TrimSpace(line[i:]), nil
}

// Find returns the entry that lists key for namespace, or nil.
func (a AllowedSigners) Find(key ssh.PublicKey, namespace string) *AllowedSigner {
	want := key.Marshal()
	for i := range a {
		if bytes.Equal(a[i].Key.Marshal(), want) && (a[i].Namespaces == "" || matchList(a[i].Namespaces, namespace)) {
			return &a[i]
		}
	}
	return nil
}

// matchList is OpenSSH's pattern-list match: comma-separated patterns with * and
// ?, where a matching !pattern vetoes the list.
func matchList(list, s string) bool {
	matched := false
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if wildcard(neg, s) {
				return false
			}
			continue
		}
		if wildcard(p, s) {
			matched = true
		}
	}
	return matched
}

func wildcard(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if wildcard(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || p[0] != s[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
