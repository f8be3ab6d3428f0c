// Package nsysdb writes SQLite files shaped like `nsys export --type sqlite`
// output where no Nsight Systems runs: the nsys step's simulator path (the kernels a
// rigor-sim server derives from the work it did during the capture, labelled as
// simulated) and tests of the code that reads exports. The tables and columns are those of Nsight Systems 2026.1 (export
// schema 3.24): the same names, the same column order, the same string table
// indirection and the same serialized global IDs (pid << 24 | tid).
//
// Out of scope: anything the analysis does not read (memcpy, OS runtime, GPU
// metrics); a table listed in Fixture.Omit is left out, as nsys leaves out tables it
// had nothing to write to.
package nsysdb

import (
	"database/sql"
	"fmt"
	"slices"
	"time"

	_ "modernc.org/sqlite"
)

// Kernel is one CUDA kernel execution and the runtime call that launched it.
type Kernel struct {
	Start    int64  `json:"start"` // ns on the session clock
	End      int64  `json:"end"`
	Device   int    `json:"device"` // CUDA device ID
	Stream   int    `json:"stream"`
	Name     string `json:"name"`            // demangled name
	Short    string `json:"short,omitempty"` // short name; Name when empty
	Pid      int64  `json:"pid"`
	Tid      int64  `json:"tid"`
	LaunchAt int64  `json:"launch_at,omitempty"` // start of the launching runtime call; 0: no runtime record
	GraphID  *int64 `json:"graph_id,omitempty"`  // the CUDA graph the kernel ran in
}

// Range is one NVTX push/pop range on a thread.
type Range struct {
	Start      int64  `json:"start"`
	End        int64  `json:"end"`
	Pid        int64  `json:"pid"`
	Tid        int64  `json:"tid"`
	Text       string `json:"text"`
	Registered bool   `json:"registered,omitempty"` // the text is a registered string (textId), not inline
}

// GPU is one device: TARGET_INFO_GPU id and name, seen as CUDA device CudaID.
type GPU struct {
	ID     int    `json:"id"`
	CudaID int    `json:"cuda_id"`
	Name   string `json:"name"`
}

// Diagnostic is one DIAGNOSTIC_EVENT; severity 1 informational, 2 warning, 3 error.
type Diagnostic struct {
	At       int64  `json:"at"`
	Severity int    `json:"severity"`
	Text     string `json:"text"`
}

// Fixture is the content of one export.
type Fixture struct {
	Version         string       `json:"version"` // EXPORT_PRODUCT_VERSION
	SessionStart    time.Time    `json:"session_start"`
	Start           int64        `json:"start"` // ANALYSIS_DETAILS, session clock
	Stop            int64        `json:"stop"`
	GPUs            []GPU        `json:"gpus"`
	Kernels         []Kernel     `json:"kernels"`
	Ranges          []Range      `json:"ranges"`
	Diagnostics     []Diagnostic `json:"diagnostics"`
	Omit            []string     `json:"omit,omitempty"`               // tables to leave out
	NoGraphIDColumn bool         `json:"no_graph_id_column,omitempty"` // an older export: CUPTI_ACTIVITY_KIND_KERNEL without graphId
}

// GlobalTid is nsys's serialized thread ID.
func GlobalTid(pid, tid int64) int64 { return pid<<24 | tid }

var ddl = []struct{ table, sql string }{
	{"META_DATA_EXPORT", `CREATE TABLE META_DATA_EXPORT(name TEXT NOT NULL, value TEXT)`},
	{"StringIds", `CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL)`},
	{"ANALYSIS_DETAILS", `CREATE TABLE ANALYSIS_DETAILS(globalVid INTEGER NOT NULL, duration INTEGER NOT NULL, startTime INTEGER NOT NULL, stopTime INTEGER NOT NULL)`},
	{"TARGET_INFO_SESSION_START_TIME", `CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, utcTime TEXT, localTime TEXT)`},
	{"TARGET_INFO_GPU", `CREATE TABLE TARGET_INFO_GPU(id INTEGER NOT NULL, name TEXT, busLocation TEXT, totalMemory INTEGER, smCount INTEGER, chipName TEXT, memoryBandwidth INTEGER)`},
	{"TARGET_INFO_CUDA_DEVICE", `CREATE TABLE TARGET_INFO_CUDA_DEVICE(gpuId INTEGER, cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER)`},
	{"CUPTI_ACTIVITY_KIND_RUNTIME", `CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER)`},
	{"CUPTI_ACTIVITY_KIND_KERNEL", `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, graphNodeId INTEGER, graphId INTEGER)`},
	{"NVTX_EVENTS", `CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER, textId INTEGER, domainId INTEGER, jsonText TEXT)`},
	{"ENUM_DIAGNOSTIC_SEVERITY_LEVEL", `CREATE TABLE ENUM_DIAGNOSTIC_SEVERITY_LEVEL(id INTEGER PRIMARY KEY, name TEXT NOT NULL, label TEXT)`},
	{"DIAGNOSTIC_EVENT", `CREATE TABLE DIAGNOSTIC_EVENT(timestamp INTEGER NOT NULL, source INTEGER NOT NULL, severity INTEGER NOT NULL, text TEXT NOT NULL)`},
}

