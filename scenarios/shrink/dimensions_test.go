package shrink

import (
	"reflect"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestChunks: delta debugging's removals, halves first, later items first,
// never leaving fewer than keep.
func TestChunks(t *testing.T) {
	for _, tc := range []struct {
		n, keep int
		want    [][]int
	}{
		{1, 1, nil},
		{1, 0, [][]int{{0}}},
		{2, 1, [][]int{{1}, {0}}},
		{3, 1, [][]int{{2}, {1}, {0}}},
		{4, 1, [][]int{{2, 3}, {0, 1}, {3}, {2}, {1}, {0}}},
		{5, 1, [][]int{{3, 4}, {1, 2}, {0}, {4}, {3}, {2}, {1}, {0}}},
	} {
		if got := chunks(tc.n, tc.keep); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("chunks(%d, %d) = %v, want %v", tc.n, tc.keep, got, tc.want)
		}
	}
}

// TestDropClients: what named a dropped client goes with it, the others
// are renumbered, and what named every client stays.
func TestDropClients(t *testing.T) {
	fp := func(client int, wait string, waitClient int) spec.FailpointSpec {
		return spec.FailpointSpec{Client: client, Point: "cs/hold", Action: lockimpl.Action{WaitFor: wait, WaitClient: waitClient}}
	}
	s := &spec.Spec{
		Clients: 4, Hosts: 4,
		Failpoints: []spec.FailpointSpec{
			fp(0, "", 0),        // kept
			fp(1, "", 0),        // dropped: its client goes
			fp(2, "cs/hold", 1), // dropped: it waits for a dropped client
			fp(3, "cs/hold", 2), // kept: c3 → c2 waiting for c2 → c1
			fp(-1, "", 0),       // kept: every client
			fp(3, "", 1),        // kept: wait_client means nothing without wait_for
		},
		Faults: []nemesis.Spec{
			{Kind: "pause", Clients: []int{1}},    // dropped: no target left
			{Kind: "pause", Clients: []int{1, 3}}, // kept, retargeted to c2
			{Kind: "pause", Pick: "client"},       // kept
		},
		ClockOffsets: map[int]time.Duration{1: time.Second, 3: 2 * time.Second},
	}
	dropClients(s, []int{1})
	if s.Clients != 3 || s.Hosts != 3 {
		t.Errorf("clients %d hosts %d, want 3 and 3", s.Clients, s.Hosts)
	}
	var got [][2]int
	for _, f := range s.Failpoints {
		got = append(got, [2]int{f.Client, f.WaitClient})
	}
	if want := [][2]int{{0, 0}, {2, 1}, {-1, 0}, {2, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("failpoints (client, wait_client) %v, want %v", got, want)
	}
	if len(s.Faults) != 2 || !reflect.DeepEqual(s.Faults[0].Clients, []int{2}) || s.Faults[1].Pick != "client" {
		t.Errorf("faults %+v", s.Faults)
	}
	if want := map[int]time.Duration{2: 2 * time.Second}; !reflect.DeepEqual(s.ClockOffsets, want) {
		t.Errorf("clock offsets %v, want %v", s.ClockOffsets, want)
	}
}
