package spec

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestDerivedAgreesWithSpecs: on every (scenario, implementation or
// variant) pair a shipped spec writes an expectation for, the expectation
// derived from the lock's claims by the spec's rules must be the same. A
// disagreement means the claims or the rules misread the documents.
func TestDerivedAgreesWithSpecs(t *testing.T) {
	pairs := 0
	for _, n := range Names() {
		s, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range s.Expected {
			info, o, err := s.Resolve(name)
			if err != nil {
				t.Fatal(err)
			}
			c := info.ClaimsUnder(o)
			got := s.Derived(c)
			pairs++
			if got.Verdict != want {
				t.Errorf("%s × %s: spec says %s, claims (%s) derive %q (%s)", n, name, want, c, got.Verdict, got.Reason)
			}
		}
	}
	if pairs < 40 {
		t.Errorf("only %d pairs checked", pairs)
	}
}

// TestEverySpecJudgesEveryLock: every shipped scenario gives every shipped
// lock (and any lock with claims) an expectation with a reason, and
// nothing to a lock that declares none.
func TestEverySpecJudgesEveryLock(t *testing.T) {
	for _, n := range Names() {
		s, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range lockimpl.All() {
			if !info.Claims.Declared() {
				t.Errorf("%s declares no claims", info.Name)
			}
			_, o, _ := s.Resolve(info.Name)
			if s.Cluster != nil && info.NodesUnder(o) > 1 {
				// A cluster gives a lock one client: a quorum lock is
				// refused at load and skipped by the battery, never run.
				if err := s.CheckImpl(info.Name); err == nil {
					t.Errorf("%s × %s: a lock needing %d masters is not refused on a cluster", n, info.Name, info.NodesUnder(o))
				}
				continue
			}
			e := s.ExpectFor(info.Name, info.ClaimsUnder(o))
			if e.Verdict == "" || e.Reason == "" {
				t.Errorf("%s × %s: expectation %+v lacks a verdict or a reason", n, info.Name, e)
			}
		}
		if e := s.ExpectFor("somebody-elses-lock", lockimpl.Claims{}); !reflect.DeepEqual(e, Expectation{}) {
			t.Errorf("%s: a lock without claims is expected %+v", n, e)
		}
	}
}

func TestExpectedReasonIsTheComment(t *testing.T) {
	s, err := Load("pause-past-ttl")
	if err != nil {
		t.Fatal(err)
	}
	e := s.ExpectFor("fenced", lockimpl.Claims{})
	if e.Source != FromSpec || !strings.Contains(e.Reason, "refuses C0's write") {
		t.Errorf("fenced: %+v", e)
	}
}

func TestRulesRejectedAtLoad(t *testing.T) {
	for _, tc := range []struct{ name, rules, field, msg string }{
		{"unknown claim", "derive:\n  - if: {colour: red}\n    expect: safe\n    because: x\n", "derive.0.if.colour", "unknown claim"},
		{"bad value", "derive:\n  - if: {expiry: sometimes}\n    expect: safe\n    because: x\n", "derive.0.if.expiry", "want one of"},
		{"bad verdict", "derive:\n  - expect: fine\n    because: x\n", "derive.0.expect", "verdict must be"},
		{"no reason", "derive:\n  - expect: safe\n", "derive.0.because", "missing"},
		{"unknown kind", "derive:\n  - expect: safe\n    because: x\n    permit: [two-holders, lies]\n", "derive.0.permit.1", "unknown kind"},
		{"unknown forbidden kind", "derive:\n  - expect: safe\n    because: x\n    forbid: sloth\n", "derive.0.forbid.0", "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(goodSpec+tc.rules))
			var se *SpecError
			if !errors.As(err, &se) || se.Field != tc.field || !strings.Contains(err.Error(), tc.msg) || se.Line == 0 {
				t.Errorf("err = %v, want %s: %s with a line", err, tc.field, tc.msg)
			}
		})
	}
}

