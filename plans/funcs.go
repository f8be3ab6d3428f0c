package plans

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions returns the function table of the language: go-cty's stdlib plus the
// few campaign-specific helpers. baseDir anchors relative file paths so a campaign
// evaluates the same wherever rigor is started from.
func functions(baseDir string) map[string]function.Function {
	return map[string]function.Function{
		"abs":           stdlib.AbsoluteFunc,
		"ceil":          stdlib.CeilFunc,
		"floor":         stdlib.FloorFunc,
		"max":           stdlib.MaxFunc,
		"min":           stdlib.MinFunc,
		"pow":           stdlib.PowFunc,
		"log":           stdlib.LogFunc,
		"parseint":      stdlib.ParseIntFunc,
		"signum":        stdlib.SignumFunc,
		"format":        stdlib.FormatFunc,
		"formatlist":    stdlib.FormatListFunc,
		"join":          stdlib.JoinFunc,
		"split":         stdlib.SplitFunc,
		"lower":         stdlib.LowerFunc,
		"upper":         stdlib.UpperFunc,
		"replace":       stdlib.ReplaceFunc,
		"substr":        stdlib.SubstrFunc,
		"trimspace":     stdlib.TrimSpaceFunc,
		"length":        stdlib.LengthFunc,
		"keys":          stdlib.KeysFunc,
		"values":        stdlib.ValuesFunc,
		"lookup":        stdlib.LookupFunc,
		"merge":         stdlib.MergeFunc,
		"concat":        stdlib.ConcatFunc,
		"contains":      stdlib.ContainsFunc,
		"distinct":      stdlib.DistinctFunc,
		"element":       stdlib.ElementFunc,
		"flatten":       stdlib.FlattenFunc,
		"range":         stdlib.RangeFunc,
		"reverse":       stdlib.ReverseListFunc,
		"slice":         stdlib.SliceFunc,
		"sort":          stdlib.SortFunc,
		"zipmap":        stdlib.ZipmapFunc,
		"coalesce":      stdlib.CoalesceFunc,
		"jsonencode":    stdlib.JSONEncodeFunc,
		"jsondecode":    stdlib.JSONDecodeFunc,
		"tostring":      stdlib.MakeToFunc(cty.String),
		"tonumber":      stdlib.MakeToFunc(cty.Number),
		"tobool":        stdlib.MakeToFunc(cty.Bool),
		"file":          fileFunc(baseDir),
		"filesha256":    fileSHA256Func(baseDir),
		"duration":      DurationFunc,
		"ceil_multiple": CeilMultipleFunc,
	}
}

// fileReaders are the functions above whose value is a file's content: a context
// with step outputs evaluates again what calls them, since a step may have
// rewritten the file.
var fileReaders = []string{"file", "filesha256"}

func resolvePath(baseDir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

func fileFunc(baseDir string) function.Function {
	return function.New(&function.Spec{
		Description: "Reads a file relative to the campaign directory.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			b, err := os.ReadFile(resolvePath(baseDir, args[0].AsString()))
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read file: %w", err)
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileSHA256Func(baseDir string) function.Function {
	return function.New(&function.Spec{
		Description: "Returns the hex sha256 of a file's content.",
		Params:      []function.Parameter{{Name: "path", Type: cty.String}},
		Type:        function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			sum, err := FileSHA256(resolvePath(baseDir, args[0].AsString()))
			if err != nil {
				return cty.NilVal, err
			}
			return cty.StringVal(sum), nil
		},
	})
}

// hashBuffers recycles the 1 MiB read buffers: the engine hashes many small
// artefacts per step, and a fresh buffer each time costs more than the hashing.
var hashBuffers = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

// FileSHA256 streams a file through sha256. The buffer is large so that hashing a
// multi-gigabyte corpus runs at the speed of the hash, not of small reads.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot hash file: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	bp := hashBuffers.Get().(*[]byte)
	defer hashBuffers.Put(bp)
	if _, err := io.CopyBuffer(h, f, *bp); err != nil {
		return "", fmt.Errorf("cannot hash file %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// DurationFunc turns a Go duration string ("90m", "600s", "1h30m") into seconds, so
// budgets and bounds can be compared and summed as numbers.
var DurationFunc = function.New(&function.Spec{
	Description: "Converts a duration string such as \"90m\" to a number of seconds.",
	Params:      []function.Parameter{{Name: "d", Type: cty.String}},
	Type:        function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		d, err := ParseDuration(args[0].AsString())
		if err != nil {
			return cty.NilVal, err
		}
		return cty.NumberFloatVal(d.Seconds()), nil
	},
})

// CeilMultipleFunc rounds x up to the next multiple of m: the seed campaign rounds
// pilot-derived request counts up to a multiple of the concurrency.
var CeilMultipleFunc = function.New(&function.Spec{
	Description: "Rounds x up to the nearest multiple of m.",
	Params: []function.Parameter{
		{Name: "x", Type: cty.Number},
		{Name: "m", Type: cty.Number},
	},
	Type: function.StaticReturnType(cty.Number),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		x, _ := args[0].AsBigFloat().Float64()
		m, _ := args[1].AsBigFloat().Float64()
		if m <= 0 || math.IsInf(m, 0) || math.IsNaN(m) {
			return cty.NilVal, function.NewArgErrorf(1, "multiple must be a positive number, got %v", m)
		}
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return cty.NilVal, function.NewArgErrorf(0, "value must be finite, got %v", x)
		}
		r := math.Ceil(x/m) * m
		return cty.NumberVal(new(big.Float).SetFloat64(r)), nil
	},
})

// ParseDuration accepts Go duration syntax and rejects negative durations, which
// have no meaning for budgets or bounds.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use a number with a unit such as \"90m\", \"600s\" or \"1h30m\"", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	return d, nil
}
