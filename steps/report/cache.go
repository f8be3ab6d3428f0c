package report

import (
	"fmt"
	"slices"
	"strings"
)

// RowCache is what a cell's block attempts recorded of the prefix cache in their
// result.json (steps/block/cache.go): the state the measured blocks expected, how
// many the counters contradicted, where the cell's cache state came from, and every
// attempt that started from another arm's cache. Priming blocks count here, apart:
// an arm's first block is where it inherits another arm's cache.
type RowCache struct {
	// Expected lists the distinct states the measured blocks expected, in run order.
	Expected       []string `json:"expected"`
	MeasuredBlocks int      `json:"measured_blocks"`
	Contradicted   int      `json:"contradicted"`
	// FirstContradiction is the first measured block's words, and its block.
	FirstContradiction      string `json:"first_contradiction,omitempty"`
	FirstContradictionBlock string `json:"first_contradiction_block,omitempty"`
	// Start is the cache state the cell's first block attempt started from: reset,
	// fresh_server, carried_over or unknown; "not recorded" in older evidence.
	Start string `json:"start"`
	// Inherited lists the attempts whose cache was carried over from another arm.
	Inherited []Inheritance `json:"inherited,omitempty"`
	// PrimingContradictions are the priming blocks' contradictions ("block: words").
	PrimingContradictions []string `json:"priming_contradictions,omitempty"`
	// firstInherited is the first attempt's entry of Inherited, when it inherited.
	firstInherited *Inheritance
	// startUnattributed: the first attempt's cache was carried over, but no earlier
	// block that completed on its container accounts for it (traffic from outside
	// any block, or from a block that failed or died before its outputs).
	startUnattributed bool
}

// Inheritance is one block attempt that started from another arm's cache.
type Inheritance struct {
	Block     string `json:"block"`
	Attempt   int    `json:"attempt"`
	FromArm   string `json:"from_arm"` // "" for a block outside any matrix
	FromBlock string `json:"from_block"`
}

// cellCache gathers what a cell's block attempts recorded of the cache; nil when
// none recorded a cache section.
func cellCache(c *cellRef) *RowCache {
	var rc *RowCache
	for _, b := range c.Blocks {
		for _, a := range b.attempts {
			if a.cache == nil {
				continue
			}
			first := rc == nil
			if first {
				rc = &RowCache{Expected: []string{}, Start: "not recorded"}
				if st := a.cache.Start; st != nil {
					rc.Start = st.State
					rc.startUnattributed = st.State == "carried_over" && st.CarriedFrom == nil
				}
			}
			if st := a.cache.Start; st != nil && st.InheritedFromOtherArm {
				in := Inheritance{Block: b.Addr, Attempt: a.N}
				if st.CarriedFrom != nil {
					in.FromArm, in.FromBlock = st.CarriedFrom.Arm, st.CarriedFrom.Addr
				}
				rc.Inherited = append(rc.Inherited, in)
				if first {
					rc.firstInherited = &rc.Inherited[0]
				}
			}
			if !b.measured() {
				if a.cache.Contradiction != nil {
					rc.PrimingContradictions = append(rc.PrimingContradictions, b.Addr+": "+*a.cache.Contradiction)
				}
				continue
			}
			rc.MeasuredBlocks++
			if a.cache.Expected != "" && !slices.Contains(rc.Expected, a.cache.Expected) {
				rc.Expected = append(rc.Expected, a.cache.Expected)
			}
			if a.cache.Contradiction != nil {
				rc.Contradicted++
				if rc.FirstContradiction == "" {
					rc.FirstContradiction, rc.FirstContradictionBlock = *a.cache.Contradiction, b.Addr
				}
			}
		}
	}
	return rc
}

func (c *RowCache) expectedText() string {
	if c == nil || len(c.Expected) == 0 {
		return "not recorded"
	}
	return strings.Join(c.Expected, ", ")
}

func (c *RowCache) contradictedText() string {
	if c == nil || c.MeasuredBlocks == 0 {
		return "—"
	}
	if c.Contradicted == 0 {
		return "none"
	}
	return fmt.Sprintf("%d of %d blocks", c.Contradicted, c.MeasuredBlocks)
}

// inheritedText names the arm (and block) each inheriting attempt's cache came
// from: "arm candidate_1 (block.primary[…]) at priming".
func (in Inheritance) text() string {
	from := "a block outside any matrix"
	if in.FromArm != "" {
		from = "arm " + in.FromArm
	}
	if in.FromBlock != "" {
		from += " (" + in.FromBlock + ")"
	}
	return from
}

// startText is the cell's "Cache at start" column: where its first block attempt
// found the cache (Start), as summary.json says; later attempts that inherited
// another arm's cache are listed under the table.
func (c *RowCache) startText(arm string) string {
	if c == nil {
		return "not recorded"
	}
	if in := c.firstInherited; in != nil {
		return fmt.Sprintf("inherited from %s at %s", in.text(), blockTail(in.Block))
	}
	switch c.Start {
	case "reset":
		return "reset"
	case "fresh_server":
		return "fresh server"
	case "carried_over":
		if c.startUnattributed {
			return "carried over from traffic no completed block on its container accounts for"
		}
		return "carried over from arm " + arm + "'s own blocks"
	case "unknown":
		return "unknown (no reset, no native counters)"
	}
	return c.Start
}

// blockTail is the last element of a matrix block address: "prime" or "r2" of
// block.primary["arm/c4/r2"]; the whole address otherwise.
func blockTail(addr string) string {
	i := strings.LastIndex(addr, "/")
	if i < 0 || !strings.HasSuffix(addr, `"]`) {
		return addr
	}
	return strings.TrimSuffix(addr[i+1:], `"]`)
}
