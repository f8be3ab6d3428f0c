package engine

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// inputsHash computes a step's input hash from its canonical configuration, the
// content of every file it names and the outputs of the steps it depends on. It
// refuses unknown values: nothing unknown is ever hashed.
func inputsHash(config cty.Value, files []string, deps map[string]cty.Value) (string, *InputParts, error) {
	if !plans.IsWholeKnown(config) {
		return "", nil, fmt.Errorf("configuration still holds unknown values %s", plans.UnknownText(nil))
	}
	cfgJSON, err := plans.CanonicalJSON(plans.CanonicalValue(config))
	if err != nil {
		return "", nil, err
	}
	parts := &InputParts{ConfigSHA256: plans.SHA256Hex(cfgJSON), Files: map[string]string{}, Deps: map[string]string{}}
	for _, f := range files {
		sum, err := plans.FileSHA256(f)
		if err != nil {
			return "", nil, fmt.Errorf("input file %s: %w", f, err)
		}
		parts.Files[f] = sum
	}
	for addr, out := range deps {
		b, err := plans.CanonicalJSON(plans.CanonicalValue(out))
		if err != nil {
			return "", nil, err
		}
		parts.Deps[addr] = plans.SHA256Hex(b)
	}
	all, err := plans.CanonicalJSON(parts)
	if err != nil {
		return "", nil, err
	}
	return plans.SHA256Hex(all), parts, nil
}

// describeInputChange says, in words, which part of a step's inputs changed.
func describeInputChange(old, now *InputParts) string {
	if old == nil || now == nil {
		return "its inputs changed"
	}
	if old.ConfigSHA256 != now.ConfigSHA256 {
		return "its evaluated configuration changed"
	}
	for _, f := range slices.Sorted(maps.Keys(now.Files)) {
		if old.Files[f] != now.Files[f] {
			return fmt.Sprintf("the content of %s changed", f)
		}
	}
	for _, d := range slices.Sorted(maps.Keys(now.Deps)) {
		if old.Deps[d] != now.Deps[d] {
			return fmt.Sprintf("the outputs of %s changed", d)
		}
	}
	return "its set of inputs changed"
}

// hashArtefacts lists every file under dir with its size and sha256, paths relative
// to the state directory, sorted.
func hashArtefacts(stateDir, dir string) ([]Artefact, error) {
	var out []Artefact
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum, err := plans.FileSHA256(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stateDir, p)
		out = append(out, Artefact{Path: filepath.ToSlash(rel), Size: info.Size(), SHA256: sum})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// encodeOutputs stores outputs with their type so they can be read back exactly.
func encodeOutputs(v cty.Value) (json.RawMessage, json.RawMessage, error) {
	if v == cty.NilVal || v.IsNull() {
		return nil, nil, nil
	}
	v, _ = v.UnmarkDeep()
	ty, err := ctyjson.MarshalType(v.Type())
	if err != nil {
		return nil, nil, err
	}
	val, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return nil, nil, err
	}
	return val, ty, nil
}

func decodeOutputs(val, ty json.RawMessage) (cty.Value, error) {
	if len(val) == 0 {
		return cty.NilVal, nil
	}
	t, err := ctyjson.UnmarshalType(ty)
	if err != nil {
		return cty.NilVal, err
	}
	return ctyjson.Unmarshal(val, t)
}
