package nsys

import (
	"cmp"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite", pure Go: no cgo in the binary
)

// The analysis of an Nsight Systems SQLite export (`nsys export --type sqlite`), by
// seed 000's rules. It is the report's; it lives here beside the capture so that the
// step's plan-time checks and the report read the mapping through one type.
//
// Tables read (created lazily by nsys: any may be absent, and what is missing is
// said): CUPTI_ACTIVITY_KIND_KERNEL, StringIds, CUPTI_ACTIVITY_KIND_RUNTIME,
// NVTX_EVENTS, TARGET_INFO_GPU, TARGET_INFO_CUDA_DEVICE, ANALYSIS_DETAILS,
// TARGET_INFO_SESSION_START_TIME, DIAGNOSTIC_EVENT, ENUM_DIAGNOSTIC_SEVERITY_LEVEL,
// META_DATA_EXPORT.
//
//   - Kernel time is Σ(end − start) of kernel records. Kernels on different streams
//     and devices overlap, so every sum is labelled as overlapping: it is never a
//     share of a critical path.
//   - Module: the first module, by name, one of whose patterns (RE2) matches the
//     kernel's demangled name (its short name when the demangled one is absent). A
//     kernel no pattern matches is unmapped; the unmapped fraction is unmapped kernel
//     time over all kernel time.
//   - Rank: rank_devices lists the CUDA device of each rank in rank order; without
//     it kernels are shown by device, and no rank is claimed.
//   - Graph: the innermost NVTX range (push/pop or start/end) open on the thread that
//     made the kernel's launch call (CUDA runtime record with the same correlation ID
//     in the same process) when the call was made; otherwise, for a kernel launched
//     from a CUDA graph, "CUDA graph <graphId>"; otherwise no graph mapping.
//   - Capture interval: ANALYSIS_DETAILS startTime/stopTime, placed on UTC by
//     TARGET_INFO_SESSION_START_TIME.utcEpochNs.
//   - Warnings: DIAGNOSTIC_EVENT rows above the informational level (severity > 1),
//     labelled from ENUM_DIAGNOSTIC_SEVERITY_LEVEL when present.

// Module names a source package or component and the kernel-name patterns that
// belong to it.
type Module struct {
	Name     string
	Patterns []*regexp.Regexp
}

// CompileModules compiles a module map (module name -> RE2 patterns). Modules are
// tried in name order.
func CompileModules(m map[string][]string) ([]Module, error) {
	var out []Module
	for _, name := range slices.Sorted(maps.Keys(m)) {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("a module name is empty")
		}
		if len(m[name]) == 0 {
			return nil, fmt.Errorf("module %q has no pattern", name)
		}
		mod := Module{Name: name}
		for _, p := range m[name] {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, fmt.Errorf("module %q: pattern %q: %v", name, p, err)
			}
			mod.Patterns = append(mod.Patterns, re)
		}
		out = append(out, mod)
	}
	return out, nil
}

// Mapping is how kernels are attributed.
type Mapping struct {
	Modules     []Module
	RankDevices []int // CUDA device of rank i; nil: no rank mapping declared
}

// Share is one line of a breakdown. SummedKernelMS is overlapping kernel time.
type Share struct {
	Name           string  `json:"name"`
	Kernels        int     `json:"kernels"`
	SummedKernelMS float64 `json:"summed_kernel_ms"`
	Fraction       float64 `json:"fraction"` // of all summed kernel time
}

// Interval is the capture interval the export records.
type Interval struct {
	StartUTC  string  `json:"start_utc,omitempty"`
	EndUTC    string  `json:"end_utc,omitempty"`
	DurationS float64 `json:"duration_s"`
}

// Analysis is what an export says, attributed by a Mapping.
type Analysis struct {
	ExportVersion string   `json:"export_version,omitempty"`
	Interval      Interval `json:"interval"`
	// KernelSpanS is the last kernel end minus the first kernel start.
	KernelSpanS    float64 `json:"kernel_span_s"`
	Kernels        int     `json:"kernels"`
	SummedKernelMS float64 `json:"summed_kernel_ms"`
	// Modules is sorted by kernel time, largest first; Unmapped is the rest.
	Modules          []Share `json:"modules"`
	Unmapped         Share   `json:"unmapped"`
	UnmappedFraction float64 `json:"unmapped_fraction"`
	// AmbiguousKernels matched patterns of more than one module (counted in the
	// first by name).
	AmbiguousKernels int     `json:"ambiguous_kernels"`
	RankMapped       bool    `json:"rank_mapped"`
	Devices          []Share `json:"devices"`
	Graphs           []Share `json:"graphs"`
	// GraphUnmappedFraction is the kernel time with no graph mapping.
	GraphUnmappedFraction float64  `json:"graph_unmapped_fraction"`
	TopKernels            []Share  `json:"top_kernels"`
	Warnings              []string `json:"warnings"`
	// Notes say what the export lacked (a table or a column) and what that costs.
	Notes []string `json:"notes"`
}

