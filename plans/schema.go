package plans

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Vocabulary is what the code that consumes campaign values knows about them: the
// names an enumerated attribute may take (simulator profiles, corpora, fault names,
// engine presets, ...) and the parsers of structured values. Step types hand it to
// the language (VocabularyProvider), so plans holds no second copy of any list.
type Vocabulary struct {
	// Enums maps an enumeration (EnumRuntime, ...) to the names it admits.
	Enums map[string][]string
	// Checks maps a value format (CheckFaults, ...) to its consumer's parser, which
	// says why it refuses a known value.
	Checks map[string]func(cty.Value) error
}

// VocabularyProvider is implemented by step types that consume data blocks (a
// block reads its target, workload and gates). Load merges what every registered
// type provides; an enumeration or format nobody provides is not checked.
type VocabularyProvider interface {
	Vocabulary() Vocabulary
}

// The enumerations data blocks use.
const (
	EnumRuntime    = "runtime"           // host and target runtime
	EnumGPUSource  = "GPU source"        // host gpus
	EnumSimProfile = "simulator profile" // target profile
	EnumEngine     = "engine"            // target engine (metric-name preset)
	EnumReasoning  = "reasoning field"   // target reasoning_field
	EnumFault      = "fault"             // the names in a target's faults
	EnumCorpus     = "corpus"            // workload corpus
	EnumPrefixes   = "prefix mode"       // workload prefixes
	EnumAPI        = "API"               // workload api
	// EnumFailureClass is the failure classes a step fails with, the keys
	// on_failure = { CLASS = POLICY } may name. The engine owns them.
	EnumFailureClass = "failure class"
)

// The structured values whose consumers parse them.
const (
	CheckFaults         = "faults"          // a target's faults object
	CheckCacheReset     = "cache_reset"     // "/path" or "POST /path"
	CheckIdentityHeader = "identity_header" // a header name, or ""
	CheckSize           = "size"            // a byte size such as "8GiB"
	CheckDocker         = "docker"          // a Docker Engine URL
	CheckDCGM           = "dcgm_endpoint"   // a dcgm-exporter metrics URL
)

// EnumNames and CheckNames list every enumeration and format the schemas use, so a
// test can prove the step types provide each one.
func EnumNames() []string {
	return []string{EnumAPI, EnumCorpus, EnumEngine, EnumFailureClass, EnumFault, EnumGPUSource, EnumPrefixes, EnumReasoning, EnumRuntime, EnumSimProfile}
}

// CheckNames lists every value format the schemas hand to a consumer's parser.
func CheckNames() []string {
	return []string{CheckCacheReset, CheckDCGM, CheckDocker, CheckFaults, CheckIdentityHeader, CheckSize}
}

// merge adds o's names and checks to v.
func (v *Vocabulary) merge(o Vocabulary) {
	if v.Enums == nil {
		v.Enums = map[string][]string{}
	}
	if v.Checks == nil {
		v.Checks = map[string]func(cty.Value) error{}
	}
	for k, names := range o.Enums {
		v.Enums[k] = names
	}
	for k, f := range o.Checks {
		v.Checks[k] = f
	}
}

func vocabularyOf(types StepTypes) *Vocabulary {
	v := &Vocabulary{}
	for _, name := range types.Names() {
		if p, ok := types[name].(VocabularyProvider); ok {
			v.merge(p.Vocabulary())
		}
	}
	return v
}

// problem is why a value does not fit its attribute. subject, when set, narrows
// the diagnostic to part of the value (one key of an object).
type problem struct {
	summary string
	detail  string
	subject *hcl.Range
}

const (
	summaryType  = "Incorrect attribute value type"
	summaryValue = "Invalid value"
)

func typeProblem(format string, args ...any) *problem {
	return &problem{summary: summaryType, detail: fmt.Sprintf(format, args...)}
}

func valueProblem(format string, args ...any) *problem {
	return &problem{summary: summaryValue, detail: fmt.Sprintf(format, args...)}
}

// valueType is the type of one attribute: check sees a known, non-null, unmarked
// value (and its expression, to point into an object) and says what is wrong.
type valueType interface {
	check(v cty.Value, expr hcl.Expression, voc *Vocabulary) *problem
}

