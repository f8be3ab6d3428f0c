package block

import (
	"fmt"
	"strconv"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

var _ engine.PinnedInputs = Step{}

// corpusInfo is the "corpus" section of result.json: what the block sent, by identity
// and by content.
type corpusInfo struct {
	// Key names the corpus as the engine pins it: "corpus <workload> s<seed> <cell>
	// <lane>" (plus " r<repetition>" in a cold lane).
	Key      string    `json:"key"`
	Workload string    `json:"workload"` // workload.NAME
	ID       corpus.ID `json:"id"`
	Requests int       `json:"requests"`
	// SHA256 is corpus.Digest over the prompts the block rendered and sent.
	SHA256 string `json:"sha256"`
	// PinnedSHA256 is the digest the engine first pinned under Key, when it pinned
	// one; the engine refuses to start a block whose digest differs.
	PinnedSHA256 string `json:"pinned_sha256,omitempty"`
	// RequestIDPrefix is what every request ID of the block starts with:
	// <campaign>/<step>/<cell>/<rep>, and /a<attempt> on a re-attempt.
	RequestIDPrefix string `json:"request_id_prefix"`
}

// workloadOf reads the corpus setting and sampling of a block's workload; the block's
// own corpus_seed, when set, replaces the workload's (a matrix sets it per cell).
func workloadOf(cfg cty.Value) (loadgen.Workload, string, error) {
	w := attrOf(cfg, "workload")
	if w.IsNull() || !w.Type().IsObjectType() {
		return loadgen.Workload{}, "", fmt.Errorf("workload must be a workload block reference such as workload.capacity")
	}
	wl := loadgen.Workload{
		Corpus: target.Str(w, "corpus"), CorpusSeed: int64(target.Num(w, "corpus_seed", 0)),
		NominalContext: target.Int(w, "nominal_context", 1024), Prefixes: target.Str(w, "prefixes"),
		Fresh: target.Bool(w, "fresh_prefixes"),
	}
	if s := attrOf(cfg, "corpus_seed"); !s.IsNull() && s.IsKnown() && s.Type() == cty.Number {
		f, _ := s.AsBigFloat().Int64()
		wl.CorpusSeed = f
	}
	if wl.Corpus == "" {
		wl.Corpus = corpus.KindSummary
	}
	if wl.Prefixes == "" {
		wl.Prefixes = corpus.PrefixUnique
	}
	if v := target.Int(w, "max_tokens", -1); v >= 0 {
		wl.MaxTokens = &v
	}
	if v := target.Num(w, "temperature", -1); v >= 0 {
		wl.Temperature = &v
	}
	if v := target.Num(w, "top_p", -1); v >= 0 {
		wl.TopP = &v
	}
	if v := target.Int(w, "seed", -1); v >= 0 {
		s := int64(v)
		wl.Seed = &s
	}
	if v := target.Str(w, "reasoning_effort"); v != "" {
		wl.ReasoningEffort = &v
	}
	name := target.Str(w, "name")
	if name == "" {
		name = "inline"
	}
	return wl, "workload." + name, nil
}

// laneOf is the corpus lane of a block: pilots render their own corpus, disjoint
// from every measured one; every other phase shares its cell's main corpus.
func laneOf(cfg cty.Value) string {
	if target.Str(cfg, "phase") == "pilot" {
		return corpus.LanePilot
	}
	return corpus.LaneMain
}

// corpusPlan is the corpus a block's configuration names: the loadgen settings that
// render it, and its key. The key holds the corpus seed: two matrices that give one
// workload's cell different seeds send two corpora, and neither is held to the
// other's digest.
func corpusPlan(cfg cty.Value) (loadgen.Config, string, error) {
	for _, name := range []string{"concurrency", "requests", "workload", "corpus_seed", "repetition", "phase"} {
		if v := attrOf(cfg, name); !v.IsWhollyKnown() {
			return loadgen.Config{}, "", fmt.Errorf("%s is not known yet", name)
		}
	}
	wl, wname, err := workloadOf(cfg)
	if err != nil {
		return loadgen.Config{}, "", err
	}
	lc := loadgen.Config{
		Workload: wl, Concurrency: target.Int(cfg, "concurrency", 1), Requests: target.Int(cfg, "requests", 0),
		Repetition: target.Int(cfg, "repetition", 0), Lane: laneOf(cfg),
	}
	id := lc.CorpusID()
	key := fmt.Sprintf("corpus %s s%d %s %s", wname, id.Seed, id.Cell, id.Lane)
	if wl.Fresh {
		key += " r" + strconv.Itoa(lc.Repetition)
	}
	return lc, key, nil
}

// PinnedInputs reports the digest of the corpus the block will send, under its key,
// so the engine pins the first digest seen for a cell and refuses a later block of
// the cell that would send other prompts: every arm of a cell sends the same work.
// It also reports the target's protected_files (as deploy and identity do), so a
// file edited between two blocks stops the second before any request: the engine
// re-checks them before every block, not only at deploy, identity and restore.
// Workloads name no files.
func (Step) PinnedInputs(config cty.Value, baseDir string) (map[string]string, error) {
	lc, key, err := corpusPlan(config)
	if err != nil {
		return nil, fmt.Errorf("block corpus: %w", err)
	}
	sum, err := corpus.Digest(lc.CorpusID(), lc.Requests)
	if err != nil {
		return nil, fmt.Errorf("block corpus: %w", err)
	}
	out, err := target.Pinned(config, baseDir)
	if err != nil {
		return nil, err
	}
	out[key] = sum
	return out, nil
}

// requestIDPrefix makes request IDs <campaign>/<step>/<cell>/<rep>/<index>: the same
// request of the same repetition has the same ID on every run, so server logs line up
// with records. A re-attempt of a block (after an interruption, where the plan allows
// one) sends new IDs with /a<attempt> before the index: a request is never sent twice
// under one ID.
func requestIDPrefix(sc *engine.StepContext, concurrency, rep int) string {
	inst := sc.Instance
	cell := corpus.Cell(concurrency)
	switch {
	case inst.Cell != "":
		cell = inst.Cell
	case inst.Keyed:
		cell = inst.Key
	}
	repLabel := "r" + strconv.Itoa(rep)
	if target.Str(sc.Config, "phase") == "priming" || inst.Meta.Phase == "priming" {
		repLabel = "prime"
	}
	id := fmt.Sprintf("%s/%s.%s/%s/%s", sc.Campaign, inst.Type, inst.Name, cell, repLabel)
	if sc.Attempt > 1 {
		id += "/a" + strconv.Itoa(sc.Attempt)
	}
	return id
}

// attrOf reads an attribute of a configuration object, null when it has none.
func attrOf(cfg cty.Value, name string) cty.Value {
	if cfg.IsNull() || !cfg.IsKnown() || !cfg.Type().IsObjectType() || !cfg.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	return cfg.GetAttr(name)
}