// TopKernelCount is how many kernels Analysis.TopKernels lists.
const TopKernelCount = 10

// NoGraph labels kernel time with no graph mapping.
const NoGraph = "(no graph mapping)"

type nvtxRange struct {
	start, end int64
	text       string
}

// Analyze reads the SQLite export at path.
func Analyze(path string, m Mapping) (*Analysis, error) {
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?mode=ro")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	cols, err := tableColumns(db)
	if err != nil {
		return nil, fmt.Errorf("%s is not a readable SQLite export: %w", path, err)
	}
	has := func(t string) bool { _, ok := cols[t]; return ok }
	a := &Analysis{Modules: []Share{}, Devices: []Share{}, Graphs: []Share{}, TopKernels: []Share{}, Warnings: []string{}, Notes: []string{}}
	if !has("CUPTI_ACTIVITY_KIND_KERNEL") {
		return nil, fmt.Errorf("%s has no CUPTI_ACTIVITY_KIND_KERNEL table: the capture recorded no CUDA kernel (was CUDA traced?)", path)
	}
	if has("META_DATA_EXPORT") {
		_ = db.QueryRow(`SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'`).Scan(&a.ExportVersion)
	}
	strs := map[int64]string{}
	if has("StringIds") {
		if err := each(db, `SELECT id, value FROM StringIds`, func(r *sql.Rows) error {
			var id int64
			var v string
			err := r.Scan(&id, &v)
			strs[id] = v
			return err
		}); err != nil {
			return nil, err
		}
	} else {
		a.Notes = append(a.Notes, "no StringIds table: kernel names are unknown, so no kernel maps to a module")
	}
	if err := a.interval(db, has); err != nil {
		return nil, err
	}

	// NVTX ranges per thread, sorted by start.
	ranges := map[int64][]nvtxRange{}
	runtime := has("CUPTI_ACTIVITY_KIND_RUNTIME")
	switch {
	case !has("NVTX_EVENTS"):
		a.Notes = append(a.Notes, "no NVTX_EVENTS table: graphs are mapped only from CUDA graph IDs")
	case !runtime:
		a.Notes = append(a.Notes, "no CUPTI_ACTIVITY_KIND_RUNTIME table: kernels cannot be tied to the thread that launched them, so NVTX ranges map no graph")
	default:
		if err := each(db, `SELECT start, end, globalTid, text, textId FROM NVTX_EVENTS WHERE eventType IN (59, 60) AND end IS NOT NULL AND globalTid IS NOT NULL`, func(r *sql.Rows) error {
			var start, end, tid int64
			var text sql.NullString
			var textID sql.NullInt64
			if err := r.Scan(&start, &end, &tid, &text, &textID); err != nil {
				return err
			}
			t := text.String
			if !text.Valid && textID.Valid {
				t = strs[textID.Int64]
			}
			ranges[tid] = append(ranges[tid], nvtxRange{start, end, t})
			return nil
		}); err != nil {
			return nil, err
		}
		for _, rs := range ranges {
			sort.SliceStable(rs, func(i, j int) bool { return rs[i].start < rs[j].start })
		}
	}

	kcols := cols["CUPTI_ACTIVITY_KIND_KERNEL"]
	graphCol := "NULL"
	if kcols["graphId"] {
		graphCol = "k.graphId"
	}
	demangled := "NULL"
	if kcols["demangledName"] {
		demangled = "k.demangledName"
	}
	q := `SELECT k.start, k.end, k.deviceId, ` + demangled + `, k.shortName, ` + graphCol + `, NULL, NULL FROM CUPTI_ACTIVITY_KIND_KERNEL k`
	if runtime {
		q = `SELECT k.start, k.end, k.deviceId, ` + demangled + `, k.shortName, ` + graphCol + `, r.globalTid, r.start
			FROM CUPTI_ACTIVITY_KIND_KERNEL k LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r
			ON r.correlationId = k.correlationId AND (r.globalTid >> 24) = (k.globalPid >> 24)`
	}
	rank := map[int]int{}
	for i, d := range m.RankDevices {
		rank[d] = i
	}
	a.RankMapped = m.RankDevices != nil
	byModule, byDevice, byGraph, byKernel := map[string]*Share{}, map[int]*Share{}, map[string]*Share{}, map[string]*Share{}
	var unmapped Share
	add := func(mp map[string]*Share, k string, d int64) {
		s := mp[k]
		if s == nil {
			s = &Share{Name: k}
			mp[k] = s
		}
		s.Kernels++
		s.SummedKernelMS += float64(d)
	}
	var total, first, last int64
	err = each(db, q, func(r *sql.Rows) error {
		var start, end int64
		var device int
		var dname, sname, graphID, tid, callAt sql.NullInt64
		if err := r.Scan(&start, &end, &device, &dname, &sname, &graphID, &tid, &callAt); err != nil {
			return err
		}
		d := end - start
		if a.Kernels == 0 || start < first {
			first = start
		}
		last = max(last, end)
		a.Kernels++
		total += d
		name := strs[sname.Int64]
		if dname.Valid && strs[dname.Int64] != "" {
			name = strs[dname.Int64]
		}
		if name == "" {
			name = fmt.Sprintf("(kernel name id %d)", sname.Int64)
		}
		add(byKernel, name, d)
		mod, matches := "", 0
		for _, mo := range m.Modules {
			for _, re := range mo.Patterns {
				if re.MatchString(name) {
					if mod == "" {
						mod = mo.Name
					}
					matches++
					break
				}
			}
		}
		if matches > 1 {
			a.AmbiguousKernels++
		}
		if mod == "" {
			unmapped.Kernels++
			unmapped.SummedKernelMS += float64(d)
		} else {
			add(byModule, mod, d)
		}
		ds := byDevice[device]
		if ds == nil {
			ds = &Share{}
			byDevice[device] = ds
		}
		ds.Kernels++
		ds.SummedKernelMS += float64(d)
		g := NoGraph
		if tid.Valid && callAt.Valid {
			if t := innermost(ranges[tid.Int64], callAt.Int64); t != "" {
				g = t
			}
		}
		if g == NoGraph && graphID.Valid {
			g = fmt.Sprintf("CUDA graph %d", graphID.Int64)
		}
		add(byGraph, g, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.Kernels > 0 {
		a.KernelSpanS = float64(last-first) / 1e9
	}
	a.SummedKernelMS = float64(total) / 1e6
	frac := func(s *Share) Share {
		x := *s
		if total > 0 {
			x.Fraction = x.SummedKernelMS / float64(total)
		}
		x.SummedKernelMS /= 1e6
		return x
	}
	a.Modules = sorted(byModule, frac)
	a.Unmapped = frac(&unmapped)
	a.Unmapped.Name = "(unmapped)"
	a.UnmappedFraction = a.Unmapped.Fraction
	a.Graphs = sorted(byGraph, frac)
	for _, g := range a.Graphs {
		if g.Name == NoGraph {
			a.GraphUnmappedFraction = g.Fraction
		}
	}
	a.TopKernels = sorted(byKernel, frac)
	if len(a.TopKernels) > TopKernelCount {
		a.TopKernels = a.TopKernels[:TopKernelCount]
	}
	names := gpuNames(db, has)
	for _, dev := range slices.Sorted(maps.Keys(byDevice)) {
		s := frac(byDevice[dev])
		s.Name = fmt.Sprintf("device %d", dev)
		if n := names[dev]; n != "" {
			s.Name += " (" + n + ")"
		}
		if a.RankMapped {
			if r, ok := rank[dev]; ok {
				s.Name = fmt.Sprintf("rank %d: %s", r, s.Name)
			} else {
				s.Name += ": no rank declared for this device"
			}
		}
		a.Devices = append(a.Devices, s)
	}
	if err := a.warnings(db, has); err != nil {
		return nil, err
	}
	return a, nil
}

// innermost is the text of the latest-starting range of rs that contains t.
func innermost(rs []nvtxRange, t int64) string {
	i := sort.Search(len(rs), func(i int) bool { return rs[i].start > t })
	for j := i - 1; j >= 0; j-- {
		if rs[j].end >= t {
			return rs[j].text
		}
	}
	return ""
}

func sorted[K comparable](m map[K]*Share, f func(*Share) Share) []Share {
	out := make([]Share, 0, len(m))
	for _, s := range m {
		out = append(out, f(s))
	}
	slices.SortFunc(out, func(a, b Share) int {
		if c := cmp.Compare(b.SummedKernelMS, a.SummedKernelMS); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func (a *Analysis) interval(db *sql.DB, has func(string) bool) error {
	if !has("ANALYSIS_DETAILS") {
		a.Notes = append(a.Notes, "no ANALYSIS_DETAILS table: the export records no capture interval")
		return nil
	}
	var start, stop sql.NullInt64
	if err := db.QueryRow(`SELECT startTime, stopTime FROM ANALYSIS_DETAILS LIMIT 1`).Scan(&start, &stop); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if !start.Valid || !stop.Valid {
		a.Notes = append(a.Notes, "ANALYSIS_DETAILS has no start and stop time")
		return nil
	}
	a.Interval.DurationS = float64(stop.Int64-start.Int64) / 1e9
	if !has("TARGET_INFO_SESSION_START_TIME") {
		a.Notes = append(a.Notes, "no TARGET_INFO_SESSION_START_TIME table: the capture interval is not placed on UTC")
		return nil
	}
	var epoch sql.NullInt64
	if err := db.QueryRow(`SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1`).Scan(&epoch); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if epoch.Valid {
		a.Interval.StartUTC = time.Unix(0, epoch.Int64+start.Int64).UTC().Format(time.RFC3339Nano)
		a.Interval.EndUTC = time.Unix(0, epoch.Int64+stop.Int64).UTC().Format(time.RFC3339Nano)
	}
	return nil
}

func (a *Analysis) warnings(db *sql.DB, has func(string) bool) error {
	if !has("DIAGNOSTIC_EVENT") {
		return nil
	}
	labels := map[int64]string{}
	if has("ENUM_DIAGNOSTIC_SEVERITY_LEVEL") {
		_ = each(db, `SELECT id, COALESCE(label, name) FROM ENUM_DIAGNOSTIC_SEVERITY_LEVEL`, func(r *sql.Rows) error {
			var id int64
			var l sql.NullString
			err := r.Scan(&id, &l)
			labels[id] = l.String
			return err
		})
	}
	return each(db, `SELECT severity, text FROM DIAGNOSTIC_EVENT WHERE severity > 1 ORDER BY timestamp, rowid`, func(r *sql.Rows) error {
		var sev int64
		var text string
		if err := r.Scan(&sev, &text); err != nil {
			return err
		}
		l := labels[sev]
		if l == "" {
			l = fmt.Sprintf("severity %d", sev)
		}
		a.Warnings = append(a.Warnings, l+": "+text)
		return nil
	})
}

// gpuNames maps CUDA device IDs to GPU names: through TARGET_INFO_CUDA_DEVICE when
// the export has it, else taking TARGET_INFO_GPU ids as device IDs.
func gpuNames(db *sql.DB, has func(string) bool) map[int]string {
	out := map[int]string{}
	if !has("TARGET_INFO_GPU") {
		return out
	}
	q := `SELECT id, name FROM TARGET_INFO_GPU`
	if has("TARGET_INFO_CUDA_DEVICE") {
		q = `SELECT c.cudaId, g.name FROM TARGET_INFO_CUDA_DEVICE c JOIN TARGET_INFO_GPU g ON g.id = c.gpuId`
	}
	_ = each(db, q, func(r *sql.Rows) error {
		var id int
		var name sql.NullString
		if err := r.Scan(&id, &name); err != nil {
			return err
		}
		if _, ok := out[id]; !ok {
			out[id] = name.String
		}
		return nil
	})
	return out
}

// tableColumns lists every table of the database with its columns.
func tableColumns(db *sql.DB) (map[string]map[string]bool, error) {
	var tables []string
	if err := each(db, `SELECT name FROM sqlite_master WHERE type = 'table'`, func(r *sql.Rows) error {
		var n string
		err := r.Scan(&n)
		tables = append(tables, n)
		return err
	}); err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, t := range tables {
		cs := map[string]bool{}
		if err := each(db, `SELECT name FROM pragma_table_info(?)`, func(r *sql.Rows) error {
			var n string
			err := r.Scan(&n)
			cs[n] = true
			return err
		}, t); err != nil {
			return nil, err
		}
		out[t] = cs
	}
	return out, nil
}

func each(db *sql.DB, q string, f func(*sql.Rows) error, args ...any) error {
	rows, err := db.Query(q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := f(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
