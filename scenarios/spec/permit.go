package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// Facts are what a scenario's faults do that decides which kinds of wrong
// a correct lock may still show in it (Permissions).
type Facts struct {
	// Crashes: clients vanish holding what they hold.
	Crashes bool `json:"crashes,omitempty"`
	// ServerTime: a server is frozen, killed, failed over or has its clock
	// moved, so its own expiry of a key is stopped, lost or shifted.
	ServerTime bool `json:"server_time,omitempty"`
	// Network: replies are lost or links cut, so a lock cannot always learn
	// what its command did, nor clean up on a node it cannot reach.
	Network bool `json:"network,omitempty"`
}

// FactsOf reads the facts from the spec's faults, failpoints, exploration
// and topology.
func (s *Spec) FactsOf() Facts {
	var f Facts
	for _, fl := range s.AllFaults() {
		switch fl.Kind {
		case "crash":
			f.Crashes = true
		case "kill", "kill-synced", "server-pause", "server-clock", "failover":
			f.ServerTime = true
		case "latency", "partition", "blackhole", "lost-reply", "reset", "bandwidth", "split-votes":
			f.Network = true
		}
	}
	for _, fp := range s.Failpoints {
		f.Crashes = f.Crashes || fp.Crash
		f.Network = f.Network || fp.LoseReply
	}
	if e := s.Explore; e != nil {
		f.Crashes = f.Crashes || slices.Contains(e.Actions, ExploreCrash)
		f.Network = f.Network || slices.Contains(e.Actions, ExploreLoseReply)
	}
	if s.Sentinel != nil {
		f.ServerTime = true
	}
	return f
}

