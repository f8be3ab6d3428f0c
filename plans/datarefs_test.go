package plans_test

import (
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

// TestDataReferencesByValue: a block reached through a local or for_each (a secret
// api_key and all) is the block itself, so the kind check accepts it; an object
// built from a block is not one, and is refused.
func TestDataReferencesByValue(t *testing.T) {
	src := `
variable "key" {
  sensitive = true
  default   = "s3cret"
}
campaign "c" {}
target "a" {
  endpoint = "http://127.0.0.1:8000"
  api_key  = var.key
}
target "b" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}
gate "idle" {
  idle = true
}
locals {
  gates = [gate.idle]
}
step "deploy" "each" {
  for_each = { a = target.a, b = target.b }
  target   = each.value
}
step "block" "b" {
  target      = target.a
  workload    = workload.w
  gates       = local.gates
  concurrency = 1
  requests    = 8
}
`
	mustLoad(t, writeCampaign(t, src), plans.Options{})
	bad := strings.Replace(src, "target   = each.value", `target   = merge(each.value, { endpoint = "http://127.0.0.1:9" })`, 1)
	_, diags := load(t, writeCampaign(t, bad), plans.Options{})
	errs := errorsOf(diags)
	if len(errs) == 0 || errs[0].Summary != "Incorrect attribute value type" ||
		!strings.Contains(errs[0].Detail, "this object is not one of the campaign's target blocks") {
		t.Fatalf("a target rebuilt with merge: got %s", diags.Error())
	}
	if strings.Contains(diags.Error(), "s3cret") {
		t.Errorf("a diagnostic quotes the secret: %s", diags.Error())
	}
}
