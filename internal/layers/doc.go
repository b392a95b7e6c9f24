// Package layers holds the test that keeps lockstorm's imports pointing
// down: the intended order of its packages, from the bottom.
//
//  0. internal/resp, internal/clock, internal/admission, internal/sim: raw RESP, the clock shim, CPU admission,
//     bubbles of virtual time, no lockstorm imports;
//     internal/ids, checker/internal/liveness, checker/internal/keyevents, checker/mutex:
//     the tables by id, the liveness checks' time arithmetic, the judgements
//     by the servers' key events and porcupine's mutex model, below checker
//  1. history, lockimpl: a run's record (entries, header, Recorder, JSONL, validation); the locks on trial
//  2. checker, internal/cluster, lockimpl/exec: the checks of a history; Redis backends; locks as client processes
//  3. scenarios/nemesis: faults
//  4. scenarios/spec: the spec language (types, YAML, validation, derive rules, baselines);
//     scenarios/topology, scenarios/client, scenarios/observe: a run's collaborators (servers and
//     links, the clients' connections, the servers' observers)
//  5. scenarios: the runner (plan, phases, traffic, recording, timeline)
//  6. reports: tables, JSON, JUnit, run folders, pages; scenarios/shrink: the smallest failing spec
//  7. locktest: the go test front end (the public Go API)
//  8. internal/bench: the bench
//  9. cmd/lockstorm: the CLI
//
// A package imports only packages of lower layers. A new package is given
// its layer in Order (the test fails until it is). A second test keeps every
// function outside the tests at 80 lines or fewer (funclen_test.go).
package layers

// Order is the layer of every package of the module, by import path below
// the module path.
var Order = map[string]int{
	"internal/resp":      0,
	"internal/clock":     0,
	"internal/admission": 0,
	"internal/sim":       0,
	"history":            1,
	"checker":            2,
	"lockimpl":           1,
	"internal/cluster":   2,
	"lockimpl/exec":      2,
	"scenarios/nemesis":  3,
	"scenarios/spec":     4,
	"scenarios/observe":  4,
	"scenarios/client":   4,
	"scenarios/topology": 4,
	"scenarios":          5,
	"reports":            6,
	"scenarios/shrink":   6,
	"locktest":           7,
	"internal/bench":     8,
	"cmd/lockstorm":      9,
	"internal/layers":    0,

	"checker/internal/liveness":  0,
	"internal/ids":               0,
	"checker/mutex":              0,
	"checker/internal/keyevents": 0,
}
