package plans

import (
	"time"

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

// dataSchemas type every attribute of each data block, so a typo or a wrong value
// is a diagnostic at its range when the file is read, never a setting silently
// ignored at 2 a.m. Enumerations and structured values are checked against the
// vocabulary of the code that consumes them (Vocabulary).
var dataSchemas = map[string]*dataSchema{
	blockHost: newDataSchema(nil,
		dataAttr{"docker", tString{format: CheckDocker, example: "unix:///var/run/docker.sock"}}, // "" means DOCKER_HOST
		dataAttr{"gpus", tEnum{EnumGPUSource}},
		// gpus = "dcgm": the node's dcgm-exporter metrics URL
		dataAttr{"dcgm_endpoint", tString{format: CheckDCGM, example: "http://10.0.0.5:9400/metrics"}},
		dataAttr{"runtime", tEnum{EnumRuntime}},
		dataAttr{"sim_gpus", wholeAtLeast(1)},
		dataAttr{"sim_power_limit_watts", above(0)},
		dataAttr{"gpu_interval", tDuration{min: time.Millisecond, example: "1s"}}, // sampling interval during a block
		// sim: every limit becomes drift_watts this long after the GPUs first appear
		dataAttr{"sim_power_drift_at", tDuration{positive: true, example: "30s"}},
		dataAttr{"sim_power_drift_watts", above(0)},
		// sim runtime: absolute directory of its container state
		dataAttr{"sim_dir", tString{absPath: true, example: "/var/lib/rigor-sim"}},
		// kubernetes runtime: kubeconfig path ("" = KUBECONFIG, ~/.kube/config or
		// in-cluster), its context ("" = current) and the namespace ("" = the
		// context's, else default)
		dataAttr{"kubeconfig", tString{absPath: true, example: "/etc/rigor/kubeconfig"}},
		dataAttr{"context", tString{example: "prod-gpu"}},
		dataAttr{"namespace", tString{nonEmpty: true, example: "serving"}},
	),
	blockTarget: newDataSchema(map[string]string{
		"listen": "A target listens where its endpoint says: the simulator binds the endpoint's host:port. Remove listen and set endpoint.",
	},
		dataAttr{"host", tHost{}},
		dataAttr{"runtime", tEnum{EnumRuntime}},
		dataAttr{"container", tString{nonEmpty: true, example: "glm53-incumbent"}},
		dataAttr{"image", tString{nonEmpty: true, example: "sha256:..."}},
		dataAttr{"endpoint", tURL{schemes: []string{"http", "https"}, example: "http://127.0.0.1:8000"}},
		dataAttr{"metrics", tURL{schemes: []string{"http", "https"}, example: "http://127.0.0.1:8000/metrics"}},
		dataAttr{"model", tString{nonEmpty: true, example: "glm53"}},
		dataAttr{"profile", tEnum{EnumSimProfile}},
		dataAttr{"api_key", tString{}},
		dataAttr{"time_scale", above(0)},
		dataAttr{"seed", wholeAtLeast(0)},
		dataAttr{"faults", tFaults{}},
		dataAttr{"reasoning_field", tEnum{EnumReasoning}},
		dataAttr{"health_path", tString{prefix: "/", example: "/health"}},
		dataAttr{"health_timeout", tDuration{positive: true, example: "60s"}},
		// docker runtime: the container's configuration, limits and labels
		dataAttr{"command", tStrings{example: `["vllm", "serve"]`}},
		dataAttr{"env", tStringMap{example: `{ HF_HOME = "/models" }`}},
		dataAttr{"ports", tStrings{example: `["8000:8000"]`}},
		dataAttr{"mounts", tStrings{example: `["/models:/models:ro"]`}},
		dataAttr{"shm_size", tString{format: CheckSize, example: "16g"}},
		dataAttr{"memory", tString{format: CheckSize, example: "64GiB"}},
		dataAttr{"cpus", above(0)},
		dataAttr{"labels", tStringMap{example: `{ team = "serving" }`}},
		dataAttr{"gpus", tGPUs{}},
		dataAttr{"preflight", tStrings{nested: true, example: `[["sh", "-c", "true"]]`}},
		dataAttr{"protected_files", tStrings{example: `["/etc/flare/config.yaml"]`}},
		// kubernetes runtime: the Deployment (default: container, else the target's
		// name) or the StatefulSet, the pod template container the image goes into
		// (default: the first) and the replicas deploy scales it to (default 1)
		dataAttr{"deployment", tString{nonEmpty: true, example: "glm53"}},
		dataAttr{"statefulset", tString{nonEmpty: true, example: "glm53"}},
		dataAttr{"kube_container", tString{nonEmpty: true, example: "server"}},
		dataAttr{"replicas", wholeAtLeast(1)},
		// response header naming the incarnation that answered; "" disables
		dataAttr{"identity_header", tString{format: CheckIdentityHeader, example: "X-Rigor-Incarnation"}},
		// The serving engine ("vllm" by default, or "sglang") picks the native metric
		// names' preset; each *_metric attribute overrides one name. cache_reset is
		// the path POSTed to empty the prefix cache, e.g. "/reset_prefix_cache".
		dataAttr{"engine", tEnum{EnumEngine}},
		dataAttr{"cache_reset", tString{format: CheckCacheReset, example: "/reset_prefix_cache"}},
		dataAttr{"running_metric", metricName},
		dataAttr{"waiting_metric", metricName},
		dataAttr{"kv_usage_metric", metricName},
		dataAttr{"prefix_cache_queries_metric", metricName},
		dataAttr{"prefix_cache_hits_metric", metricName},
		dataAttr{"prompt_tokens_metric", metricName},
		dataAttr{"generation_tokens_metric", metricName},
		dataAttr{"preemptions_metric", metricName},
		dataAttr{"request_success_metric", metricName},
		dataAttr{"finished_reason_label", tString{nonEmpty: true, example: "finished_reason"}},
		dataAttr{"requests_aborted_metric", metricName},
	),
	blockWorkload: newDataSchema(nil,
		dataAttr{"corpus", tEnum{EnumCorpus}},
		dataAttr{"corpus_seed", wholeAtLeast(0)},
		dataAttr{"nominal_context", wholeAtLeast(1)},
		dataAttr{"prefixes", tEnum{EnumPrefixes}},
		dataAttr{"api", tEnum{EnumAPI}},
		dataAttr{"max_tokens", wholeAtLeast(1)},
		dataAttr{"temperature", tNumber{min: 0, max: 2, hasMin: true, hasMax: true}},
		dataAttr{"top_p", tNumber{min: 0, max: 1, hasMin: true, hasMax: true, minOpen: true}},
		dataAttr{"seed", wholeAtLeast(0)},
		dataAttr{"reasoning_effort", tString{nonEmpty: true, example: "max"}},
		dataAttr{"fresh_prefixes", tBool{}}, // a cold lane: new prompts every repetition
		// The fixed-output fixture (seed 000): min_tokens and ignore_eos are sent as
		// vLLM and SGLang name them; the assertions check every request's usage
		// (outcome assertion_failed when it differs).
		dataAttr{"min_tokens", wholeAtLeast(0)},
		dataAttr{"ignore_eos", tBool{}},
		dataAttr{"assert_prompt_tokens", wholeAtLeast(1)},
		dataAttr{"assert_completion_tokens", wholeAtLeast(1)},
	),
	blockGate: newDataSchema(map[string]string{
		"frozen_inputs":  "Frozen inputs are declared once, for the whole campaign: campaign { frozen = [...] }, checked before every step. A gate does not take them.",
		"max_ttft_error": "max_ttft_error is a setting of a calibrate step (the simulator's fidelity gate), not of a block gate.",
	},
		dataAttr{"health", tBool{}},
		dataAttr{"idle", tBool{}},
		dataAttr{"identity", tBool{}},
		dataAttr{"power_limit_watts", above(0)},
		dataAttr{"gpu_count", wholeAtLeast(1)},
		dataAttr{"driver", tString{nonEmpty: true, example: "580.82.07"}},
	),
}

// metricName is a Prometheus metric name overriding one of the engine preset's.
var metricName = tString{nonEmpty: true, example: "vllm:num_requests_running"}

func decodeDataBlock(b *hcl.Block) (*DataBlock, hcl.Diagnostics) {
	schema := dataSchemas[b.Type]
	content, diags := b.Body.Content(schema.body)
	diags = listValid(diags, b.Type+" blocks", schema.names())
	if content == nil {
		return nil, diags
	}
	for _, name := range sortedKeys(schema.refused) {
		if a, ok := content.Attributes[name]; ok {
			diags = append(diags, errorAt(a.NameRange, "Unsupported argument", "%s blocks do not take %q. %s", b.Type, name, schema.refused[name]))
			delete(content.Attributes, name)
		}
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

// checkDataValues checks every data block value known at plan time. A value that
// waits for a step's outputs is checked by Instance.Evaluate once it is known.
func (p *Plan) checkDataValues() hcl.Diagnostics {
	// Without step outputs: evaluation problems are reported by expansion, which
	// evaluates the same context again.
	ctx, _ := p.ev.context(nil, false)
	// Checking reads only the context, so each block is checked on every core.
	found := make([]hcl.Diagnostics, len(p.Data))
	parallelFor(len(p.Data), 64, func(i int) { found[i] = p.ev.checkData(p.Data[i], ctx) })
	var diags hcl.Diagnostics
	for _, d := range found {
		diags = append(diags, d...)
	}
	return diags
}