// tString is a string; nonEmpty refuses "", absPath wants an absolute path,
// prefix a leading text, format a consumer's parser.
type tString struct {
	nonEmpty bool
	absPath  bool // and "" means the default
	prefix   string
	format   string
	example  string
}

func (t tString) check(v cty.Value, _ hcl.Expression, voc *Vocabulary) *problem {
	if v.Type() != cty.String {
		return typeProblem("Want a string such as %q, got %s.", t.example, v.Type().FriendlyName())
	}
	s := v.AsString()
	switch {
	case t.nonEmpty && s == "":
		return valueProblem("Must not be empty; for example %q.", t.example)
	case t.absPath && s != "" && !filepath.IsAbs(s):
		return valueProblem("%q must be an absolute path such as %q.", s, t.example)
	case t.prefix != "" && !strings.HasPrefix(s, t.prefix):
		return valueProblem("%q must start with %q, e.g. %q.", s, t.prefix, t.example)
	}
	if f := voc.Checks[t.format]; t.format != "" && f != nil {
		if err := f(v); err != nil {
			return valueProblem("%s.", strings.TrimSuffix(err.Error(), "."))
		}
	}
	return nil
}

// tNumber is a number, whole when asked, within optional bounds.
type tNumber struct {
	whole          bool
	min, max       float64
	hasMin, hasMax bool
	minOpen        bool // min itself is excluded
}

func atLeast(min float64) tNumber { return tNumber{min: min, hasMin: true} }
func above(min float64) tNumber   { return tNumber{min: min, hasMin: true, minOpen: true} }
func wholeAtLeast(min float64) tNumber {
	return tNumber{whole: true, min: min, hasMin: true}
}

func (t tNumber) describe() string {
	var parts []string
	if t.whole {
		parts = append(parts, "a whole number")
	} else {
		parts = append(parts, "a number")
	}
	switch {
	case t.hasMin && t.hasMax && t.minOpen:
		parts = append(parts, fmt.Sprintf("greater than %g and at most %g", t.min, t.max))
	case t.hasMin && t.hasMax:
		parts = append(parts, fmt.Sprintf("from %g to %g", t.min, t.max))
	case t.hasMin && t.minOpen:
		parts = append(parts, fmt.Sprintf("greater than %g", t.min))
	case t.hasMin:
		parts = append(parts, fmt.Sprintf(">= %g", t.min))
	}
	return strings.Join(parts, " ")
}

func (t tNumber) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if v.Type() != cty.Number {
		return typeProblem("Want %s, got %s%s.", t.describe(), v.Type().FriendlyName(), quoted(v))
	}
	bf := v.AsBigFloat()
	f, _ := bf.Float64()
	if t.whole && !bf.IsInt() {
		return valueProblem("%s is not %s.", bf.Text('g', -1), t.describe())
	}
	if (t.hasMin && (f < t.min || (t.minOpen && f == t.min))) || (t.hasMax && f > t.max) {
		return valueProblem("%s is out of range: want %s.", bf.Text('g', -1), t.describe())
	}
	return nil
}

// quoted shows a string value after its type, so `"2"` reads as the string it is.
func quoted(v cty.Value) string {
	if v.Type() == cty.String {
		return fmt.Sprintf(" %q", v.AsString())
	}
	return ""
}

type tBool struct{}

func (tBool) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if v.Type() != cty.Bool {
		return typeProblem("Want true or false (without quotes), got %s%s.", v.Type().FriendlyName(), quoted(v))
	}
	return nil
}

// tDuration is a duration string of at least min (positive when min is 0 and
// positive is set).
type tDuration struct {
	min      time.Duration
	positive bool
	example  string
}

func (t tDuration) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if v.Type() != cty.String {
		return typeProblem("Want a duration such as %q, got %s.", t.example, v.Type().FriendlyName())
	}
	d, err := ParseDuration(v.AsString())
	if err != nil {
		return &problem{summary: "Invalid duration", detail: err.Error() + "."}
	}
	if t.positive && d <= 0 {
		return &problem{summary: "Invalid duration", detail: fmt.Sprintf("%q: want a positive duration such as %q.", v.AsString(), t.example)}
	}
	if d < t.min {
		return &problem{summary: "Invalid duration", detail: fmt.Sprintf("%q: want at least %s, such as %q.", v.AsString(), t.min, t.example)}
	}
	return nil
}

// tURL is a URL with one of the given schemes and a host.
type tURL struct {
	schemes []string
	example string
}

