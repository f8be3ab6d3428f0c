package target

import (
	"fmt"
	"net"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// PortTaken is the failure message of a target that cannot serve because another
// process holds its port. It names the target and the address and, from the plan's
// source, where the port comes from: a campaign variable (the endpoint
// "http://127.0.0.1:${var.port}") with how to set it, or the attribute that
// writes it. The plan may be nil (a step run outside an apply); the message then
// names the target and the address only.
//
// A port is part of the frozen plan, so the message says that another port means
// another state directory; a freed port serves the same plan (the restore that the
// next apply retries, or the campaign in a new state directory).
func PortTaken(p *plans.Plan, t Target, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		port = addr
	}
	msg := fmt.Sprintf("target %s cannot serve on %s: port %s is in use by another process", t.Name, addr, port)
	attrs := []string{"endpoint"}
	if t.Runtime == RuntimeDocker {
		attrs = []string{"ports", "endpoint"}
	}
	for _, name := range attrs {
		a := dataAttr(p, "target."+t.Name, name)
		if a == nil {
			continue
		}
		at := fmt.Sprintf("%s:%d", a.Expr.Range().Filename, a.Expr.Range().Start.Line)
		what := name
		if name == "ports" {
			what = "ports list"
		}
		if v := portVariable(p, a.Expr, port); v != "" {
			return msg + fmt.Sprintf(". Its %s takes the port from var.%s (%s): free port %s, or choose a free one with --var %s=PORT (or %s%s=PORT); another port changes the frozen plan, so use it with a new --state directory",
				what, v, at, port, v, plans.EnvPrefix, v)
		}
		if hasPort(attrValue(t, name), port) {
			return msg + fmt.Sprintf(". The port is written in its %s (%s): free port %s, or change it there; another port changes the frozen plan, so use it with a new --state directory",
				what, at, port)
		}
	}
	return msg + fmt.Sprintf(": free port %s, or give the target another one", port)
}

func attrValue(t Target, name string) string {
	if name == "ports" {
		return strings.Join(t.Ports, " ")
	}
	return t.Endpoint
}

// dataAttr is the attribute name of the data block id ("target.incumbent") in the
// plan's source, or nil.
func dataAttr(p *plans.Plan, id, name string) *hcl.Attribute {
	if p == nil {
		return nil
	}
	for _, d := range p.Data {
		if d.ID() == id {
			return d.Attrs[name]
		}
	}
	return nil
}

// portVariable is the variable, among those expr references, whose value is the
// port or an address with it ("18080", 18080, "127.0.0.1:18080"); "" when none
// is. Sensitive variables are never named.
func portVariable(p *plans.Plan, expr hcl.Expression, port string) string {
	for _, tr := range expr.Variables() {
		if tr.RootName() != "var" || len(tr) < 2 {
			continue
		}
		step, ok := tr[1].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		for _, v := range p.Variables {
			if v.Name != step.Name || v.Sensitive || v.Value == cty.NilVal || !v.Value.IsKnown() || v.Value.IsNull() || v.Value.IsMarked() {
				continue
			}
			var s string
			switch v.Value.Type() {
			case cty.Number:
				s = v.Value.AsBigFloat().Text('f', -1)
			case cty.String:
				s = v.Value.AsString()
			default:
				continue
			}
			if s == port || hasPort(s, port) {
				return v.Name
			}
		}
	}
	return ""
}

// hasPort reports whether s holds ":"+port not followed by another digit.
func hasPort(s, port string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], ":"+port)
		if j < 0 {
			return false
		}
		end := i + j + 1 + len(port)
		if end == len(s) || s[end] < '0' || s[end] > '9' {
			return true
		}
		i = end
	}
}
