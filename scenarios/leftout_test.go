package scenarios

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestPlanLeavesQuorumFaultsOutOnOneMaster: failover-random's split-votes
// is in a redlock's plan (five masters) and left out of a single-instance
// lock's, which the plan text says; the faults before it keep their places
// for both, so their seeded times are the same.
func TestPlanLeavesQuorumFaultsOutOnOneMaster(t *testing.T) {
	spec, err := spec.Load("failover-random")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		impl        string
		faults, out int
		leftInText  bool
	}{
		{"redlock", len(spec.Faults), 0, false},
		{"set-nx-px", len(spec.Faults) - 1, 1, true},
	} {
		p, err := Compile(spec, Config{Impl: tc.impl})
		if err != nil {
			t.Fatal(err)
		}
		var text bytes.Buffer
		if err := p.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		left := strings.Contains(text.String(), "left out     {kind: split-votes")
		if len(p.Faults) != tc.faults || len(p.LeftOut) != tc.out || left != tc.leftInText {
			t.Errorf("%s: %d faults, left out %v, nodes %d:\n%s", tc.impl, len(p.Faults), p.LeftOut, p.Nodes, text.String())
		}
		for i, f := range p.Faults {
			if f.Spec.Kind != spec.Faults[i].Kind {
				t.Errorf("%s: fault %d is %s, the spec's is %s: the faults before a left-out one must keep their places (their seeded times)",
					tc.impl, i, f.Spec.Kind, spec.Faults[i].Kind)
			}
		}
	}
}

// TestLeftOutFaultKeepsLaterIndexes: a quorum-only fault listed first and
// left out on one master does not move the faults after it: each keeps its
// place in the spec's list, which seeds its random times and targets.
func TestLeftOutFaultKeepsLaterIndexes(t *testing.T) {
	spec, err := spec.Parse("leftout.yaml", []byte(`name: leftout
clients: 4
hosts: 2
keys: 1
duration: 1s
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
faults:
  - {at: 0s, kind: split-votes, nodes: [n1], hosts: [h1]}
  - {at: 100ms, within: 500ms, for: 50ms, kind: pause, pick: client}
impls: [set-nx-px]
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		impl  string
		index []int
	}{
		{"redlock", []int{0, 1}},
		{"set-nx-px", []int{1}},
	} {
		p, err := Compile(spec, Config{Impl: tc.impl})
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, f := range p.Faults {
			got = append(got, f.Index)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.index) {
			t.Errorf("%s: fault indexes %v, want %v (the spec's places)", tc.impl, got, tc.index)
		}
	}
}
