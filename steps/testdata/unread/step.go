// Package unread is a step whose schema accepts an argument nothing reads (cell),
// for TestStringUsesSeesAnUnreadArgument.
package unread

import (
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

var spec = hcldec.ObjectSpec{
	"cell": &hcldec.AttrSpec{Name: "cell", Type: cty.String},
	"rate": &hcldec.AttrSpec{Name: "rate", Type: cty.Number},
}

type Step struct{}

func (Step) MatrixArguments() []string { return []string{"cell"} }

func rate(cfg cty.Value) float64 { return target.Float(cfg, "rate", 0) }
