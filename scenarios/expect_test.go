package scenarios

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

func TestNoExpectationIsNeverADifference(t *testing.T) {
	for _, v := range []string{checker.Safe, checker.Unsafe, checker.Deadlock, checker.Inconclusive} {
		o := &Outcome{Result: checker.Result{Verdict: v}}
		if !o.AsExpected() {
			t.Errorf("no expectation, verdict %s: counted as a difference", v)
		}
		o.Expected = checker.Safe
		if o.AsExpected() != (v == checker.Safe) {
			t.Errorf("expected safe, verdict %s: AsExpected %v", v, o.AsExpected())
		}
	}
}

func TestBaselineRoundTrip(t *testing.T) {
	outs := []*Outcome{
		{Identity: history.Identity{Scenario: "b", Impl: "mine", Mode: "random", Seed: 3, Backend: "embedded"}, Result: checker.Result{Verdict: checker.Unsafe}},
		{Identity: history.Identity{Scenario: "a", Impl: "mine", Mode: "scheduled", Seed: 3, Backend: "embedded"}, Result: checker.Result{Verdict: checker.Safe}},
	}
	path := filepath.Join(t.TempDir(), "base.json")
	if err := NewBaseline(outs).WriteFile(path); err != nil {
		t.Fatal(err)
	}
	b, err := spec.ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) != 2 || b.Entries[0].Scenario != "a" {
		t.Fatalf("entries %+v", b.Entries)
	}
	e, ok := b.Expect("b", "mine")
	if !ok || e.Verdict != checker.Unsafe || e.Source != spec.FromBaseline || !strings.Contains(e.Reason, path) {
		t.Errorf("Expect(b, mine) = %+v, %v", e, ok)
	}
	if _, ok := b.Expect("b", "yours"); ok {
		t.Error("an unrecorded pair has an expectation")
	}
	var nilB *spec.Baseline
	if _, ok := nilB.Expect("a", "mine"); ok {
		t.Error("nil baseline has an expectation")
	}
}

// TestSearchRuleIsExploratory: a rule marked search (a scheduled spec
// that forces its interleaving for one kind of lock and leaves another's to
// fall as it will) makes a claims-derived run ungated, as a random mode's
// is; the spec's own expectations, and rules without the mark, stay gated.
func TestSearchRuleIsExploratory(t *testing.T) {
	s, err := spec.Parse("search.yaml", []byte(`name: search
mode: scheduled
duration: 1s
lock: {ttl: 1s}
impls: [set-nx-px]
expected: {set-nx-px: unsafe}
derive:
  - if: {topology: quorum}
    expect: unsafe
    search: true
    because: the votes may or may not split the way the race needs
  - expect: safe
    because: the schedule forces nothing else
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		impl       string
		fromClaims bool
		search     bool
	}{
		{"redlock", true, true},
		{"set-nx-px", false, false},
		{"redisson-hash", true, false},
	} {
		info, err := lockimpl.Lookup(tc.impl)
		if err != nil {
			t.Fatal(err)
		}
		exp := s.ExpectFor(tc.impl, info.ClaimsUnder(s.Lock))
		if got := exp.Source == spec.FromClaims; got != tc.fromClaims || exp.Search != tc.search {
			t.Errorf("%s: source %s, search %v; want from claims %v, search %v", tc.impl, exp.Source, exp.Search, tc.fromClaims, tc.search)
		}
		if gated := gatedRun(s, exp); gated == tc.search {
			t.Errorf("%s: gated %v with search %v", tc.impl, gated, tc.search)
		}
	}
}

// TestHeaderIsTheRunsIdentity: the history's header carries the run's
// identity whole, gating included, so `lockstorm check` marks a history as
// its run was marked. redlock on the search spec is the case where they
// could differ: the spec is gated (scheduled), the run is not (a search
// rule's claims-derived expectation).
func TestHeaderIsTheRunsIdentity(t *testing.T) {
	s, err := spec.Parse("search.yaml", []byte(`name: search
mode: scheduled
duration: 300ms
lock: {ttl: 1s}
impls: [set-nx-px]
expected: {set-nx-px: unsafe}
derive:
  - if: {topology: quorum}
    expect: unsafe
    search: true
    because: the votes may or may not split the way the race needs
  - expect: safe
    because: the schedule forces nothing else
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := Run(context.Background(), s, Config{Impl: "redlock", Backend: cluster.Embedded, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !s.IsGated() || o.Gated {
		t.Fatalf("spec gated %v, run gated %v: want a gated spec and an ungated run", s.IsGated(), o.Gated)
	}
	m := history.Parsed{History: o.History}.Meta()
	if m == nil {
		t.Fatal("the history has no header")
	}
	if !reflect.DeepEqual(m.Identity, o.Identity) {
		t.Errorf("header identity %+v\noutcome identity %+v", m.Identity, o.Identity)
	}
}
