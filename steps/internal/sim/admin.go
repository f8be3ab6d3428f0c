package sim

import (
	"encoding/json"
	"io"
	"net/http"
)

// serveFaults is the simulator's admin endpoint for fault injection at run time:
//
//	GET  /debug/faults   the faults in force, as a Faults JSON object
//	POST /debug/faults   replace them (a Faults JSON object; unknown fields refused)
//
// A campaign reaches it from an exec step, for instance to slow the incumbent down
// between the arms before and after the candidate (faults {"slowdown": 1.3}): the
// container, its incarnation and its identity stay the same, as when a real server
// degrades under thermal or memory pressure, so only the ABBA drift control can
// see it. Like Server.SetFaults, the change applies to requests that arrive from
// then on and a restart forgets it.
func (s *Server) serveFaults(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		var f Faults
		dec := json.NewDecoder(io.LimitReader(r.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", "faults: "+err.Error())
			return
		}
		if err := s.SetFaults(f); err != nil {
			writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, s.Faults())
}
