package plans

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"math/big"
	"strconv"

	"github.com/rigor-bench/rigor/plans/redact"
	"github.com/zclconf/go-cty/cty"
)

// SensitiveText replaces sensitive values in every rendering and hash.
const SensitiveText = redact.Text

// CanonicalValue converts a cty value into plain Go data whose JSON encoding is
// canonical: object keys sorted (encoding/json sorts map keys), numbers in one
// stable format, unknowns as "(known after ...)", sensitive values redacted.
func CanonicalValue(v cty.Value) any {
	if v == cty.NilVal {
		return nil
	}
	v, marks := v.Unmark()
	if _, ok := marks[Sensitive]; ok {
		return SensitiveText
	}
	if !v.IsKnown() {
		return UnknownText(marks)
	}
	if v.IsNull() {
		return nil
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return v.AsString()
	case ty == cty.Bool:
		return v.True()
	case ty == cty.Number:
		return json.Number(canonicalNumber(v.AsBigFloat()))
	case ty.IsListType() || ty.IsTupleType() || ty.IsSetType():
		out := make([]any, 0, v.LengthInt())
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, CanonicalValue(e))
		}
		return out
	case ty.IsMapType() || ty.IsObjectType():
		out := map[string]any{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = CanonicalValue(e)
		}
		return out
	case ty == cty.DynamicPseudoType:
		return UnknownText(marks)
	}
	return nil
}

// canonicalNumber prints integers exactly and other numbers in Go's shortest
// float64 form, so the same value always hashes the same.
func canonicalNumber(f *big.Float) string {
	if f.IsInt() {
		i, _ := f.Int(nil)
		return i.String()
	}
	x, _ := f.Float64()
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.Quote(f.Text('g', -1))
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}

// CanonicalJSON encodes data canonically: sorted keys, no HTML escaping, no
// indentation, one trailing newline.
func CanonicalJSON(data any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SHA256Hex is the hex sha256 of b.
func SHA256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// InstanceJSON is the canonical description of one instance in the plan.
func (i *Instance) canonical() map[string]any {
	meta := map[string]any{
		"always": i.Meta.Always,
		"phase":  i.Meta.Phase,
	}
	if i.Meta.Timeout > 0 {
		meta["timeout_s"] = json.Number(strconv.FormatFloat(i.Meta.Timeout.Seconds(), 'g', -1, 64))
	}
	if len(i.Meta.Uses) > 0 {
		meta["uses"] = i.Meta.Uses
	}
	if i.Meta.OnFailure != "" {
		meta["on_failure"] = i.Meta.OnFailure
	}
	if len(i.Meta.OnFailureByClass) > 0 {
		meta["on_failure"] = i.Meta.OnFailureByClass
	}
	if i.Meta.Outage != "" {
		meta["outage"] = i.Meta.Outage
	}
	if i.Meta.RerunSafe {
		meta["rerun_safe"] = true
	}
	if i.Meta.ConditionText != "" {
		meta["condition"] = i.Meta.ConditionText
	}
	if i.Meta.During != "" {
		meta["during"] = i.Meta.During
	}
	if i.Meta.StartAfter > 0 {
		meta["start_after_s"] = json.Number(strconv.FormatFloat(i.Meta.StartAfter.Seconds(), 'g', -1, 64))
	}
	if i.Meta.StartAfterRequests > 0 {
		meta["start_after_requests"] = i.Meta.StartAfterRequests
	}
	deps := i.DependsOn
	if deps == nil {
		deps = []string{}
	}
	out := map[string]any{
		"addr":       i.Addr,
		"type":       i.Type,
		"depends_on": deps,
		"meta":       meta,
		"config":     CanonicalValue(i.Config()),
		"source":     i.source,
	}
	if i.Cell != "" {
		out["arm"] = i.Arm
		out["cell"] = i.Cell
	}
	if len(i.After) > 0 {
		out["after"] = i.After
	}
	return out
}

// Canonical is the plan as plain data: campaign settings and the instances in run
// order with their evaluated configuration.
func (p *Plan) Canonical() map[string]any {
	insts := make([]any, 0, len(p.Instances))
	for _, i := range p.Instances {
		insts = append(insts, i.canonical())
	}
	return map[string]any{"campaign": p.campaignCanonical(), "instances": insts}
}

// CanonicalJSON is the canonical plan JSON; its sha256 is the plan hash.
func (p *Plan) CanonicalJSON() ([]byte, error) {
	var buf bytes.Buffer
	if err := p.writeCanonical(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Hash is the sha256 of the canonical plan JSON.
func (p *Plan) Hash() (string, error) { return p.hashCanonical() }