func TestRuleMatching(t *testing.T) {
	s, err := Parse("x.yaml", []byte(goodSpec+`derive:
  - if: {fencing: true}
    expect: safe
    because: fenced
  - if: {expiry: [server, client-clock], topology: single}
    expect: unsafe
    because: expires
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    lockimpl.Claims
		want string
	}{
		{lockimpl.Claims{}, ""},
		{lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease, Fencing: true}, checker.Safe},
		{lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ClientClockExpiry, Release: lockimpl.OwnerCheckedRelease}, checker.Unsafe},
		{lockimpl.Claims{Topology: lockimpl.Quorum, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}, ""},
		{lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.NoExpiry, Release: lockimpl.OwnerCheckedRelease}, ""},
	} {
		if got := s.Derived(tc.c).Verdict; got != tc.want {
			t.Errorf("%s: derived %q, want %q", tc.c, got, tc.want)
		}
	}
}

// TestExtraOptions: lock.extra reaches a user's factory; a variant's extra
// entries override the spec's and keep the others.
func TestExtraOptions(t *testing.T) {
	s, err := Parse("x.yaml", []byte(`name: x
duration: 1s
lock: {ttl: 1s, extra: {tries: "32", drift: "0.01"}}
variants:
  v: {impl: set-nx-px, extra: {tries: "3"}}
`))
	if err != nil {
		t.Fatal(err)
	}
	_, base, _ := s.Resolve("set-nx-px")
	_, v, _ := s.Resolve("v")
	if base.Extra["tries"] != "32" || v.Extra["tries"] != "3" || v.Extra["drift"] != "0.01" || s.Lock.Extra["tries"] != "32" {
		t.Errorf("spec extra %v, variant extra %v", base.Extra, v.Extra)
	}
}

// TestWholeSecondsChangesNoRule: a lock whose clock counts whole seconds
// runs every scenario stretched until its TTL spans TimeScaleUnits of them
// (Compile), so it faces the schedule the scenario was written for, in
// proportion; the rounding it adds is inside the margins the scenarios
// leave. No rule may then expect something else of it because of the
// claim alone: a rule reasoning with the unstretched times (a 300 ms lock
// living over a second) misjudges it. Tried on every shipped lock's claims.
func TestWholeSecondsChangesNoRule(t *testing.T) {
	for _, n := range Names() {
		s, err := Load(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, info := range lockimpl.All() {
			c := info.Claims
			if !c.Declared() {
				continue
			}
			ms, ws := c, c
			ms.WholeSeconds, ws.WholeSeconds = false, true
			if a, b := s.Derived(ms), s.Derived(ws); a.Verdict != b.Verdict {
				t.Errorf("%s: %s's claims derive %s in milliseconds but %s in whole seconds (%s)", n, info.Name, a.Verdict, b.Verdict, b.Reason)
			}
		}
	}
}

// TestRulePermitsAndForbids: a rule's permit and forbid lists override the
// claims' defaults for the locks it matches, with the rule's reason.
func TestRulePermitsAndForbids(t *testing.T) {
	s, err := Parse("x.yaml", []byte(goodSpec+"derive:\n  - expect: unsafe\n    because: the pause outlasts the TTL\n    permit: [orphaned-key]\n    forbid: [harm]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	got := map[history.Kind]bool{}
	for _, p := range s.PermissionsFor(s.Derived(c), c) {
		got[p.Kind] = p.Permitted
	}
	want := map[history.Kind]bool{history.KindTwoHolders: true, history.KindHarm: false, history.KindOrphanedKey: true,
		history.KindReleaseFalseSuccess: false, history.KindLostAcquireUnknown: true, history.KindStarvation: false}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s permitted %v, want %v", k, got[k], w)
		}
	}
}

// TestPermissionDefaults: what a lock's claims and a scenario's facts let
// it show, without a word in the spec.
func TestPermissionDefaults(t *testing.T) {
	single := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	plainDel := single
	plainDel.Release = lockimpl.UnconditionalRelease
	expiredOnly := single
	expiredOnly.Release = lockimpl.ExpiredOnlyRelease
	quorum := single
	quorum.Topology = lockimpl.Quorum
	separate := plainDel
	separate.Expiry = lockimpl.SeparateExpiry
	fenced := single
	fenced.Fencing = true
	absentOK := single
	absentOK.AbsentReleaseOK = true
	reentrant := single
	reentrant.Reentrant = true
	paced := single
	paced.BackoffGrowth, paced.BackoffCap, paced.ExtendRetries = 2, 0.25, true
	for _, tc := range []struct {
		name    string
		verdict string
		c       lockimpl.Claims
		f       Facts
		kind    history.Kind
		want    bool
	}{
		{"an expected overlap", checker.Unsafe, single, Facts{}, history.KindTwoHolders, true},
		{"an overlap where safe is expected", checker.Safe, single, Facts{}, history.KindTwoHolders, false},
		{"a fenced lock's overlap", checker.Safe, fenced, Facts{}, history.KindTwoHolders, true},
		{"harm to a fenced lock's resource", checker.Safe, fenced, Facts{}, history.KindHarm, false},
		{"a lying owner-checked release inside an expected overlap", checker.Unsafe, single, Facts{}, history.KindReleaseFalseSuccess, false},
		{"a plain DEL's late release", checker.Unsafe, plainDel, Facts{}, history.KindReleaseFalseSuccess, true},
		{"seed 002's Redisson unlock of an absent key", checker.Unsafe, absentOK, Facts{}, history.KindReleaseFalseSuccess, true},
		{"a foreign renewal by an owner-checked lock", checker.Unsafe, single, Facts{}, history.KindExtendFalseSuccess, false},
		{"an owner-checked release that freed nothing", checker.Safe, single, Facts{}, history.KindReleaseNotFreed, false},
		{"seed 000's expired-only release", checker.Deadlock, expiredOnly, Facts{}, history.KindReleaseNotFreed, true},
		{"a reentrant lock's release after lost replies", checker.Safe, reentrant, Facts{Network: true}, history.KindReleaseNotFreed, true},
		{"a reentrant lock's release without lost replies", checker.Safe, reentrant, Facts{Crashes: true}, history.KindReleaseNotFreed, false},
		{"a single-instance lost acquire", checker.Safe, single, Facts{Network: true}, history.KindLostAcquire, false},
		{"a quorum lock's lost acquire", checker.Safe, quorum, Facts{}, history.KindLostAcquire, true},
		{"an unknown acquire's leak", checker.Safe, single, Facts{}, history.KindLostAcquireUnknown, true},
		{"an orphan with crashes and a TTL set with the lock", checker.Safe, single, Facts{Crashes: true}, history.KindOrphanedKey, false},
		{"an orphan with crashes and the TTL set apart", checker.Deadlock, separate, Facts{Crashes: true}, history.KindOrphanedKey, true},
		{"an orphan while a server's clock is stopped", checker.Safe, single, Facts{ServerTime: true}, history.KindOrphanedKey, true},
		{"starvation where deadlock is expected", checker.Deadlock, single, Facts{}, history.KindStarvation, true},
		{"a waiter off its declared pacing, even where deadlock is expected", checker.Deadlock, paced, Facts{Network: true}, history.KindRetryCadence, false},
		{"an extend that gave up early, even where unsafe is expected", checker.Unsafe, paced, Facts{Network: true}, history.KindExtendGaveUp, false},
		{"a release re-sent after a definite answer", checker.Safe, single, Facts{Network: true}, history.KindReleaseRetries, false},
		{"a quorum release re-sent where unsafe is expected", checker.Unsafe, quorum, Facts{Crashes: true}, history.KindReleaseRetries, false},
		{"a release refused on a key still the caller's", checker.Safe, single, Facts{Network: true}, history.KindFalseRefusal, false},
		{"a plain DEL's refusal where deadlock is expected", checker.Deadlock, plainDel, Facts{}, history.KindFalseRefusal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, p := range Permissions(Expectation{Verdict: tc.verdict}, tc.c, tc.f) {
				if p.Kind == tc.kind {
					if p.Permitted != tc.want || p.Why == "" {
						t.Errorf("%s permitted %v (%s), want %v", tc.kind, p.Permitted, p.Why, tc.want)
					}
					return
				}
			}
			t.Errorf("no permission for %s", tc.kind)
		})
	}
}

// TestGrantChecked: explore-late-grant expects a late grant (unsafe) from
// a single-instance lock unless it declares grant_checked (it gives a
// lock whose lease ran out during its acquire back: Symfony Lock), and
// safe from a quorum lock. wall-clock-step (a try whose replies come
// back after the TTL while the wall clock steps ahead and back) expects
// safe of a check by a monotonic clock (rueidislock's lease timer) or of
// a grant confirmed on the server (Symfony's refresh after its save); a
// check by the wall clock alone is misled by the step.
func TestGrantChecked(t *testing.T) {
	single := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	checked := single
	checked.GrantChecked = true
	monotonic := checked
	monotonic.GrantMonotonic = true
	confirmed := checked
	confirmed.GrantConfirmed = true
	quorum := single
	quorum.Topology = lockimpl.Quorum
	for _, tc := range []struct {
		scenario string
		c        lockimpl.Claims
		want     string
	}{
		{"explore-late-grant", single, checker.Unsafe},
		{"explore-late-grant", checked, checker.Safe},
		{"explore-late-grant", monotonic, checker.Safe},
		{"explore-late-grant", quorum, checker.Safe},
		{"wall-clock-step", single, checker.Unsafe},
		{"wall-clock-step", checked, checker.Unsafe},
		{"wall-clock-step", monotonic, checker.Safe},
		{"wall-clock-step", confirmed, checker.Safe},
		{"wall-clock-step", quorum, checker.Safe},
		{"grant-after-ttl", single, checker.Unsafe},
		{"grant-after-ttl", checked, checker.Safe},
		{"grant-after-ttl", monotonic, checker.Safe},
		{"grant-after-ttl", confirmed, checker.Safe},
		{"grant-after-ttl", quorum, checker.Safe},
	} {
		s, err := Load(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Derived(tc.c).Verdict; got != tc.want {
			t.Errorf("%s, %s: derived %q, want %q", tc.scenario, tc.c, got, tc.want)
		}
	}
}

// TestExtendChecked: extend-reply-late expects safe of a lock whose
// holder is told a validity dated from before each extend's command
// (extend_checked, or the Redlock design of a quorum lock) or whose
// resource refuses stale tokens, unsafe of any other lock that expires:
// the holder trusts its lease past the key's expiry.
func TestExtendChecked(t *testing.T) {
	single := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	checked := single
	checked.ExtendChecked = true
	grant := single
	grant.GrantChecked, grant.GrantMonotonic = true, true
	quorum := single
	quorum.Topology = lockimpl.Quorum
	quorumChecked := checked
	quorumChecked.Topology = lockimpl.Quorum
	fenced := single
	fenced.Fencing = true
	never := single
	never.Expiry = lockimpl.NoExpiry
	s, err := Load("extend-reply-late")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    lockimpl.Claims
		want string
	}{
		{single, checker.Unsafe},
		{checked, checker.Safe},
		{grant, checker.Unsafe},
		{quorum, checker.Safe},
		{quorumChecked, checker.Safe},
		{fenced, checker.Safe},
		{never, checker.Inconclusive},
	} {
		if got := s.Derived(tc.c); got.Verdict != tc.want || got.Search {
			t.Errorf("%s: derived %q (search %v), want %q", tc.c, got.Verdict, got.Search, tc.want)
		}
	}
}

// TestNotifiedWaitSearch: where a key is lost without a release (a
// failover, a server clock jump), a lock whose waiters wait for the
// release's message (notified_wait) is expected unsafe as a search, a
// polling single-instance lock unsafe outright; a fencing lock is a search
// in the cluster specs, whose faults may miss its counter's slot.
func TestNotifiedWaitSearch(t *testing.T) {
	single := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	notified := single
	notified.NotifiedWait = true
	fenced := single
	fenced.Fencing = true
	for _, tc := range []struct {
		spec   string
		c      lockimpl.Claims
		search bool
	}{
		{"cluster-failover-random", single, false},
		{"cluster-failover-random", notified, true},
		{"cluster-failover-random", fenced, true},
		{"cluster-minority-partition-random", fenced, true},
		{"failover-random", single, false},
		{"failover-random", notified, true},
		{"redlock-clock-jump-random", single, false},
		{"redlock-clock-jump-random", notified, true},
	} {
		s, err := Load(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		e := s.Derived(tc.c)
		if e.Verdict != checker.Unsafe || e.Search != tc.search {
			t.Errorf("%s, %s: derived %q search %v, want %q search %v", tc.spec, tc.c, e.Verdict, e.Search, checker.Unsafe, tc.search)
		}
	}
}

// TestExtendRecreates: quorum-rolling-restarts erodes a quorum lock's
// majority by restarts between its extends unless its extend sets the key
// again where it is missing (extend_recreates: redsync's
// WithSetNXOnExtend). A re-creation stays an extend only while the holder
// keeps a majority: a false success on extend is forbidden to every
// re-creating lock there, even one whose release is not owner-checked
// (whose defaults would permit it), and the single-instance re-take of its
// only node is one.
func TestExtendRecreates(t *testing.T) {
	quorum := lockimpl.Claims{Topology: lockimpl.Quorum, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	recreating := quorum
	recreating.ExtendRecreates = true
	bare := recreating
	bare.Release = lockimpl.UnconditionalRelease
	single := quorum
	single.Topology = lockimpl.SingleInstance
	singleRe := single
	singleRe.ExtendRecreates = true
	s, err := Load("quorum-rolling-restarts")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c      lockimpl.Claims
		want   string
		forbid bool // extend-false-success forbidden
	}{
		{quorum, checker.Unsafe, true},
		{recreating, checker.Safe, true},
		{bare, checker.Safe, true},
		{single, checker.Unsafe, true},
		{singleRe, checker.Safe, true},
	} {
		e := s.Derived(tc.c)
		if e.Verdict != tc.want {
			t.Errorf("%s: derived %q, want %q", tc.c, e.Verdict, tc.want)
		}
		for _, p := range s.PermissionsFor(e, tc.c) {
			if p.Kind == history.KindExtendFalseSuccess && p.Permitted == tc.forbid {
				t.Errorf("%s: extend-false-success permitted %v (%s), want %v", tc.c, p.Permitted, p.Why, !tc.forbid)
			}
		}
	}
}

// TestRenewalEvery: renewal-blips expects a renewing lock to ride out a
// blip when it renews every third of its TTL (the default, a lock that
// does not say) or more often, and a lost key (unsafe, a search: only a
// blip that meets a renewal shows it) when it renews every half of its TTL
// or later (redis-semaphore: every 0.8 of it).
func TestRenewalEvery(t *testing.T) {
	s, err := Load("renewal-blips")
	if err != nil {
		t.Fatal(err)
	}
	renews := lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease, Renewal: true}
	for _, tc := range []struct {
		every  float64
		want   string
		search bool
	}{
		{0, checker.Safe, false},
		{0.25, checker.Safe, false},
		{1.0 / 3, checker.Safe, false},
		{0.49, checker.Safe, false},
		{0.5, checker.Unsafe, true},
		{0.8, checker.Unsafe, true},
	} {
		c := renews
		c.RenewalEvery = tc.every
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if e := s.Derived(c); e.Verdict != tc.want || e.Search != tc.search {
			t.Errorf("renewal_every %v: derived %q search %v, want %q search %v", tc.every, e.Verdict, e.Search, tc.want, tc.search)
		}
	}
}

// TestLockstepPermission: quorum-lockstep permits lockstep retries only to
// a lock whose documents give it a fixed retry delay (fixed_retry_delay);
// a quorum lock taken to randomize its retries may not show them, and
// every lock is expected safe.
func TestLockstepPermission(t *testing.T) {
	quorum := lockimpl.Claims{Topology: lockimpl.Quorum, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease}
	fixed := quorum
	fixed.FixedRetryDelay = true
	s, err := Load("quorum-lockstep")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		c    lockimpl.Claims
		want bool
	}{
		{quorum, false},
		{fixed, true},
	} {
		e := s.Derived(tc.c)
		if e.Verdict != checker.Safe {
			t.Errorf("%s: derived %q, want safe", tc.c, e.Verdict)
		}
		for _, p := range s.PermissionsFor(e, tc.c) {
			if p.Kind == history.KindLockstepRetries && p.Permitted != tc.want {
				t.Errorf("%s: lockstep-retries permitted %v, want %v (%s)", tc.c, p.Permitted, tc.want, p.Why)
			}
		}
	}
}