// Permissions says, for every kind of finding, whether a lock with claims c
// may show it in a run expected to give exp.Verdict under a scenario with
// facts f, and why. The defaults come from the claims, so a user's lock is
// judged per kind without writing anything; a derive rule's permit and
// forbid lists override them for the locks it matches.
func Permissions(exp Expectation, c lockimpl.Claims, f Facts) []history.Permission {
	v := exp.Verdict
	var out []history.Permission
	add := func(k history.Kind, ok bool, yes, no string) {
		why := no
		if ok {
			why = yes
		}
		out = append(out, history.Permission{Kind: k, Permitted: ok, Why: why})
	}
	fenced := c.Fencing
	add(history.KindTwoHolders, v == checker.Unsafe || fenced,
		map[bool]string{true: "fencing tokens make an overlap harmless: the resource judges", false: "the scenario expects two holders"}[fenced && v != checker.Unsafe],
		"the scenario expects mutual exclusion to hold")
	add(history.KindHarm, v == checker.Unsafe, "the scenario expects the resource to be harmed", "the scenario expects the resource to stay correct")
	owner := c.Release == lockimpl.OwnerCheckedRelease
	add(history.KindReleaseFalseSuccess, !owner || c.AbsentReleaseOK,
		map[bool]string{true: "its release reports ok on a key already gone (absent_release_ok)",
			false: fmt.Sprintf("release is %s: it may act on a key that is no longer its own", c.Release)}[owner],
		"release is owner-checked: it must not report ok on a key that is not its own")
	add(history.KindExtendFalseSuccess, !owner, fmt.Sprintf("release is %s, and so its extends may be", c.Release),
		"the lock checks its owner: an extend or renewal must not report ok on a key that is not its own")
	freeing := c.Release == lockimpl.OwnerCheckedRelease || c.Release == lockimpl.UnconditionalRelease
	reentered := c.Reentrant && f.Network
	add(history.KindReleaseNotFreed, !freeing || reentered,
		map[bool]string{false: fmt.Sprintf("release is %s: it may leave a live key to its TTL", c.Release),
			true: "a reentrant lock's acquire retried after a lost reply re-enters its own key: one release leaves it held to its TTL"}[reentered],
		fmt.Sprintf("release is %s: a release that reports ok must free the key", c.Release))
	// Redlock counts a node that did not answer within its timeout as not
	// won and unwinds on a best-effort basis: a SET still in flight (on a
	// late reply, a lost one, a cut link) can land after the unwind's
	// delete, and the key then waits out its TTL (the distlock page's
	// stated cost). Seen on client-clock-jump-random × redlock on a loaded
	// machine: SETs to three nodes answered after the node timeout, the
	// unwind's deletes found nothing, the SETs landed.
	add(history.KindLostAcquire, c.Topology == lockimpl.Quorum,
		"a quorum lock counts a node that did not answer in time as not won, and its unwind cannot stop a SET still in flight",
		"an acquire that reports failure must leave the key free")
	add(history.KindLostAcquireUnknown, true, "an unknown outcome is honest: the key leaks until its TTL", "")
	orphanOK := v == checker.Deadlock || f.ServerTime ||
		f.Crashes && (c.Expiry == lockimpl.NoExpiry || c.Expiry == lockimpl.SeparateExpiry)
	add(history.KindOrphanedKey, orphanOK,
		"the scenario stops, moves or kills a server's clock, or crashes holders of a lock whose key may never expire",
		"a key must not outlive its last holder by more than its TTL")
	add(history.KindStarvation, v == checker.Deadlock, "the scenario expects a deadlock", "the scenario expects the lock to stay live")
	// Judged only where the scenario sets its bound (wait_bound,
	// lockstep_within and lockstep_rounds): no claim says a lock may leave
	// a waiter asleep on a free key, or contenders in lockstep.
	add(history.KindNeedlessWait, false, "", "a waiter must take a lock freed on its nodes within the scenario's wait bound")
	add(history.KindLockstepRetries, false, "", "contenders must not split a quorum round after round in lockstep (the Redlock page's random retry delay)")
	// Judged only where the lock declares them (backoff_growth,
	// extend_retries): the lock's own word on how it retries.
	add(history.KindRetryCadence, false, "", "the lock declares how its delay between tries grows (backoff_growth): a waiter's tries must follow it")
	add(history.KindExtendGaveUp, false, "", "the lock declares its extend retries a try with no definite answer (extend_retries): it must not give up after one while its lease has room")
	add(history.KindEarlyGiveUp, false, "", "the lock declares it waits its wait timeout out (waits_out): it must not refuse an acquire sooner")
	// No claim says a lock may ask a node again what it has already
	// answered, nor refuse a release on a key that is still the caller's:
	// both are judged only on what the clients saw (a definite answer, no
	// fault between) and on certain orderings of the key events.
	add(history.KindReleaseRetries, false, "", "a release must not send a node again what it already answered definitively (no fault between)")
	add(history.KindFalseRefusal, false, "", "a release or extend must not answer \"not held\" while the key stands as the caller's")
	return out
}

// withRule applies a derive rule's permit and forbid lists.
func withRule(ps []history.Permission, r *Rule) []history.Permission {
	if r == nil {
		return ps
	}
	for i := range ps {
		k := string(ps[i].Kind)
		switch {
		case slices.Contains(r.Forbid, k):
			ps[i].Permitted, ps[i].Why = false, "the scenario's rule forbids it: "+r.Because
		case slices.Contains(r.Permit, k):
			ps[i].Permitted, ps[i].Why = true, "the scenario's rule permits it: "+r.Because
		}
	}
	return ps
}

// validateKinds checks a rule's permit or forbid list.
func (v *validation) validateKinds(field string, ks OneOf) error {
	for i, k := range ks {
		if !history.KnownKind(k) {
			names := make([]string, len(history.Kinds))
			for j, kk := range history.Kinds {
				names[j] = string(kk)
			}
			return v.bad(fmt.Sprintf("%s.%d", field, i), "unknown kind %q (known: %s)", k, strings.Join(names, ", "))
		}
	}
	return nil
}

// PermissionsFor is Permissions for the lock with claims c under this
// spec's facts, with the permit and forbid lists of the derive rule that
// matches c (the first, as Derived).
func (s *Spec) PermissionsFor(exp Expectation, c lockimpl.Claims) []history.Permission {
	ps := Permissions(exp, c, s.FactsOf())
	if !c.Declared() {
		return ps
	}
	for i := range s.Derive {
		if s.Derive[i].Matches(c) {
			return withRule(ps, &s.Derive[i])
		}
	}
	return ps
}
