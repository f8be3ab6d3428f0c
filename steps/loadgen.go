package steps

import (
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/dataset"
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

	// Prompt sources and the figures `rigor bench` compares with other clients.
	LoadSource            = loadgen.Source
	LoadSourceInfo        = loadgen.SourceInfo
	LoadCorpusSource      = loadgen.CorpusSource
	LoadOffset            = loadgen.Offset
	LoadFigures           = loadgen.Figures
	LoadFigureOptions     = loadgen.FigureOptions
	LoadStats             = loadgen.Stats
	LoadSLO               = loadgen.SLO
	LoadErrors            = loadgen.ErrorGroup
	RandomDatasetSettings = dataset.RandomSettings
)

// Load generator entry points and sentinels; see package loadgen.
var (
	RunLoad       = loadgen.Run
	LoadOutcomes  = loadgen.Outcomes
	NewLoadTally  = loadgen.NewTally
	ErrLoadWarmup = loadgen.ErrWarmup
	ErrLoadConfig = loadgen.ErrConfig
	ErrLoadBound  = loadgen.ErrBlockBound
	ErrLoadWrite  = loadgen.ErrWrite

	LoadDigest         = loadgen.Digest
	ComputeLoadFigures = loadgen.ComputeFigures
	LoadErrorGroups    = loadgen.ErrorGroups
	LoadSLOMetrics     = loadgen.SLOMetrics
	PromptsDataset     = dataset.Prompts
	ShareGPTDataset    = dataset.ShareGPT
	RandomDataset      = dataset.Random
)

// Load modes, APIs, corpus kinds and prefix modes, as the load generator spells them.
const (
	LoadModeClosed     = loadgen.ModeClosed
	LoadModeOpen       = loadgen.ModeOpen
	LoadAPIChat        = loadgen.APIChat
	LoadAPICompletions = loadgen.APICompletions
	PrefixesUnique     = corpus.PrefixUnique
	PrefixesRepeated   = corpus.PrefixRepeated
	// MaxLoadRequests and MaxLoadConcurrency bound one run (loadgen.MaxRequests).
	MaxLoadRequests    = loadgen.MaxRequests
	MaxLoadConcurrency = loadgen.MaxRunConcurrency
)

// CertifiedFrom is the sample count from which a p-percentile (0 < p < 1) is
// certified rather than descriptive (loadgen.CertifiedFrom).
func CertifiedFrom(p float64) int { return loadgen.CertifiedFrom(p) }

// CorpusKinds lists the corpus generators.
func CorpusKinds() []string { return corpus.Kinds() }
