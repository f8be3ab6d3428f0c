package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/agext/levenshtein"
	"github.com/hashicorp/hcl/v2"
)

// didYouMean returns a " Did you mean "x"?" suffix when a candidate is close.
func didYouMean(given string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		d := levenshtein.Distance(given, c, nil)
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" && bestDist < 3 {
		return fmt.Sprintf(" Did you mean %q?", best)
	}
	return ""
}

// listValid appends the valid argument names to HCL's own "Unsupported argument"
// diagnostics, so the user sees what the block does accept.
func listValid(diags hcl.Diagnostics, what string, valid []string) hcl.Diagnostics {
	sorted := append([]string(nil), valid...)
	sort.Strings(sorted)
	for _, d := range diags {
		if d.Summary == "Unsupported argument" || d.Summary == "Unsupported block type" {
			d.Detail = strings.TrimSpace(d.Detail) + fmt.Sprintf(" Valid arguments for %s: %s.", what, strings.Join(sorted, ", "))
		}
	}
	return diags
}

func schemaNames(s *hcl.BodySchema) []string {
	var out []string
	for _, a := range s.Attributes {
		out = append(out, a.Name)
	}
	for _, b := range s.Blocks {
		out = append(out, b.Type)
	}
	return out
}

func errorAt(rng hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  rng.Ptr(),
	}
}

// distinctDiags collects diagnostics, each once: the instances of one step or matrix
// share its expressions, so one mistake would otherwise be reported per instance.
type distinctDiags struct {
	diags hcl.Diagnostics
	seen  map[string]bool
}

func (u *distinctDiags) add(ds ...*hcl.Diagnostic) {
	if u.seen == nil {
		u.seen = map[string]bool{}
	}
	for _, d := range ds {
		key := d.Summary + "\x00" + d.Detail
		if d.Subject != nil {
			key += d.Subject.String()
		}
		if !u.seen[key] {
			u.seen[key] = true
			u.diags = append(u.diags, d)
		}
	}
}
