package plans

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// Claim is what a step holds while it runs, as far as running beside other steps
// goes: its declared uses, and the block it runs during, if it is a capture.
type Claim struct {
	Addr   string
	Uses   []string
	During string
}

// Claim is the instance's claim.
func (i *Instance) Claim() Claim {
	return Claim{Addr: i.Addr, Uses: i.Meta.Uses, During: i.Meta.During}
}

// exclusive: a step that declares no uses runs alone, unless it is a capture,
// which runs during its block by design and holds only the uses it declares.
func (c Claim) exclusive() bool { return len(c.Uses) == 0 && c.During == "" }

// Clash says whether two steps may not run at the same time, and why. It is the
// rule the engine schedules by and plan show states:
//   - a capture never clashes with the block it runs during;
//   - a step without uses (and not a capture) runs alone: it clashes with every step;
//   - steps that share a use clash; steps with disjoint uses do not.
func Clash(a, b Claim) (bool, string) {
	if (a.During != "" && a.During == b.Addr) || (b.During != "" && b.During == a.Addr) {
		return false, "a capture runs during its block"
	}
	for _, c := range []Claim{a, b} {
		if c.exclusive() {
			return true, c.Addr + " declares no uses, so it runs alone"
		}
	}
	for _, x := range a.Uses {
		for _, y := range b.Uses {
			if x == y {
				return true, "both use " + x
			}
		}
	}
	return false, fmt.Sprintf("disjoint uses (%s; %s)", strings.Join(a.Uses, ","), strings.Join(b.Uses, ","))
}

// Overlap is a pair of steps that may run at the same time: no dependency orders
// them and their claims do not clash.
type Overlap struct {
	A, B string
	Why  string
}

// Overlaps lists the pairs of steps that may run at the same time, in run order,
// and how many there are (the list stops at limit). Exclusive steps never overlap;
// nor do steps that share a use, or that a dependency (or an After relation)
// orders, however indirectly.
func (p *Plan) Overlaps(limit int) ([]Overlap, int) {
	// Only steps that are not exclusive can overlap. Pairs of the same uses never
	// do, so the common plan (every block uses "gpu", everything else runs alone)
	// needs no reachability at all.
	var cand []int
	sigs := map[string]bool{}
	for i, inst := range p.Instances {
		c := inst.Claim()
		if !c.exclusive() {
			cand = append(cand, i)
			u := append([]string(nil), c.Uses...)
			sort.Strings(u)
			sigs[strings.Join(u, ",")+"|"+c.During] = true
		}
	}
	if len(sigs) < 2 && !anyDuring(p, cand) {
		return nil, 0
	}
	// Ancestors among the candidates, as bit sets over cand, in run order (which
	// is topological).
	pos := map[string]int{}
	for i, inst := range p.Instances {
		pos[inst.Addr] = i
	}
	candIx := map[int]int{}
	for k, i := range cand {
		candIx[i] = k
	}
	anc := make([]*big.Int, len(p.Instances))
	for i, inst := range p.Instances {
		a := new(big.Int)
		for _, pred := range inst.Predecessors() {
			j, ok := pos[pred]
			if !ok || anc[j] == nil {
				continue
			}
			a.Or(a, anc[j])
			if k, isCand := candIx[j]; isCand {
				a.SetBit(a, k, 1)
			}
		}
		anc[i] = a
	}
	// free: neither orders the other and their claims do not clash.
	free := func(x, y int) bool {
		i, j := cand[x], cand[y]
		if anc[j].Bit(x) == 1 || anc[i].Bit(y) == 1 || anc[i].Bit(x) == 1 || anc[j].Bit(y) == 1 {
			return false
		}
		clash, _ := Clash(p.Instances[i].Claim(), p.Instances[j].Claim())
		return !clash
	}
	// A capture runs only while its block runs: besides its block, it overlaps
	// only what may overlap that block.
	within := func(x, y int) bool {
		d := p.Instances[cand[x]].Meta.During
		if d == "" || d == p.Instances[cand[y]].Addr {
			return true
		}
		bi, ok := pos[d]
		if !ok {
			return false
		}
		bk, isCand := candIx[bi]
		return isCand && bk != y && free(bk, y)
	}
	var out []Overlap
	n := 0
	for x := 0; x < len(cand); x++ {
		for y := x + 1; y < len(cand); y++ {
			if !free(x, y) || !within(x, y) || !within(y, x) {
				continue
			}
			a, b := p.Instances[cand[x]], p.Instances[cand[y]]
			n++
			if len(out) < limit {
				_, why := Clash(a.Claim(), b.Claim())
				out = append(out, Overlap{A: a.Addr, B: b.Addr, Why: why})
			}
		}
	}
	return out, n
}

func anyDuring(p *Plan, cand []int) bool {
	for _, i := range cand {
		if p.Instances[i].Meta.During != "" {
			return true
		}
	}
	return false
}
