package target_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

const portsHCL = `campaign "ports" {}

variable "port" {
  type    = number
  default = 18080
}

variable "addr" {
  type    = string
  default = "127.0.0.1:18081"
}

variable "secret_port" {
  type      = string
  default   = "18082"
  sensitive = true
}

host "h" {
  runtime = "sim"
  gpus    = "sim"
}

target "by_number" {
  host     = host.h
  endpoint = "http://127.0.0.1:${var.port}"
}

target "by_address" {
  host     = host.h
  endpoint = "http://${var.addr}"
}

target "literal" {
  host     = host.h
  endpoint = "http://127.0.0.1:18083"
}

target "secret" {
  host     = host.h
  endpoint = "http://127.0.0.1:${var.secret_port}"
}

target "longer_port" {
  host     = host.h
  endpoint = "http://127.0.0.1:18080"
}
`

// TestPortTaken: the message names the variable a port comes from, whether the
// variable holds the port or a whole address; a literal port is named where it is
// written; a port that only starts the same digits is not taken for it; without a
// plan the message still names the target and the address.
func TestPortTaken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ports.hcl")
	if err := os.WriteFile(path, []byte(portsHCL), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tail := "; another port changes the frozen plan, so use it with a new --state directory"
	cases := map[string]struct {
		plan *plans.Plan
		t    target.Target
		addr string
		want string
	}{
		"number variable": {p, target.Target{Name: "by_number", Runtime: target.RuntimeSim}, "127.0.0.1:18080",
			"target by_number cannot serve on 127.0.0.1:18080: port 18080 is in use by another process. Its endpoint takes the port from var.port (" + path + ":26): free port 18080, or choose a free one with --var port=PORT (or RIGOR_VAR_port=PORT)" + tail},
		"address variable": {p, target.Target{Name: "by_address", Runtime: target.RuntimeSim}, "127.0.0.1:18081",
			"target by_address cannot serve on 127.0.0.1:18081: port 18081 is in use by another process. Its endpoint takes the port from var.addr (" + path + ":31): free port 18081, or choose a free one with --var addr=PORT (or RIGOR_VAR_addr=PORT)" + tail},
		"literal": {p, target.Target{Name: "literal", Runtime: target.RuntimeSim, Endpoint: "http://127.0.0.1:18083"}, "127.0.0.1:18083",
			"target literal cannot serve on 127.0.0.1:18083: port 18083 is in use by another process. The port is written in its endpoint (" + path + ":36): free port 18083, or change it there" + tail},
		"a longer port is not this one": {p, target.Target{Name: "longer_port", Runtime: target.RuntimeSim, Endpoint: "http://127.0.0.1:18080"}, "127.0.0.1:1808",
			"target longer_port cannot serve on 127.0.0.1:1808: port 1808 is in use by another process: free port 1808, or give the target another one"},
		"a sensitive variable is never named": {p, target.Target{Name: "secret", Runtime: target.RuntimeSim, Endpoint: "http://127.0.0.1:18082"}, "127.0.0.1:18082",
			"target secret cannot serve on 127.0.0.1:18082: port 18082 is in use by another process. The port is written in its endpoint (" + path + ":41): free port 18082, or change it there" + tail},
		"no plan": {nil, target.Target{Name: "by_number", Runtime: target.RuntimeSim}, "127.0.0.1:18080",
			"target by_number cannot serve on 127.0.0.1:18080: port 18080 is in use by another process: free port 18080, or give the target another one"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, target.PortTaken(tc.plan, tc.t, tc.addr)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
