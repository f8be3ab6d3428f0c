package plans

import (
	"fmt"
	"net/url"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// AttrAgents is the attribute of a block step and a matrix that sends the block's
// requests from `rigor agent` processes (package steps/internal/agent).
const AttrAgents = "agents"

// ParseAgentURL checks one agent address, tcp://HOST:PORT, and returns HOST:PORT.
func ParseAgentURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err == nil && u.Scheme == "tcp" && u.Hostname() != "" && u.Port() != "" && (u.Path == "" || u.Path == "/") &&
		u.RawQuery == "" && u.Fragment == "" && u.User == nil {
		return u.Host, nil
	}
	return "", fmt.Errorf("%q is not an agent address: want tcp://HOST:PORT, what `rigor agent --listen HOST:PORT` serves", s)
}

// checkAgents checks, at plan time, an agents attribute: a list of distinct agent
// addresses, known before anything runs (the plan names its load hosts).
func checkAgents(a *hcl.Attribute, ctx *hcl.EvalContext) hcl.Diagnostics {
	if a == nil {
		return nil
	}
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return diags
	}
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() {
		return append(diags, errorAt(a.Expr.Range(), "Value must be known at plan time", "agents names the hosts that send the load; it must be known before anything runs, not wait for a step."))
	}
	if v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		return append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", `agents must be a list of agent addresses such as ["tcp://10.0.0.2:7070", "tcp://10.0.0.3:7070"].`))
	}
	seen := map[string]bool{}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", `agents must be a list of agent addresses such as ["tcp://10.0.0.2:7070"].`))
		}
		s := e.AsString()
		if _, err := ParseAgentURL(s); err != nil {
			return append(diags, errorAt(a.Expr.Range(), "Invalid agent address", "%s.", err))
		}
		if seen[s] {
			return append(diags, errorAt(a.Expr.Range(), "Duplicate agent", "%s is listed twice; each agent runs one slice of the block.", s))
		}
		seen[s] = true
	}
	if len(seen) == 0 {
		return append(diags, errorAt(a.Expr.Range(), "No agents", "agents is empty; leave it out to send the block from rigor itself."))
	}
	return diags
}

// agentsAttr is the agents attribute of a step body, or nil.
func agentsAttr(body hcl.Body) *hcl.Attribute {
	c, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: AttrAgents}}})
	if c == nil {
		return nil
	}
	return c.Attributes[AttrAgents]
}
