package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/steps/calibrate"
)

// calibrationFresh is how recent a calibration must be for `rigor bench` to record
// it: the client's timing error belongs to the machine's state (load, governor,
// kernel), which an hour-old figure may no longer describe.
const calibrationFresh = time.Hour

// calibrationPath is where `rigor calibrate` remembers its last run for `rigor
// bench`: rigor/calibration.json in the user cache directory ($XDG_CACHE_HOME, else
// ~/.cache on Linux, ~/Library/Caches on macOS). Only the last run is kept.
func calibrationPath() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "rigor", "calibration.json"), nil
}

// calibrationMemo is what a calibration leaves for later benches: when, by which
// rigor on which host, at what load, and the client's p50/p99 timing errors.
type calibrationMemo struct {
	At             time.Time `json:"at"`
	Rigor          string    `json:"rigor"`
	Host           string    `json:"host"`
	Concurrency    int       `json:"concurrency"`
	TokensPerReq   int       `json:"tokens_per_request"`
	Requests       int       `json:"requests"`
	TTFTErrorP50MS *float64  `json:"ttft_error_p50_ms"`
	TTFTErrorP99MS *float64  `json:"ttft_error_p99_ms"`
	TPOTErrorP50MS *float64  `json:"tpot_error_p50_ms"`
	TPOTErrorP99MS *float64  `json:"tpot_error_p99_ms"`
	ScheduleLagP99 *float64  `json:"schedule_lag_p99_ms"`
	Passed         bool      `json:"passed"`
}

// rememberCalibration writes rep to calibrationPath and returns the path.
func rememberCalibration(rep *calibrate.Report, at time.Time) (string, error) {
	path, err := calibrationPath()
	if err != nil {
		return "", err
	}
	host, _ := os.Hostname()
	m := calibrationMemo{At: at.UTC(), Rigor: buildVersion(), Host: host, Concurrency: rep.Concurrency, TokensPerReq: rep.TokensPerReq,
		Requests: rep.Requests, TTFTErrorP50MS: rep.TTFTMS.AbsP50, TTFTErrorP99MS: rep.TTFTMS.AbsP99, TPOTErrorP50MS: rep.TPOTMS.AbsP50,
		TPOTErrorP99MS: rep.TPOTMS.AbsP99, ScheduleLagP99: rep.ScheduleLagMS.P99, Passed: rep.Passed}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// benchCalibration is the calibration a bench result records: the memo, its age and
// where it was read.
type benchCalibration struct {
	calibrationMemo
	AgeS float64 `json:"age_s"`
	Path string  `json:"path"`
}

// recentCalibration reads the last calibration of this host if it ran within
// calibrationFresh of now; otherwise it returns nil and says why.
func recentCalibration(now time.Time) (*benchCalibration, string) {
	path, err := calibrationPath()
	if err != nil {
		return nil, fmt.Sprintf("no user cache directory to read a calibration from: %v", err)
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "no calibration in the last hour: run `rigor calibrate` to measure the client's timing error (" + path + ")"
	}
	if err != nil {
		return nil, fmt.Sprintf("calibration unreadable: %v", err)
	}
	var m calibrationMemo
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Sprintf("calibration %s unreadable: %v", path, err)
	}
	host, _ := os.Hostname()
	age := now.Sub(m.At)
	switch {
	case m.Host != host:
		return nil, fmt.Sprintf("the calibration in %s is from host %q, not this one", path, m.Host)
	case age < 0 || age > calibrationFresh:
		return nil, fmt.Sprintf("the last calibration is %s old, more than an hour: run `rigor calibrate` again (%s)", age.Round(time.Minute), path)
	}
	return &benchCalibration{calibrationMemo: m, AgeS: age.Seconds(), Path: path}, ""
}

// machine describes where the client ran.
type machine struct {
	Host       string `json:"host"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model,omitempty"` // Linux: /proc/cpuinfo "model name"
	Kernel     string `json:"kernel,omitempty"`    // Linux: /proc/sys/kernel/osrelease
	Go         string `json:"go"`
}

func thisMachine() machine {
	host, _ := os.Hostname()
	m := machine{Host: host, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