// Write creates the export at path (which must not exist).
func Write(path string, f Fixture) (err error) {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := db.Close(); err == nil {
			err = cerr
		}
	}()
	tx, err := db.Begin()
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	keep := func(t string) bool { return !slices.Contains(f.Omit, t) }
	for _, d := range ddl {
		if !keep(d.table) {
			continue
		}
		q := d.sql
		if d.table == "CUPTI_ACTIVITY_KIND_KERNEL" && f.NoGraphIDColumn {
			q = `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, graphNodeId INTEGER)`
		}
		if _, err = tx.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", d.table, err)
		}
	}
	// A simulated capture writes tens of thousands of rows: each statement is
	// prepared once.
	stmts := map[string]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			_ = st.Close()
		}
	}()
	exec := func(table, q string, args ...any) error {
		if !keep(table) {
			return nil
		}
		st, ok := stmts[q]
		if !ok {
			var err error
			if st, err = tx.Prepare(q); err != nil {
				return err
			}
			stmts[q] = st
		}
		_, err := st.Exec(args...)
		return err
	}
	ids := map[string]int64{}
	str := func(s string) (int64, error) {
		if id, ok := ids[s]; ok {
			return id, nil
		}
		id := int64(len(ids) + 1)
		ids[s] = id
		if !keep("StringIds") {
			return id, nil
		}
		return id, exec("StringIds", `INSERT INTO StringIds VALUES (?, ?)`, id, s)
	}
	if err = exec("META_DATA_EXPORT", `INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', ?), ('EXPORT_SCHEMA_VERSION', '3.24.14')`, f.Version); err != nil {
		return err
	}
	if err = exec("ANALYSIS_DETAILS", `INSERT INTO ANALYSIS_DETAILS VALUES (0, ?, ?, ?)`, f.Stop-f.Start, f.Start, f.Stop); err != nil {
		return err
	}
	if err = exec("TARGET_INFO_SESSION_START_TIME", `INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?, ?, ?)`,
		f.SessionStart.UnixNano(), f.SessionStart.UTC().Format(time.RFC3339Nano), f.SessionStart.Format(time.RFC3339Nano)); err != nil {
		return err
	}
	for _, g := range f.GPUs {
		if err = exec("TARGET_INFO_GPU", `INSERT INTO TARGET_INFO_GPU VALUES (?, ?, '', 0, 0, '', 0)`, g.ID, g.Name); err != nil {
			return err
		}
		if err = exec("TARGET_INFO_CUDA_DEVICE", `INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?, ?, 0, '', 0)`, g.ID, g.CudaID); err != nil {
			return err
		}
	}
	launch, err := str("cudaLaunchKernel")
	if err != nil {
		return err
	}
	for i, k := range f.Kernels {
		corr := int64(i + 1)
		short := k.Short
		if short == "" {
			short = k.Name
		}
		dn, err := str(k.Name)
		if err != nil {
			return err
		}
		sn, err := str(short)
		if err != nil {
			return err
		}
		var graph any
		if k.GraphID != nil {
			graph = *k.GraphID
		}
		if f.NoGraphIDColumn {
			err = exec("CUPTI_ACTIVITY_KIND_KERNEL", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, NULL)`,
				k.Start, k.End, k.Device, k.Stream, corr, k.Pid<<24, dn, sn)
		} else {
			err = exec("CUPTI_ACTIVITY_KIND_KERNEL", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?, ?, ?, 1, NULL, ?, ?, ?, ?, ?, NULL, ?)`,
				k.Start, k.End, k.Device, k.Stream, corr, k.Pid<<24, dn, sn, graph)
		}
		if err != nil {
			return err
		}
		if k.LaunchAt != 0 {
			if err := exec("CUPTI_ACTIVITY_KIND_RUNTIME", `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?, ?, 1, ?, ?, ?, 0, NULL)`,
				k.LaunchAt, k.LaunchAt+3000, GlobalTid(k.Pid, k.Tid), corr, launch); err != nil {
				return err
			}
		}
	}
	for _, r := range f.Ranges {
		var text, textID any = r.Text, nil
		if r.Registered {
			id, err := str(r.Text)
			if err != nil {
				return err
			}
			text, textID = nil, id
		}
		if err = exec("NVTX_EVENTS", `INSERT INTO NVTX_EVENTS VALUES (?, ?, 59, NULL, NULL, NULL, ?, ?, NULL, ?, 0, NULL)`,
			r.Start, r.End, text, GlobalTid(r.Pid, r.Tid), textID); err != nil {
			return err
		}
	}
	for id, l := range []string{"Unknown", "Information", "Warning", "Error"} {
		if err = exec("ENUM_DIAGNOSTIC_SEVERITY_LEVEL", `INSERT INTO ENUM_DIAGNOSTIC_SEVERITY_LEVEL VALUES (?, ?, ?)`,
			id, "NSYS_DIAGNOSTIC_SEVERITY_LEVEL_"+l, l); err != nil {
			return err
		}
	}
	for _, d := range f.Diagnostics {
		if err = exec("DIAGNOSTIC_EVENT", `INSERT INTO DIAGNOSTIC_EVENT VALUES (?, 1, ?, ?)`, d.At, d.Severity, d.Text); err != nil {
			return err
		}
	}
	return tx.Commit()
}
