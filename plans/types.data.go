package plans

import (
	"github.com/hashicorp/hcl/v2"
)

// DataBlock is a host, target, workload or gate: a named object of attributes that
// steps refer to. Its value is an object of its attributes plus "name".
type DataBlock struct {
	Kind      string // host, target, workload or gate
	Name      string
	Attrs     hcl.Attributes
	DeclRange hcl.Range
	SrcRange  hcl.Range // the whole block, for the source digest
}

// ID is how references name the block, e.g. "target.incumbent".
func (d *DataBlock) ID() string { return d.Kind + "." + d.Name }

// dataSchemas fix the attributes each data block accepts, so a typo is an error at
// load time rather than a silently ignored setting at 2 a.m.
var dataSchemas = map[string]*hcl.BodySchema{
	blockHost: attrSchema(
		"docker",        // Docker Engine URL: unix://, tcp://, ssh://; empty means DOCKER_HOST
		"gpus",          // "nvml", "dcgm" or "sim"
		"dcgm_endpoint", // gpus = "dcgm": the node's dcgm-exporter metrics URL
		"runtime",       // "docker" or "sim"
		"sim_gpus", "sim_power_limit_watts",
		"gpu_interval",                                // GPU sampling interval during a block (default "1s")
		"sim_power_drift_at", "sim_power_drift_watts", // sim: every limit becomes drift_watts this long after the GPUs first appear
		"sim_dir", // sim runtime: absolute directory of its container state (default: the user's runtime or cache dir)
	),
	blockTarget: attrSchema(
		"host", "runtime", "container", "image", "endpoint", "metrics", "model",
		"profile", "listen", "api_key", "time_scale", "seed", "faults", "reasoning_field",
		"health_path", "health_timeout", "command", "env", "ports", "mounts", "shm_size", "gpus",
		"running_metric", "waiting_metric", "preflight", "protected_files",
		"memory", "cpus", "labels", // docker runtime: container limits and labels
		"identity_header", // response header naming the incarnation that answered; "" disables
		// The serving engine ("vllm" by default, or "sglang") picks the native metric
		// names' preset; each *_metric attribute overrides one name. cache_reset is
		// the path POSTed to empty the prefix cache, e.g. "/reset_prefix_cache".
		"engine", "cache_reset",
		"kv_usage_metric", "prefix_cache_queries_metric", "prefix_cache_hits_metric",
		"prompt_tokens_metric", "generation_tokens_metric", "preemptions_metric",
		"request_success_metric", "finished_reason_label", "requests_aborted_metric",
	),
	blockWorkload: attrSchema(
		"corpus", "corpus_seed", "nominal_context", "prefixes", "api",
		"max_tokens", "temperature", "top_p", "seed", "reasoning_effort",
		"fresh_prefixes", // a cold lane: new prompts every repetition
		// The fixed-output fixture (seed 000): min_tokens and ignore_eos are sent as
		// vLLM and SGLang name them; the assertions check every request's usage
		// (outcome assertion_failed when it differs).
		"min_tokens", "ignore_eos", "assert_prompt_tokens", "assert_completion_tokens",
	),
	blockGate: attrSchema(
		"health", "idle", "identity", "frozen_inputs", "power_limit_watts", "gpu_count",
		"driver", "max_ttft_error",
	),
}

func attrSchema(names ...string) *hcl.BodySchema {
	s := &hcl.BodySchema{}
	for _, n := range names {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: n})
	}
	return s
}

func decodeDataBlock(b *hcl.Block) (*DataBlock, hcl.Diagnostics) {
	schema := dataSchemas[b.Type]
	content, diags := b.Body.Content(schema)
	diags = listValid(diags, b.Type+" blocks", schemaNames(schema))
	if content == nil {
		return nil, diags
	}
	if b.Type == blockTarget {
		if _, ok := content.Attributes["endpoint"]; !ok {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Missing required argument",
				Detail:   `The argument "endpoint" is required: the OpenAI-compatible base URL of the target, e.g. "http://127.0.0.1:8000".`,
				Subject:  b.Body.MissingItemRange().Ptr(),
			})
		}
	}
	return &DataBlock{Kind: b.Type, Name: b.Labels[0], Attrs: content.Attributes, DeclRange: b.DefRange, SrcRange: blockRange(b)}, diags
}
