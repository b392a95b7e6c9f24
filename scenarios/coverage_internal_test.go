package scenarios

import (
	"context"
	"slices"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

func TestFoldPoint(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"cmd/n0/SET/after", "cmd/*/SET/after"},
		{"cmd/n4/EVALSHA:f7efa496/before", "cmd/*/EVALSHA:f7efa496/before"},
		{"set-nx-px/before-release", "set-nx-px/before-release"},
		{"cmd/odd", "cmd/odd"},
	} {
		if got := foldPoint(tc.in); got != tc.want {
			t.Errorf("foldPoint(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCombos: every reached situation counts once per fault that can act
// at its point (a lost reply only after a reply), covered or not.
func TestCombos(t *testing.T) {
	acts := []string{spec.ExplorePause, spec.ExploreLoseReply}
	before := Situation{Point: "cmd/*/SET/before", State: StateWaiting, Contender: true}
	after := Situation{Point: "cmd/*/SET/after", State: StateWaiting, Contender: true}
	alone := Situation{Point: "cmd/*/SET/after", State: StateWaiting}
	for _, tc := range []struct {
		name           string
		reached        []Situation
		faults         map[Situation]string
		covered, total int
	}{
		{"nothing reached", nil, nil, 0, 0},
		{"before: no lost reply", []Situation{before}, nil, 0, 1},
		{"after: both faults", []Situation{after}, map[Situation]string{after: spec.ExploreLoseReply}, 1, 2},
		{"alone: no pause", []Situation{alone}, nil, 0, 1},
		{"both", []Situation{before, after}, map[Situation]string{before: spec.ExplorePause, after: spec.ExplorePause}, 2, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab := newComboTable()
			for _, s := range tc.reached {
				tab.reached[s]++
			}
			for s, a := range tc.faults {
				tab.fault(s, a, 1)
			}
			combos := tab.combos(acts)
			set := NewCoverageSet()
			set.Add("l", combos)
			if c, n := set.Counts(); c != tc.covered || n != tc.total {
				t.Errorf("covered %d of %d, want %d of %d (%v)", c, n, tc.covered, tc.total, combos)
			}
		})
	}
}

// TestCoverageSetUnion: a battery's coverage is the union per lock: a
// combination covered by one run and reached uncovered by another is
// covered; the same combination on two locks is two.
func TestCoverageSetUnion(t *testing.T) {
	s := Situation{Point: "p", State: StateHolding}
	set := NewCoverageSet()
	set.Add("a", []Combo{{Situation: s, Fault: "pause", Faults: 0}})
	set.Add("a", []Combo{{Situation: s, Fault: "pause", Faults: 2}})
	set.Add("b", []Combo{{Situation: s, Fault: "pause", Faults: 0}})
	if c, n := set.Counts(); c != 1 || n != 2 {
		t.Errorf("counts %d of %d, want 1 of 2", c, n)
	}
	if got, want := set.Line(), "coverage: 1 of 2 combinations"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if got := set.Covered(); !slices.Equal(got, []string{"a|p|pause|holding|false"}) {
		t.Errorf("covered %v", got)
	}
	if NewCoverageSet().Line() != "" {
		t.Error("an empty set has a line")
	}
}

// TestSteering: the actions a hit may draw are fresh only where no run
// (this one, or one before it: Plan.Prior) faulted that combination.
func TestSteering(t *testing.T) {
	sit := Situation{Point: "cmd/*/SET/after", State: StateWaiting, Contender: true}
	key := func(a string) string { return Combo{Situation: sit, Fault: a}.Key("l") }
	for _, tc := range []struct {
		name      string
		prior     []string
		here      []string // faulted in this run
		wantFresh []string
	}{
		{"nothing covered", nil, nil, []string{"pause", "lose-reply"}},
		{"covered before", []string{key("pause")}, nil, []string{"lose-reply"}},
		{"covered here", nil, []string{"lose-reply"}, []string{"pause"}},
		{"all covered", []string{key("pause")}, []string{"lose-reply"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{plan: &Plan{Impl: "l", Clients: 4, Prior: tc.prior}}
			x := newExplorer(r, nil, spec.Explore{Actions: []string{"pause", "lose-reply"}, PerPoint: 5})
			for _, a := range tc.here {
				x.table.fault(sit, a, -1)
			}
			open, fresh := x.open(sit, "cmd/n1/SET/after", 0)
			if len(open) != 2 || !slices.Equal(fresh, tc.wantFresh) {
				t.Errorf("open %v fresh %v, want fresh %v", open, fresh, tc.wantFresh)
			}
		})
	}
}

// TestInCallStraggler: a hit whose context names an acquire counts as
// inside it only while the client is still in that acquire; once the call
// returned (the client holds, or releases), a straggler's hit (a quorum
// lock's node answering late) is outside every call.
func TestInCallStraggler(t *testing.T) {
	acq := lockimpl.WithCall(context.Background(), lockimpl.CallAcquire)
	for _, tc := range []struct {
		name, now string // the client's call in flight
		during    []string
		want      bool
	}{
		{"in the acquire", lockimpl.CallAcquire, []string{lockimpl.CallAcquire}, true},
		{"holding after it", "", []string{lockimpl.CallAcquire}, false},
		{"releasing after it", lockimpl.CallRelease, []string{lockimpl.CallAcquire}, false},
		{"holding, any call", "", nil, true},
		{"in the acquire, any call", lockimpl.CallAcquire, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &runClient{}
			c.call.Store(tc.now)
			x := newExplorer(&run{plan: &Plan{Clients: 2}}, nil, spec.Explore{During: tc.during})
			if got := x.inCall(acq, c); got != tc.want {
				t.Errorf("inCall = %v, want %v", got, tc.want)
			}
		})
	}
}
