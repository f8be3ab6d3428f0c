package loadgen

import (
	"strings"
	"testing"
)

func TestSliceSharesSumToTheBlock(t *testing.T) {
	for name, tc := range map[string]struct{ conc, requests, of int }{
		"even": {12, 40, 3}, "remainder": {256, 1024, 3}, "one each": {3, 3, 3}, "single": {5, 7, 1},
	} {
		t.Run(name, func(t *testing.T) {
			conns, owned := 0, map[int]int{}
			for k := range tc.of {
				s := Slice{Index: k, Of: tc.of}
				c := s.Connections(tc.conc)
				if c < tc.conc/tc.of || c > tc.conc/tc.of+1 {
					t.Fatalf("slice %d: %d connections", k, c)
				}
				conns += c
				for i := range tc.requests {
					if s.Owns(i) {
						owned[i]++
					}
				}
			}
			if conns != tc.conc || len(owned) != tc.requests {
				t.Fatalf("%d connections, %d requests owned", conns, len(owned))
			}
			for i, n := range owned {
				if n != 1 {
					t.Fatalf("request %d owned %d times", i, n)
				}
			}
		})
	}
	bad := Config{Endpoint: "http://h:1", Model: "m", Concurrency: 2, Requests: 4, IDPrefix: "p", Workload: Workload{Corpus: "synthetic-summary", NominalContext: 256, Prefixes: "unique"}}
	bad.Slice = &Slice{Index: 1, Of: 2}
	if err := bad.Validate(); err != nil {
		t.Fatal(err)
	}
	bad.Slice = &Slice{Index: 0, Of: 3}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "slice 0 of 3") {
		t.Fatal("three slices of concurrency 2 validated")
	}
}
