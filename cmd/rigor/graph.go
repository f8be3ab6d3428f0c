package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/rigor-bench/rigor/plans"
	"github.com/spf13/cobra"
)

func newGraphCmd(g *globals) *cobra.Command {
	var a planArgs
	cmd := &cobra.Command{
		Use:   "graph CAMPAIGN",
		Short: "Print the step dependency graph in DOT (pipe to `dot -Tsvg`); dashed edges: starts after, whatever the outcome",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			return writeDOT(g.stdout, p)
		},
	}
	a.bind(cmd)
	return cmd
}

// writeDOT writes the graph in a fixed order (run order for nodes, sorted edges):
// the same plan always gives the same bytes.
func writeDOT(w io.Writer, p *plans.Plan) error {
	if _, err := p.Graph(); err != nil {
		return err
	}
	fmt.Fprintf(w, "digraph %s {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n", strconv.Quote(p.Campaign.Name))
	for n, inst := range p.Instances {
		attrs := ""
		if inst.Meta.Always {
			attrs = ", style=bold, color=darkgreen"
		} else if inst.Meta.Outage != "" {
			attrs = ", color=red"
		}
		fmt.Fprintf(w, "  %s [label=%s%s];\n", strconv.Quote(inst.Addr), strconv.Quote(fmt.Sprintf("%d. %s", n+1, inst.Addr)), attrs)
	}
	// Solid: waits for a usable outcome (depends_on); dashed: starts after, whatever
	// the outcome (a matrix's arm order, a condition's inputs).
	var edges [][3]string
	for _, inst := range p.Instances {
		for _, d := range inst.DependsOn {
			edges = append(edges, [3]string{d, inst.Addr, ""})
		}
		for _, a := range inst.After {
			edges = append(edges, [3]string{a, inst.Addr, " [style=dashed]"})
		}
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i][0] != edges[j][0] {
			return edges[i][0] < edges[j][0]
		}
		if edges[i][1] != edges[j][1] {
			return edges[i][1] < edges[j][1]
		}
		return edges[i][2] < edges[j][2]
	})
	for _, e := range edges {
		fmt.Fprintf(w, "  %s -> %s%s;\n", strconv.Quote(e[0]), strconv.Quote(e[1]), e[2])
	}
	fmt.Fprintln(w, "}")
	return nil
}
