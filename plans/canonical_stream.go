package plans

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
)

// The plan JSON is written straight from the plan rather than built as Canonical's
// maps and handed to encoding/json: for a campaign of 100,000 instances the maps
// and reflection cost more than the rest of loading. The bytes are the same ones
// encoding/json writes for Canonical() (TestCanonicalStreamMatchesEncodingJSON), so
// plan hashes frozen before this writer existed still match. A matrix block's
// configuration is written without being built as a cty object, from the JSON of
// the values the matrix's blocks share (matrixCell.appendCanonical); the same test
// holds it to Config's encoding. Other steps' configuration JSON is kept from
// Load's evaluation (Instance.configJSON).

// writeCanonical writes the canonical plan JSON to w.
func (p *Plan) writeCanonical(w io.Writer) error {
	camp, err := CanonicalJSON(p.campaignCanonical())
	if err != nil {
		return err
	}
	head := append([]byte(`{"campaign":`), bytes.TrimSuffix(camp, []byte("\n"))...)
	if _, err := w.Write(append(head, `,"instances":[`...)); err != nil {
		return err
	}
	// Instances are encoded a batch per core at a time and written in order.
	const batch = 512
	workers := runtime.GOMAXPROCS(0)
	parts := make([][]byte, workers)
	errs := make([]error, workers)
	for first := 0; first < len(p.Instances); first += batch * workers {
		parallelFor(workers, 1, func(k int) {
			b := parts[k][:0]
			var err error
			for n := first + k*batch; n < min(first+(k+1)*batch, len(p.Instances)); n++ {
				if n > 0 {
					b = append(b, ',')
				}
				if b, err = p.Instances[n].appendCanonical(b); err != nil {
					break
				}
			}
			parts[k], errs[k] = b, err
		})
		for k := range parts {
			if errs[k] != nil {
				return errs[k]
			}
			if _, err := w.Write(parts[k]); err != nil {
				return err
			}
		}
	}
	_, err = w.Write([]byte("]}\n"))
	return err
}

// campaignCanonical is the campaign part of Canonical.
func (p *Plan) campaignCanonical() map[string]any {
	camp := map[string]any{"name": p.Campaign.Name}
	if p.Campaign.Description != "" {
		camp["description"] = p.Campaign.Description
	}
	if len(p.Campaign.Frozen) > 0 {
		camp["frozen"] = p.Campaign.Frozen
	}
	if o := p.Campaign.Outage; o != nil {
		camp["outage"] = map[string]any{
			"budget_s":  json.Number(strconv.FormatFloat(o.Budget.Seconds(), 'g', -1, 64)),
			"reserve_s": json.Number(strconv.FormatFloat(o.Reserve.Seconds(), 'g', -1, 64)),
		}
	}
	if p.Decision != nil {
		// Under campaign, so a changed rule shows in the semantic diff and is an amendment.
		camp["decision"] = p.Decision.canonical()
	}
	// A matrix that does not run in declared order records its order and seed (a
	// derived seed too), so the frozen plan says how its run order was drawn.
	// Absent otherwise, so plans without one hash as they always did.
	orders := map[string]any{}
	for _, m := range p.Matrices {
		if mo := m.Ordering; mo != nil && mo.Order != OrderDeclared {
			o := map[string]any{"order": mo.Order}
			if mo.Order == OrderRandomized {
				o["seed"] = mo.Seed
				o["seed_derived"] = mo.SeedDerived
			}
			orders[m.Name] = o
		}
	}
	if len(orders) > 0 {
		camp["orders"] = orders
	}
	return camp
}

