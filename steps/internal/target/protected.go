package target

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// PinName is the name a file is pinned under (engine.PinnedInputs): "file " and its
// path relative to the campaign directory, as campaign.frozen names it, so that one
// file listed in both places is one pin.
func PinName(baseDir, path string) string {
	p := path
	if filepath.IsAbs(p) {
		if rel, err := filepath.Rel(baseDir, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
	}
	return "file " + filepath.ToSlash(filepath.Clean(p))
}

// FilePath is where a declared file is: relative paths are in the campaign directory.
func FilePath(baseDir, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(baseDir, path)
}

// Digests hashes each file (sha256, hex) under its PinName. Every file that cannot be
// read is named in the error; the others are still hashed.
func Digests(baseDir string, files []string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for _, f := range files {
		sum, err := plans.FileSHA256(FilePath(baseDir, f))
		if err != nil {
			errs = append(errs, fmt.Errorf("protected file %s: %w", f, err))
			continue
		}
		out[PinName(baseDir, f)] = sum
	}
	return out, errors.Join(errs...)
}

// Pinned is engine.PinnedInputs for a step whose configuration names a target: the
// digests of the target's protected_files and of the extra files the step itself
// protects.
func Pinned(config cty.Value, baseDir string, extra ...string) (map[string]string, error) {
	t, err := FromValue(config.GetAttr("target"))
	if err != nil {
		return nil, err
	}
	return Digests(baseDir, append(append([]string(nil), t.ProtectedFiles...), extra...))
}
