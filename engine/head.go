package engine

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
)

// Head identifies the last record of a journal: its sequence number and the
// sha256 of its line. Every record carries the hash of the one before, so the head
// commits to the whole journal: write it down (or sign it, see SignHead) and
// `rigor verify --head` later proves that nothing up to it was cut or rewritten.
type Head struct {
	Seq    int    `json:"seq"`
	SHA256 string `json:"sha256"`
}

// String is the copy-pasteable form "SEQ:SHA256" that --head accepts.
func (h Head) String() string { return fmt.Sprintf("%d:%s", h.Seq, h.SHA256) }

var headPattern = regexp.MustCompile(`^(?:([1-9][0-9]*):)?([0-9a-f]{64})$`)

// ParseHead reads "SEQ:SHA256" or a bare SHA256 (then Seq is 0: the record is
// looked up by its hash alone).
func ParseHead(s string) (Head, error) {
	m := headPattern.FindStringSubmatch(s)
	if m == nil {
		return Head{}, fmt.Errorf("head %q: want SEQ:SHA256 as `rigor status` prints it (the record number, a colon and 64 lowercase hex digits), or the SHA256 alone", s)
	}
	seq := 0
	if m[1] != "" {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			return Head{}, fmt.Errorf("head %q: %w", s, err)
		}
		seq = n
	}
	return Head{Seq: seq, SHA256: m[2]}, nil
}

// JournalHead reads and verifies a state directory's journal and returns its head.
// An empty journal has head 0 with the genesis hash.
func JournalHead(stateDir string) (Head, error) {
	recs, last, err := ReadJournal(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return Head{}, err
	}
	return Head{Seq: len(recs), SHA256: last}, nil
}
