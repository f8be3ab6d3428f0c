package plans

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
)

// Block type names of the language.
const (
	blockCampaign = "campaign"
	blockVariable = "variable"
	blockHost     = "host"
	blockTarget   = "target"
	blockWorkload = "workload"
	blockGate     = "gate"
	blockStep     = "step"
	blockMatrix   = "matrix"
)

var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockCampaign, LabelNames: []string{"name"}},
		{Type: blockVariable, LabelNames: []string{"name"}},
		{Type: blockHost, LabelNames: []string{"name"}},
		{Type: blockTarget, LabelNames: []string{"name"}},
		{Type: blockWorkload, LabelNames: []string{"name"}},
		{Type: blockGate, LabelNames: []string{"name"}},
		{Type: blockStep, LabelNames: []string{"type", "name"}},
		{Type: blockMatrix, LabelNames: []string{"name"}},
		{Type: blockDecision, LabelNames: []string{"name"}},
		{Type: blockLocals},
	},
}

// Options are the inputs to loading that do not come from the campaign files.
type Options struct {
	// StepTypes is the registry of step types; a step of an unregistered type is a
	// diagnostic listing the registered ones.
	StepTypes StepTypes
	// Vars are --var NAME=VALUE assignments, in command-line order.
	Vars []string
	// VarFiles are --var-file paths, in command-line order.
	VarFiles []string
	// Env is the environment consulted for RIGOR_VAR_<name>; nil means os.Environ.
	Env []string
}

// SourceFile is one campaign file as it was read, kept so the frozen plan can store
// the exact bytes.
type SourceFile struct {
	Name  string
	Bytes []byte
}

// Plan is a loaded, evaluated and expanded campaign.
type Plan struct {
	Campaign  Campaign
	Variables []*Variable
	Locals    []*Local     // local values, in declaration order
	Data      []*DataBlock // hosts, targets, workloads and gates in declaration order
	Steps     []*StepBlock
	Matrices  []*Matrix
	Decision  *Decision // the pre-registered decision rule, if any
	// Instances are the expanded step instances in run order: a topological order
	// of the dependency graph with declaration order as the tie-break.
	Instances []*Instance
	BaseDir   string
	Sources   []SourceFile

	parser *hclparse.Parser
	types  StepTypes
	ev     *evaluator
	byAddr map[string]*Instance
}

// Files returns the parsed files by name, for rendering diagnostics with snippets.
func (p *Plan) Files() map[string]*hcl.File {
	if p == nil || p.parser == nil {
		return nil
	}
	return p.parser.Files()
}

// Instance returns the instance with the given address.
func (p *Plan) Instance(addr string) (*Instance, bool) {
	i, ok := p.byAddr[addr]
	return i, ok
}

// Load parses a campaign file, or every *.hcl file in a directory, and returns the
// evaluated, expanded plan. The parser is returned even on failure so the caller can
// render the diagnostics with source snippets.
func Load(path string, opts Options) (*Plan, *hclparse.Parser, hcl.Diagnostics) {
	parser := hclparse.NewParser()
	files, baseDir, diags := sourceFiles(path)
	if diags.HasErrors() {
		return nil, parser, diags
	}
	p := &Plan{BaseDir: baseDir, parser: parser, byAddr: map[string]*Instance{}}
	var bodies []*hcl.File
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read campaign file",
				Detail:   fmt.Sprintf("Reading %s failed: %s.", name, err),
			})
			continue
		}
		p.Sources = append(p.Sources, SourceFile{Name: filepath.Base(name), Bytes: src})
		f, fdiags := parseHCL(parser, src, name)
		diags = append(diags, fdiags...)
		if f != nil {
			bodies = append(bodies, f)
		}
	}
	if diags.HasErrors() {
		return nil, parser, diags
	}
	diags = append(diags, p.decode(bodies, opts)...)
	redactDiagnostics(diags, p.Secrets())
	if diags.HasErrors() {
		return nil, parser, diags
	}
	return p, parser, diags
}

// sourceFiles lists the files of a campaign in a stable order.
func sourceFiles(path string) ([]string, string, hcl.Diagnostics) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Campaign not found",
			Detail:   fmt.Sprintf("Cannot open %s: %s.", path, err),
		}}
	}
	if !st.IsDir() {
		return []string{path}, filepath.Dir(path), nil
	}
	matches, _ := filepath.Glob(filepath.Join(path, "*.hcl"))
	sort.Strings(matches)
	if len(matches) == 0 {
		return nil, "", hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No campaign files",
			Detail:   fmt.Sprintf("The directory %s holds no *.hcl files.", path),
		}}
	}
	return matches, path, nil
}