func (t tURL) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if v.Type() != cty.String {
		return typeProblem("Want a URL such as %q, got %s.", t.example, v.Type().FriendlyName())
	}
	s := v.AsString()
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || !contains(t.schemes, u.Scheme) {
		why := fmt.Sprintf("the scheme must be %s", orList(t.schemes))
		if err == nil && contains(t.schemes, u.Scheme) {
			why = "it names no host"
		}
		return &problem{summary: "Invalid URL", detail: fmt.Sprintf("%q is not a URL such as %q: %s.", s, t.example, why)}
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return &problem{summary: "Invalid URL", detail: fmt.Sprintf("%q is not a URL such as %q: port %s is not between 1 and 65535.", s, t.example, p)}
		}
	}
	return nil
}

// tEnum is one name of an enumeration the vocabulary holds.
type tEnum struct{ enum string }

func (t tEnum) check(v cty.Value, _ hcl.Expression, voc *Vocabulary) *problem {
	names := voc.Enums[t.enum]
	if v.Type() != cty.String {
		return typeProblem("Want %s %s name (%s), got %s.", article(t.enum), t.enum, orList(names), v.Type().FriendlyName())
	}
	if names == nil || contains(names, v.AsString()) {
		return nil
	}
	return valueProblem("%q is not %s %s: want %s.%s", v.AsString(), article(t.enum), t.enum, orList(names), didYouMean(v.AsString(), names))
}

// tStrings is a list of strings, or of lists of strings when nested.
type tStrings struct {
	nested  bool
	example string
}

func (t tStrings) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if !isStringList(v, t.nested) {
		return typeProblem("Want a list such as %s, got %s.", t.example, v.Type().FriendlyName())
	}
	return nil
}

func isStringList(v cty.Value, nested bool) bool {
	ty := v.Type()
	if !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
		return false
	}
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return false
		}
		if nested {
			if !isStringList(e, false) {
				return false
			}
		} else if e.Type() != cty.String {
			return false
		}
	}
	return true
}

// tStringMap is a map (or object) of strings.
type tStringMap struct{ example string }

func (t tStringMap) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	ty := v.Type()
	if !(ty.IsMapType() || ty.IsObjectType()) {
		return typeProblem("Want a map such as %s, got %s.", t.example, ty.FriendlyName())
	}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		if e.IsNull() || e.Type() != cty.String {
			return typeProblem("Want a map of strings such as %s; %q is %s.", t.example, k.AsString(), e.Type().FriendlyName())
		}
	}
	return nil
}

// tHost is a reference to a host block.
type tHost struct{}

func (tHost) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if !v.Type().IsObjectType() || !v.Type().HasAttribute("name") {
		return typeProblem("Want a host block reference such as host.node, got %s.", v.Type().FriendlyName())
	}
	return nil
}

// tGPUs is a Docker device request: "all", a count, or a list of device IDs.
type tGPUs struct{}

func (tGPUs) check(v cty.Value, e hcl.Expression, voc *Vocabulary) *problem {
	switch {
	case v.Type() == cty.String:
		if s := v.AsString(); s != "all" && strings.Trim(s, "0123456789,") != "" {
			return valueProblem("%q: want \"all\", a count or a list of device IDs such as [\"0\", \"1\"].", s)
		}
		return nil
	case v.Type() == cty.Number:
		return wholeAtLeast(1).check(v, e, voc)
	case isStringList(v, false):
		return nil
	}
	return typeProblem("Want \"all\", a count or a list of device IDs such as [\"0\", \"1\"], got %s.", v.Type().FriendlyName())
}

// tFaults is a target's fault object: every key a fault the simulator knows, the
// whole as its parser accepts it.
type tFaults struct{}

func (tFaults) check(v cty.Value, expr hcl.Expression, voc *Vocabulary) *problem {
	ty := v.Type()
	if !(ty.IsMapType() || ty.IsObjectType()) {
		return typeProblem("Want an object such as { http_error_rate = 0.1 }, got %s.", ty.FriendlyName())
	}
	names := voc.Enums[EnumFault]
	if names != nil {
		for it := v.ElementIterator(); it.Next(); {
			k, _ := it.Element()
			if key := k.AsString(); !contains(names, key) {
				p := valueProblem("%q is not a fault: want %s.%s", key, orList(names), didYouMean(key, names))
				p.subject = objectKeyRange(expr, key)
				return p
			}
		}
	}
	if f := voc.Checks[CheckFaults]; f != nil {
		if err := f(v); err != nil {
			return valueProblem("%s.", strings.TrimSuffix(err.Error(), "."))
		}
	}
	return nil
}

