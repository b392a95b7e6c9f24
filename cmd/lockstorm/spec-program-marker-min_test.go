// Code written by lockstorm shrink: the minimal witness of spec-program × marker, seed 1.

package witness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockstorm/lockstorm/cmd/locktest"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestWitnessSpecProgramMarker replays the witness: clients 2 → 2, keys 1 → 1, nodes 1 → 1, faults 0 → 0, failpoints 0 → 2, duration 0.3 s → 0.11 s, ops unbounded → 961, history 31,398 → 10,058 entries.
// It reproduced unsafe on 3 of 3 fresh seeds judged (175, 176, 177); accepted on seeds 133, 134, 135 at the required share 1 of 3.
func TestWitnessSpecProgramMarker(t *testing.T) {
	path := filepath.Join(t.TempDir(), "witness.yaml")
	if err := os.WriteFile(path, []byte(witnessSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	locktest.Run(t, mustLookup(t, "marker"), locktest.Battery{Scenarios: []string{path}})
}

func mustLookup(t *testing.T, name string) lockimpl.Info {
	t.Helper()
	info, err := lockimpl.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

const witnessSpec = `# Minimal witness written by lockstorm shrink, shrunk from spec-program × marker, seed 1 (scenario /tmp/TestSpecProgramNeedsConsent3609321814/002/spec.yaml).
# Reproduces unsafe on 3 of 3 fresh seeds judged (175, 176, 177); accepted on seeds 133, 134, 135 at the required share 1 of 3.
# clients 2 → 2, keys 1 → 1, nodes 1 → 1, faults 0 → 0, failpoints 0 → 2, duration 0.3 s → 0.11 s, ops unbounded → 961, history 31,398 → 10,058 entries.
# A schedule built from the history of a failing run of the random search's minimal spec
# (2 clients, 0.11 s, unsafe on 3 of 3 fresh seeds judged): its gates force the order in which
# the clients passed their points, and the crashes and pauses that met them are pinned to points.
# Run it: lockstorm run --scenario FILE (impls names marker).
name: spec-program-min
description: "shrunk by lockstorm shrink: spec-program as a schedule: the order in which c1 as c0, c0 as c1 passed their points up to the overlap on lock:0, forced with gates"
mode: scheduled
clients: 2
keys: 1
duration: 110ms
ops: 961
client_timeout: 1s
lock:
  ttl: 2s
  retry_delay: 5ms
  wait_timeout: 1s
workload:
  client: careless
failpoints:
- client: 1
  point: cycle/before-acquire
  times: 1
  wait_for: cycle/before-release
- client: 1
  point: cycle/before-release
  times: 1
  wait_for: cs/hold
  wait_count: 2
variants:
  marker:
    exec:
    - /tmp/TestSpecProgramNeedsConsent3609321814/002/marker client.sh
impls:
- marker
`
