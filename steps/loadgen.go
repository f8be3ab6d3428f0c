package steps

import (
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// The block step's load generator, for one-off runs outside a campaign (`rigor
// bench`, `rigor calibrate`). These are aliases, not copies: a one-off run goes
// through exactly the code path of a block (loadgen.Run) and writes the same
// requests.jsonl and result.json.
type (
	LoadConfig   = loadgen.Config
	LoadWorkload = loadgen.Workload
	LoadResult   = loadgen.Result
	LoadRecord   = loadgen.Record
	LoadOutcome  = loadgen.Outcome
	LoadDist     = loadgen.Dist
	LoadSecret   = loadgen.Secret
	LoadTally    = loadgen.Tally
)

// Load generator entry points and sentinels; see package loadgen.
var (
	RunLoad       = loadgen.Run
	LoadOutcomes  = loadgen.Outcomes
	NewLoadTally  = loadgen.NewTally
	ErrLoadWarmup = loadgen.ErrWarmup
	ErrLoadConfig = loadgen.ErrConfig
	ErrLoadBound  = loadgen.ErrBlockBound
)

// Load modes, APIs, corpus kinds and prefix modes, as the load generator spells them.
const (
	LoadModeClosed     = loadgen.ModeClosed
	LoadModeOpen       = loadgen.ModeOpen
	LoadAPIChat        = loadgen.APIChat
	LoadAPICompletions = loadgen.APICompletions
	PrefixesUnique     = corpus.PrefixUnique
	PrefixesRepeated   = corpus.PrefixRepeated
	DescriptiveBelow   = loadgen.DescriptiveBelow
)

// CorpusKinds lists the corpus generators.
func CorpusKinds() []string { return corpus.Kinds() }