// objectItem is key's item in an object constructor, nil when expr is not one or
// has no such key.
func objectItem(expr hcl.Expression, key string) *hclsyntax.ObjectConsItem {
	oc, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return nil
	}
	for i, item := range oc.Items {
		k, d := item.KeyExpr.Value(nil)
		if !d.HasErrors() && k.Type() == cty.String && k.AsString() == key {
			return &oc.Items[i]
		}
	}
	return nil
}

// objectKeyRange is the range of key in an object constructor, nil when expr is
// not one.
func objectKeyRange(expr hcl.Expression, key string) *hcl.Range {
	if item := objectItem(expr, key); item != nil {
		r := item.KeyExpr.Range()
		return &r
	}
	return nil
}

// article is "an" before a vowel, else "a".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiouAEIOU", rune(noun[0])) {
		return "an"
	}
	return "a"
}

func orList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	switch len(q) {
	case 0:
		return "nothing"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// dataAttr is one attribute of a data block.
type dataAttr struct {
	name string
	typ  valueType
}

// dataSchema is what a data block kind accepts: typed attributes, and attributes
// that are refused with the reason (settings that live elsewhere).
type dataSchema struct {
	attrs   []dataAttr
	refused map[string]string
	body    *hcl.BodySchema
	byName  map[string]valueType
}

func newDataSchema(refused map[string]string, attrs ...dataAttr) *dataSchema {
	s := &dataSchema{attrs: attrs, refused: refused, body: &hcl.BodySchema{}, byName: map[string]valueType{}}
	for _, a := range attrs {
		s.body.Attributes = append(s.body.Attributes, hcl.AttributeSchema{Name: a.name})
		s.byName[a.name] = a.typ
	}
	for _, n := range sortedKeys(refused) {
		s.body.Attributes = append(s.body.Attributes, hcl.AttributeSchema{Name: n})
	}
	return s
}

// names are the accepted attribute names, for "Valid arguments" lists.
func (s *dataSchema) names() []string {
	out := make([]string, len(s.attrs))
	for i, a := range s.attrs {
		out[i] = a.name
	}
	return out
}

// DataAttributes lists, per data block kind, the attributes it accepts, sorted.
func DataAttributes() map[string][]string {
	out := map[string][]string{}
	for kind, s := range dataSchemas {
		names := s.names()
		sort.Strings(names)
		out[kind] = names
	}
	return out
}

// checkDataValue checks one attribute value of data block d: nil when it fits or
// is not known yet, else the diagnostic at the value's range.
func checkDataValue(d *DataBlock, name string, v cty.Value, expr hcl.Expression, voc *Vocabulary) *hcl.Diagnostic {
	typ := dataSchemas[d.Kind].byName[name]
	if typ == nil || v == cty.NilVal {
		return nil
	}
	u, pvm := v.UnmarkDeepWithPaths()
	if !u.IsWhollyKnown() || u.IsNull() {
		return nil
	}
	p := typ.check(u, expr, voc)
	if p == nil {
		return nil
	}
	detail := p.detail
	for _, pm := range pvm {
		if _, ok := pm.Marks[Sensitive]; ok {
			// The value is a secret: say what is wrong without quoting it.
			detail = redactQuoted(detail)
			break
		}
	}
	subject := expr.Range()
	if p.subject != nil {
		subject = *p.subject
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  p.summary,
		Detail:   fmt.Sprintf("%s %q, %s: %s", d.Kind, d.Name, name, detail),
		Subject:  &subject,
	}
}

// redactQuoted drops every quoted text from a detail that may quote a secret.
func redactQuoted(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		if r == '"' {
			if !in {
				b.WriteString("(hidden)")
			}
			in = !in
			continue
		}
		if !in {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// checkData checks every attribute of d whose value ctx knows. Validation calls it
// for every data block; an instance calls it, before its step starts, for the data
// blocks it reads, whose values may have become known only once a step ran.
func (e *evaluator) checkData(d *DataBlock, ctx *hcl.EvalContext) hcl.Diagnostics {
	kindObj, ok := ctx.Variables[d.Kind]
	if !ok || !kindObj.Type().IsObjectType() || !kindObj.Type().HasAttribute(d.Name) {
		return nil
	}
	obj := kindObj.GetAttr(d.Name)
	var diags hcl.Diagnostics
	names := sortedAttrNames(d.Attrs)
	// In source order, as the user reads the block.
	sort.SliceStable(names, func(a, b int) bool {
		return d.Attrs[names[a]].Range.Start.Byte < d.Attrs[names[b]].Range.Start.Byte
	})
	for _, name := range names {
		if !obj.Type().IsObjectType() || !obj.Type().HasAttribute(name) {
			continue
		}
		if diag := checkDataValue(d, name, obj.GetAttr(name), d.Attrs[name].Expr, e.vocab); diag != nil {
			diags = append(diags, diag)
		}
	}
	diags = append(diags, checkRuntimeAttrs(d, obj, names)...)
	return append(diags, checkOneWorkload(d)...)
}

// checkOneWorkload refuses a target that names both a Deployment and a
// StatefulSet: it runs as one workload, and rigor would have to guess which.
func checkOneWorkload(d *DataBlock) hcl.Diagnostics {
	dep, set := d.Attrs["deployment"], d.Attrs["statefulset"]
	if d.Kind != blockTarget || dep == nil || set == nil {
		return nil
	}
	return hcl.Diagnostics{errorAt(set.NameRange, "Two workloads for one target",
		"target %q names a deployment (line %d) and a statefulset: a target runs as one workload. Remove one of them.", d.Name, dep.NameRange.Start.Line)}
}

// runtimeAttrs name, per block kind, the host and target attributes only some
// runtimes read, with the runtimes that read them: on Kubernetes the workload's
// pod template is the container's configuration and rigor sets only its image and
// replicas, and the cluster attributes mean nothing to a Docker Engine or the
// simulator. Setting one elsewhere is an error, never a setting silently ignored.
var runtimeAttrs = map[string]map[string]runtimeAttr{
	blockHost: {
		"kubeconfig": {[]string{"kubernetes"}, "it names the cluster of a kubernetes host."},
		"context":    {[]string{"kubernetes"}, "it names the kubeconfig context of a kubernetes host."},
		"namespace":  {[]string{"kubernetes"}, "it names the namespace of a kubernetes host."},
	},
	blockTarget: {
		"deployment":     {[]string{"kubernetes"}, "it names the Deployment of a kubernetes target; set container instead."},
		"statefulset":    {[]string{"kubernetes"}, "it names the StatefulSet of a kubernetes target; set container instead."},
		"kube_container": {[]string{"kubernetes"}, "it names a container of the workload's pod template."},
		"replicas":       {[]string{"kubernetes"}, "it sets the workload's replicas."},
		"command":        {[]string{"docker", "sim"}, "the workload's pod template sets the container's command; rigor sets only its image and replicas."},
		"env":            {[]string{"docker", "sim"}, "the workload's pod template sets the container's environment."},
		"ports":          {[]string{"docker", "sim"}, "the workload's pod template and Services publish its ports."},
		"mounts":         {[]string{"docker", "sim"}, "the workload's pod template sets its volumes."},
		"shm_size":       {[]string{"docker", "sim"}, "the workload's pod template sets its volumes."},
		"memory":         {[]string{"docker", "sim"}, "the workload's pod template sets its resources."},
		"cpus":           {[]string{"docker", "sim"}, "the workload's pod template sets its resources."},
		"labels":         {[]string{"docker", "sim"}, "the workload's metadata sets its labels."},
		"gpus":           {[]string{"docker", "sim"}, "the workload's pod template requests its GPUs (nvidia.com/gpu)."},
	},
}

type runtimeAttr struct {
	runtimes []string // the runtimes that read the attribute
	why      string
}

// checkRuntimeAttrs refuses a host or target attribute that its runtime does not
// read. A target's runtime is its own runtime attribute, else its host's, else sim.
func checkRuntimeAttrs(d *DataBlock, obj cty.Value, names []string) hcl.Diagnostics {
	attrs := runtimeAttrs[d.Kind]
	if attrs == nil {
		return nil
	}
	runtime := knownString(obj, "runtime")
	if runtime == "" && d.Kind == blockTarget && obj.Type().IsObjectType() && obj.Type().HasAttribute("host") {
		if h := obj.GetAttr("host"); h.IsKnown() && !h.IsNull() && h.Type().IsObjectType() {
			runtime = knownString(h, "runtime")
		}
	}
	if runtime == "" {
		runtime = "sim"
	}
	var diags hcl.Diagnostics
	for _, name := range names {
		ra, ok := attrs[name]
		if !ok || slices.Contains(ra.runtimes, runtime) {
			continue
		}
		diags = append(diags, errorAt(d.Attrs[name].NameRange, "Argument not read by this runtime",
			"%s %q runs on runtime %q, which does not read %s: %s Remove it.", d.Kind, d.Name, runtime, name, ra.why))
	}
	return diags
}

// knownString is obj's string attribute name, or "" when absent or not known yet.
func knownString(obj cty.Value, name string) string {
	if !obj.IsKnown() || obj.IsNull() || !obj.Type().IsObjectType() || !obj.Type().HasAttribute(name) {
		return ""
	}
	v, _ := obj.GetAttr(name).Unmark()
	if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
		return ""
	}
	return v.AsString()
}

// dataClosure lists the data blocks entity reads, directly or through other data
// blocks (a target's host), in a stable order.
func (e *evaluator) dataClosure(entity string) []*DataBlock {
	seen := map[string]bool{}
	var out []*DataBlock
	var visit func(id string)
	visit = func(id string) {
		for _, r := range e.refs[id] {
			d, ok := e.entities[r.Entity].(*DataBlock)
			if !ok || seen[d.ID()] {
				continue
			}
			seen[d.ID()] = true
			out = append(out, d)
			visit(d.ID())
		}
	}
	visit(entity)
	sort.Slice(out, func(a, b int) bool { return out[a].ID() < out[b].ID() })
	return out
}

// Step types range-check their own attributes with these, wrapped around an
// attribute spec in an hcldec.ValidateSpec: the same checks as data blocks, run
// whenever the step's body is decoded, so a value that is a step's output is
// checked once known, before the step starts. Unknown and null values pass.

// WholeAtLeast refuses a number that is not whole or is below min.
func WholeAtLeast(name string, min int) func(cty.Value) hcl.Diagnostics {
	return specCheck(name, wholeAtLeast(float64(min)))
}

// WholeBetween refuses a number that is not a whole number from min to max.
func WholeBetween(name string, min, max int) func(cty.Value) hcl.Diagnostics {
	return specCheck(name, tNumber{whole: true, min: float64(min), hasMin: true, max: float64(max), hasMax: true})
}

// Above refuses a number that is not greater than min.
func Above(name string, min float64) func(cty.Value) hcl.Diagnostics {
	return specCheck(name, above(min))
}

// PositiveDuration refuses a duration string that does not parse or is below min
// (or not positive when min is 0); example is shown in the diagnostic.
func PositiveDuration(name string, min time.Duration, example string) func(cty.Value) hcl.Diagnostics {
	return specCheck(name, tDuration{min: min, positive: true, example: example})
}

func specCheck(name string, t valueType) func(cty.Value) hcl.Diagnostics {
	return func(v cty.Value) hcl.Diagnostics {
		u, _ := v.UnmarkDeep()
		if !u.IsWhollyKnown() || u.IsNull() {
			return nil
		}
		if p := t.check(u, nil, nil); p != nil {
			return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: p.summary, Detail: name + ": " + p.detail}}
		}
		return nil
	}
}

// OneOf refuses a string that is not one of names, with the closest name as a
// suggestion. Step types pass their own vocabulary (loadgen's modes, the engine's
// failure classes), so the language holds no second copy of it.
func OneOf(name string, names []string) func(cty.Value) hcl.Diagnostics {
	return specCheck(name, tOneOf{names})
}

// tOneOf is one of a fixed list of names a step type hands over.
type tOneOf struct{ names []string }

func (t tOneOf) check(v cty.Value, _ hcl.Expression, _ *Vocabulary) *problem {
	if v.Type() != cty.String {
		return typeProblem("Want %s, got %s.", orList(t.names), v.Type().FriendlyName())
	}
	if contains(t.names, v.AsString()) {
		return nil
	}
	return valueProblem("%q is not one of %s.%s", v.AsString(), orList(t.names), didYouMean(v.AsString(), t.names))
}
