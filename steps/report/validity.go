package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// Validity checks come before any statistic: a block that fails one cannot
// support a verdict. Each is recorded per block attempt and shown beside its cell.
const (
	// E2E must equal TTFO + capacity TPOT · (n - 1) up to the stream's tail (the
	// usage chunk and [DONE] after the last token): within 2 ms or 2 % of E2E.
	e2eTolMS   = 2.0
	e2eTolFrac = 0.02
	// No server decodes one sequence faster than 5,000 tokens/s: a block whose
	// median capacity TPOT is under 0.2 ms (scaled by a simulated target's
	// time_scale) was mis-stamped or mis-counted by the client. The median, not the
	// smallest: a short completion streamed in one or two multi-token chunks
	// (speculative decoding) has a capacity TPOT near zero that is real.
	tpotFloorMS = 0.2
	// Client and native token counters must agree within 1 %; request counts by
	// finish reason exactly.
	countTolFrac = 0.01
	// Open loop: the achieved send rate within 5 % of the scheduled rate.
	rateTolFrac = 0.05
)

// Check outcomes.
const (
	CheckPass        = "pass"
	CheckFail        = "fail"
	CheckUnavailable = "unavailable" // the evidence to check it is absent: stated, not failed
)

// Check is one validity check of one block attempt.
type Check struct {
	Name   string `json:"name"`
	Result string `json:"result"`
	Detail string `json:"detail"`
}

// BlockValidity is every check of one block attempt.
type BlockValidity struct {
	Step    string  `json:"step"`
	Attempt int     `json:"attempt"`
	OK      bool    `json:"ok"` // no check failed
	Checks  []Check `json:"checks"`
}

// failed lists the failed checks as "name: detail".
func (v *BlockValidity) failed() []string {
	var out []string
	for _, c := range v.Checks {
		if c.Result == CheckFail {
			out = append(out, c.Name+": "+c.Detail)
		}
	}
	return out
}

// checkE2E holds one visible success to E2E ≈ TTFO + TPOT·(n-1), with E2E measured to
// the end of the stream ([DONE]). With capacity TPOT = (last token - first
// output)/(n - 1), the difference is end - last token: what the stream sent after its
// last token. (E2E to the last token would make the identity hold by construction.)
func (s *blockStats) checkE2E(r loadgen.Record) {
	e2e, ok1 := loadgen.StreamEndMillis(r)
	ttfo, ok2 := loadgen.TTFOMillis(r)
	tpot, ok3 := loadgen.TPOTMillis(r)
	if !ok1 || !ok2 || !ok3 || r.Usage == nil || r.Usage.CompletionTokens < 2 {
		return
	}
	s.E2EChecked++
	resid := math.Abs(e2e - (ttfo + tpot*float64(r.Usage.CompletionTokens-1)))
	s.E2EMaxResidMS = math.Max(s.E2EMaxResidMS, resid)
	if resid > math.Max(e2eTolMS, e2eTolFrac*e2e) {
		s.E2EViolations++
	}
}

