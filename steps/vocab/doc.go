// Package vocab is what the step types know about the values of host, target,
// workload and gate blocks: the names each enumerated attribute may take and the
// parsers of structured values, taken from the code that consumes them (simulator
// profiles and fault names from the simulator, corpora and prefix modes from the
// corpus generator, engine presets from the metric scraper, runtimes from the
// target reader, GPU sources from the GPU sampler). The language checks campaign
// values against it (plans.Vocabulary), so no list exists twice.
//
// Out of scope: the types and ranges of attributes, which the language declares
// (plans/types.data.go).
package vocab