func (p *Plan) decode(files []*hcl.File, opts Options) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var campaigns []*hcl.Block
	seen := map[string]hcl.Range{}
	seenLocals := map[string]hcl.Range{}
	// Hosts, targets, workloads, gates, steps and matrices are decoded on every core
	// (a campaign of 10 MB has tens of thousands); the rest, and every diagnostic,
	// follow in declaration order.
	type item struct {
		b     *hcl.Block
		order int
		note  hcl.Diagnostics // a file's or a duplicate's diagnostics, kept in place
		data  *DataBlock
		step  *StepBlock
		mat   *Matrix
		diags hcl.Diagnostics
	}
	var items []item
	order := 0
	for _, f := range files {
		content, cdiags := f.Body.Content(rootSchema)
		items = append(items, item{note: cdiags})
		if content == nil {
			continue
		}
		for _, b := range content.Blocks {
			key := b.Type + "." + strings.Join(b.Labels, ".")
			if b.Type == blockStep && len(b.Labels) == 2 {
				key = "step." + b.Labels[0] + "." + b.Labels[1]
			}
			if b.Type == blockMatrix && len(b.Labels) == 1 {
				// Matrix instances are block steps named after the matrix.
				key = "step.block." + b.Labels[0]
			}
			if prev, dup := seen[key]; dup && b.Type != blockCampaign && b.Type != blockLocals {
				items = append(items, item{note: hcl.Diagnostics{{
					Severity: hcl.DiagError,
					Summary:  "Duplicate " + b.Type + " name",
					Detail:   fmt.Sprintf("%s %q was already declared at %s. Names must be unique.", describeBlock(b), b.Labels[len(b.Labels)-1], prev),
					Subject:  b.DefRange.Ptr(),
				}}})
				continue
			}
			seen[key] = b.DefRange
			order++
			items = append(items, item{b: b, order: order})
		}
	}
	parallelFor(len(items), 64, func(i int) {
		it := &items[i]
		if it.b == nil {
			return
		}
		switch it.b.Type {
		case blockHost, blockTarget, blockWorkload, blockGate:
			it.data, it.diags = decodeDataBlock(it.b)
		case blockStep:
			it.step, it.diags = decodeStepBlock(it.b, opts.StepTypes, it.order)
		case blockMatrix:
			it.mat, it.diags = decodeMatrix(it.b, it.order)
		}
	})
	for _, it := range items {
		if it.b == nil {
			diags = append(diags, it.note...)
			continue
		}
		diags = append(diags, it.diags...)
		switch b := it.b; b.Type {
		case blockCampaign:
			campaigns = append(campaigns, b)
		case blockVariable:
			v, vd := decodeVariable(b)
			diags = append(diags, vd...)
			if v != nil {
				p.Variables = append(p.Variables, v)
			}
		case blockHost, blockTarget, blockWorkload, blockGate:
			if it.data != nil {
				p.Data = append(p.Data, it.data)
			}
		case blockStep:
			if it.step != nil {
				p.Steps = append(p.Steps, it.step)
			}
		case blockDecision:
			diags = append(diags, p.addDecision(b)...)
		case blockLocals:
			diags = append(diags, p.addLocals(b, seenLocals)...)
		case blockMatrix:
			if it.mat != nil {
				p.Matrices = append(p.Matrices, it.mat)
			}
		}
	}
	switch {
	case len(campaigns) == 0 && len(files) > 0:
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Missing campaign block",
			Detail:   `A campaign needs exactly one block such as: campaign "name" { outage { budget = "90m" reserve = "20m" } }.`,
			Subject:  files[0].Body.MissingItemRange().Ptr(),
		})
	case len(campaigns) > 1:
		for _, b := range campaigns[1:] {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate campaign block",
				Detail:   fmt.Sprintf("Only one campaign block is allowed; the first is at %s.", campaigns[0].DefRange),
				Subject:  b.DefRange.Ptr(),
			})
		}
	}
	if len(campaigns) > 0 {
		c, cd := decodeCampaign(campaigns[0])
		diags = append(diags, cd...)
		p.Campaign = c
	}
	// Keep going after block-level errors so that one run reports reference
	// problems too; only expansion needs a clean slate.
	diags = append(diags, p.assignVariables(opts)...)
	ev, ed := newEvaluator(p, opts.StepTypes)
	diags = append(diags, ed...)
	if ev != nil && !ed.HasErrors() {
		// Values are checked even after a block-level error elsewhere, so one run
		// reports a mistyped attribute name and a mistyped value together.
		p.ev = ev
		diags = append(diags, p.checkDataValues()...)
	}
	if diags.HasErrors() {
		return diags
	}
	p.types = opts.StepTypes
	diags = append(diags, p.expand(opts.StepTypes)...)
	if diags.HasErrors() {
		return diags
	}
	diags = append(diags, p.checkDecision()...)
	diags = append(diags, p.checkConditions()...)
	diags = append(diags, p.checkDataReferences()...)
	if diags.HasErrors() {
		return diags
	}
	diags = append(diags, p.checkSensitive(opts.StepTypes)...)
	return append(diags, p.validateOutage()...)
}

func describeBlock(b *hcl.Block) string {
	switch b.Type {
	case blockStep:
		return "The step"
	default:
		return "The " + b.Type
	}
}