// validate runs every check on one attempt of a block.
func (ev *evidence) validate(b *blockRef, a *attemptRef) *BlockValidity {
	v := &BlockValidity{Step: b.Addr, Attempt: a.N, OK: true}
	add := func(name, result, format string, args ...any) {
		v.Checks = append(v.Checks, Check{Name: name, Result: result, Detail: fmt.Sprintf(format, args...)})
		if result == CheckFail {
			v.OK = false
		}
	}
	st := a.stats
	// 1. Requested against achieved load.
	if text(b.cfg["mode"]) == loadgen.ModeOpen {
		switch {
		case st.OK+st.FailedN < 3 || !(st.SendSpanMS[1] > st.SendSpanMS[0]) || !(st.SchedSpanMS[1] > st.SchedSpanMS[0]):
			add("load", CheckUnavailable, "open loop: too few sends to measure a rate")
		default:
			n := float64(st.Attempted - a.Missing - 1)
			sent := n / ((st.SendSpanMS[1] - st.SendSpanMS[0]) / 1000)
			sched := n / ((st.SchedSpanMS[1] - st.SchedSpanMS[0]) / 1000)
			res := CheckPass
			if math.Abs(sent-sched) > rateTolFrac*sched {
				res = CheckFail
			}
			add("load", res, "open loop at %s req/s requested: sends achieved %s req/s against the schedule's %s (tolerance %s)",
				text(b.cfg["rate"]), fmtF(sent, 3), fmtF(sched, 3), pct(rateTolFrac))
		}
	} else {
		want := min(b.Conc, st.Attempted)
		res := CheckPass
		if st.MaxConc != want {
			res = CheckFail
		}
		add("load", res, "closed loop: requested concurrency %d, client observed at most %d in flight (want %d)", b.Conc, st.MaxConc, want)
	}
	// 2. Client against native counters.
	var nd nativeDeltas
	if art, ok := a.artefact("native-deltas.json"); !ok || ev.readJSON(art.Path, &nd) != nil {
		add("counts", CheckUnavailable, "no native counter deltas (native-deltas.json) to reconcile with")
	} else {
		var bad, good []string
		cmpTok := func(name, metric string, client int64, native float64) {
			if slices.Contains(nd.Missing, metric) {
				return
			}
			d := math.Abs(native - float64(client))
			s := fmt.Sprintf("%s client %s / native %s", name, fmtInt(int(client)), fmtInt(int(native)))
			if d > countTolFrac*math.Max(float64(client), 1) {
				bad = append(bad, s)
			} else {
				good = append(good, s)
			}
		}
		cmpTok("prompt tokens", "vllm:prompt_tokens_total", st.PromptSum, nd.PromptTokens)
		cmpTok("generation tokens", "vllm:generation_tokens_total", st.Completion, nd.GenerationTokens)
		if len(nd.RequestSuccess) > 0 {
			for _, reason := range []string{"stop", "length"} {
				c, n := st.Finish[reason], int(math.Round(nd.RequestSuccess[reason]))
				s := fmt.Sprintf("finish %s client %d / native %d", reason, c, n)
				if c != n {
					bad = append(bad, s)
				} else {
					good = append(good, s)
				}
			}
		}
		switch {
		case len(bad) > 0:
			add("counts", CheckFail, "%s (tokens within %s, requests exact)", strings.Join(bad, "; "), pct(countTolFrac))
		case len(good) == 0:
			add("counts", CheckUnavailable, "the native counters needed are missing: %s", strings.Join(nd.Missing, ", "))
		default:
			add("counts", CheckPass, "%s", strings.Join(good, "; "))
		}
	}
	// 3. E2E ≈ TTFO + TPOT·(n-1) per request.
	if st.E2EChecked == 0 {
		add("e2e_identity", CheckUnavailable, "no visible success with two or more completion tokens")
	} else {
		res := CheckPass
		if st.E2EViolations > 0 {
			res = CheckFail
		}
		add("e2e_identity", res, "%d of %d requests off by more than %s ms or %s; largest difference %s ms",
			st.E2EViolations, st.E2EChecked, fmtF(e2eTolMS, -1), pct(e2eTolFrac), fmtF(st.E2EMaxResidMS, 3))
	}
	// 4. A physical floor on TPOT.
	scale := 1.0
	if f := num(b.Target["time_scale"]); f > 0 {
		scale = f
	}
	res, detail := tpotFloor(st.vals[mTPOT], scale)
	add("tpot_floor", res, "%s", detail)
	// 5. The client's own timing error from the last calibration before the block.
	if c := ev.lastCalibration(a.Start.Seq); c == nil {
		add("client_timing", CheckUnavailable, "no client calibration ran before this block")
	} else {
		res := CheckPass
		if !c.passed {
			res = CheckFail
		}
		add("client_timing", res, "%s: TTFT error p50 %s ms / p99 %s ms, TPOT error p99 %s ms, passed %t",
			c.step, fmtF(c.ttftP50, 3), fmtF(c.ttftP99, 3), fmtF(c.tpotP99, 3), c.passed)
	}
	return v
}

type calibration struct {
	step                      string
	passed                    bool
	ttftP50, ttftP99, tpotP99 float64
}

// lastCalibration is the latest settled calibrate step before journal record seq.
func (ev *evidence) lastCalibration(seq int) *calibration {
	var out *calibration
	for i := range ev.records {
		r := &ev.records[i]
		if r.Seq >= seq {
			break
		}
		if r.Kind != engine.KindStepEnd || !strings.HasPrefix(r.Step, "calibrate.") || len(r.Outputs) == 0 {
			continue
		}
		o := recordOutputs(r)
		out = &calibration{step: r.Step, passed: o["passed"] == true, ttftP50: num(o["ttft_error_p50_ms"]),
			ttftP99: num(o["ttft_error_p99_ms"]), tpotP99: num(o["tpot_error_p99_ms"])}
	}
	return out
}

// tpotFloor checks a block's median capacity TPOT against the physical floor,
// scaled by a simulated target's time scale.
func tpotFloor(tpots []float64, scale float64) (result, detail string) {
	if len(tpots) == 0 {
		return CheckUnavailable, "no capacity TPOT measured"
	}
	floor := tpotFloorMS * scale
	med := *median(tpots)
	result = CheckPass
	if med < floor {
		result = CheckFail
	}
	basis := ""
	if scale != 1 {
		basis = fmt.Sprintf(" (%s ms × time_scale %g)", fmtF(tpotFloorMS, -1), scale)
	}
	return result, fmt.Sprintf("median capacity TPOT %s ms over %d requests against a floor of %s ms%s", fmtF(med, 4), len(tpots), fmtF(floor, -1), basis)
}
