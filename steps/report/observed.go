package report

import (
	"fmt"
	"strings"
)

// Observed blocks (issue 12): a block a trace or nsys capture ran during was
// measured under an observer and is not clean data. The evidence is the capture's
// overlap.json (the block it declared with during), or its UTC window (the trace's
// frames, the nsys step's run) intersecting a block attempt's anchors on the same
// container: a capture that overlapped a block by coincidence observed it too.
//
//   - It never enters a verdict or a drift figure (decision.go skips it and names it).
//   - In a cell that also has unobserved blocks with records, it is excluded from the
//     cell's figures, like priming, and listed beside the cell.
//   - In a cell whose every measured block that ran was observed (a trace-on cell of
//     the fixed-output fixture, seed 000: trace-on and trace-off runs stay separate
//     cells), the figures are over the observed blocks and say so: they describe the
//     stack under observation.
//
// Its failed requests count as always: the disposition reads every block.

// RowObserved says which measured blocks of a cell a capture observed and how the
// cell's figures treat them.
type RowObserved struct {
	// Blocks lists each observed measured block with the captures that observed it.
	Blocks []string `json:"blocks"`
	// InFigures is true when no unobserved block of the cell has records, so the
	// cell's figures are over its observed blocks.
	InFigures bool   `json:"in_figures"`
	Note      string `json:"note"`
}

// markObserved decides, per cell, whether its observed blocks leave its figures.
func (ev *evidence) markObserved() {
	for _, c := range ev.cells {
		hasClean := false
		for _, b := range c.Blocks {
			hasClean = hasClean || (b.clean() && len(b.population()) > 0)
		}
		for _, b := range c.Blocks {
			b.excluded = hasClean && b.measured() && len(b.observedBy) > 0
		}
	}
}

// observedLabel is "r2 (block addr) observed by trace.x".
func observedLabel(b *blockRef) string {
	return fmt.Sprintf("%s (%s) observed by %s", blockLabel(b), b.Addr, strings.Join(b.observedBy, ", "))
}

// rowObserved is the cell's statement about its observed blocks; nil when no
// capture observed a measured block of it.
func rowObserved(c *cellRef) *RowObserved {
	o := &RowObserved{Blocks: []string{}}
	excluded := false
	for _, b := range c.Blocks {
		if b.measured() && len(b.observedBy) > 0 {
			o.Blocks = append(o.Blocks, observedLabel(b))
			excluded = excluded || b.excluded
		}
	}
	if len(o.Blocks) == 0 {
		return nil
	}
	list := strings.Join(o.Blocks, "; ")
	if excluded {
		o.Note = fmt.Sprintf("a capture ran during %s: excluded from this cell's figures, which are over its unobserved blocks; an observed block never enters a verdict", list)
		return o
	}
	o.InFigures = true
	o.Note = fmt.Sprintf("every measured block of this cell that ran was observed (%s): its figures describe the stack under observation, not clean data, and never enter a verdict", list)
	return o
}

// observedExcluded counts the measured blocks with records that a capture ran
// during and that their cells' figures leave out (a retried block counts once).
func (ev *evidence) observedExcluded() int {
	n := 0
	for _, b := range ev.blocks {
		if b.excluded && len(b.population()) > 0 {
			n++
		}
	}
	return n
}