// appendCanonical appends the JSON of i.canonical(), keys in sorted order.
func (i *Instance) appendCanonical(b []byte) ([]byte, error) {
	b = append(b, `{"addr":`...)
	b = appendJSONString(b, i.Addr)
	if len(i.After) > 0 {
		b = append(b, `,"after":[`...)
		for n, a := range i.After {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, a)
		}
		b = append(b, ']')
	}
	if i.Cell != "" {
		b = append(b, `,"arm":`...)
		b = appendJSONString(b, i.Arm)
		b = append(b, `,"cell":`...)
		b = appendJSONString(b, i.Cell)
	}
	b = append(b, `,"config":`...)
	var err error
	switch {
	case i.configJSON != nil:
		b = append(b, i.configJSON...)
	case i.appendConfig != nil && i.ev != nil && i.ev.planCtx != nil:
		b, err = i.appendConfig(b, i.ev.planCtx)
	default:
		b, err = AppendCanonicalJSON(b, i.Config())
	}
	if err != nil {
		return nil, err
	}
	b = append(b, `,"depends_on":[`...)
	for n, d := range i.DependsOn {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, d)
	}
	b = append(b, `],"meta":{"always":`...)
	b = strconv.AppendBool(b, i.Meta.Always)
	if i.Meta.ConditionText != "" {
		b = append(b, `,"condition":`...)
		b = appendJSONString(b, i.Meta.ConditionText)
	}
	if i.Meta.During != "" {
		b = append(b, `,"during":`...)
		b = appendJSONString(b, i.Meta.During)
	}
	if len(i.Meta.OnFailureByClass) > 0 {
		b = appendStringMap(append(b, `,"on_failure":`...), i.Meta.OnFailureByClass)
	} else if i.Meta.OnFailure != "" {
		b = append(b, `,"on_failure":`...)
		b = appendJSONString(b, i.Meta.OnFailure)
	}
	if i.Meta.Outage != "" {
		b = append(b, `,"outage":`...)
		b = appendJSONString(b, i.Meta.Outage)
	}
	b = append(b, `,"phase":`...)
	b = appendJSONString(b, i.Meta.Phase)
	if i.Meta.RerunSafe {
		b = append(b, `,"rerun_safe":true`...)
	}
	if i.Meta.StartAfterRequests > 0 {
		b = append(b, `,"start_after_requests":`...)
		b = strconv.AppendInt(b, int64(i.Meta.StartAfterRequests), 10)
	}
	if i.Meta.StartAfter > 0 {
		b = append(b, `,"start_after_s":`...)
		b = strconv.AppendFloat(b, i.Meta.StartAfter.Seconds(), 'g', -1, 64)
	}
	if i.Meta.Timeout > 0 {
		b = append(b, `,"timeout_s":`...)
		b = strconv.AppendFloat(b, i.Meta.Timeout.Seconds(), 'g', -1, 64)
	}
	if len(i.Meta.Uses) > 0 {
		b = append(b, `,"uses":[`...)
		for n, u := range i.Meta.Uses {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, u)
		}
		b = append(b, ']')
	}
	b = append(b, `},"source":`...)
	if i.source == nil {
		b = append(b, "null"...)
	} else {
		b = appendStringMap(b, i.source)
	}
	b = append(b, `,"type":`...)
	b = appendJSONString(b, i.Type)
	return append(b, '}'), nil
}

// appendStringMap appends a string map as a JSON object in key order.
func appendStringMap(b []byte, source map[string]string) []byte {
	b = append(b, '{')
	for n, k := range slices.Sorted(maps.Keys(source)) {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, k)
		b = append(b, ':')
		b = appendJSONString(b, source[k])
	}
	return append(b, '}')
}

// AppendCanonicalJSON appends the JSON encoding of CanonicalValue(v), without
// building it.
func AppendCanonicalJSON(b []byte, v cty.Value) ([]byte, error) {
	if v == cty.NilVal {
		return append(b, "null"...), nil
	}
	v, marks := v.Unmark()
	if _, ok := marks[Sensitive]; ok {
		return appendJSONString(b, SensitiveText), nil
	}
	if !v.IsKnown() {
		return appendJSONString(b, UnknownText(marks)), nil
	}
	if v.IsNull() {
		return append(b, "null"...), nil
	}
	ty := v.Type()
	var err error
	switch {
	case ty == cty.String:
		return appendJSONString(b, v.AsString()), nil
	case ty == cty.Bool:
		return strconv.AppendBool(b, v.True()), nil
	case ty == cty.Number:
		s := canonicalNumber(v.AsBigFloat())
		if s[0] == '"' {
			// As encoding/json refuses a json.Number that is not a number.
			return nil, fmt.Errorf("json: invalid number literal %q", s)
		}
		return append(b, s...), nil
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		b = append(b, '[')
		n := 0
		for it := v.ElementIterator(); it.Next(); n++ {
			if n > 0 {
				b = append(b, ',')
			}
			_, e := it.Element()
			if b, err = AppendCanonicalJSON(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case ty.IsMapType() || ty.IsObjectType():
		type kv struct {
			k string
			v cty.Value
		}
		elems := make([]kv, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			elems = append(elems, kv{k.AsString(), e})
		}
		sort.Slice(elems, func(x, y int) bool { return elems[x].k < elems[y].k })
		b = append(b, '{')
		for n, e := range elems {
			if n > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, e.k)
			b = append(b, ':')
			if b, err = AppendCanonicalJSON(b, e.v); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case ty == cty.DynamicPseudoType:
		return appendJSONString(b, UnknownText(marks)), nil
	}
	return append(b, "null"...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s exactly as encoding/json does with HTML escaping off:
// short escapes for \b \f \n \r \t, \u00XX for other control bytes, \ufffd for
// invalid UTF-8, and \u2028 and \u2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// hashCanonical is the sha256 of the canonical plan JSON, streamed into the hash.
func (p *Plan) hashCanonical() (string, error) {
	h := sha256.New()
	if err := p.writeCanonical(h); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
