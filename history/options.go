package history

import "time"

// Options tune the checker's judgement of a history. They live with the
// history because its header records them (Meta.Options): a history file
// says how it is to be judged.
type Options struct {
	// Fenced says the resource checks fencing tokens: overlapping holders are
	// then reported but are not by themselves unsafe; harm to the resource is.
	Fenced bool
	// DeadlockBound: a key on which acquisitions were attempted and none
	// succeeded for longer than this is a liveness failure (0: 10 s).
	DeadlockBound time.Duration
	// Timeout bounds each porcupine check of one piece of one key's history;
	// a piece that runs out is inconclusive, never safe (0: 10 s).
	Timeout time.Duration
	// StampTokens says the lock's values are times its clients computed
	// (client-clock expiry, whole seconds): two clients can write the same
	// value, a loser's overwrite among them, so a value names no writer.
	// The false-success check then concludes only from the key's end
	// (del, expiry), never from who seems to have set it.
	StampTokens bool `json:",omitempty"`
	// StampLease, with StampTokens, is the lease a stamp stands for (the
	// lock's TTL). A client that computed its stamp, was kept from running
	// by the harness for a whole lease and then wrote it, wrote a stamp
	// already past for everyone, as if its clock ran a lease behind: an
	// overlap that only such a stamp explains is the harness's (see
	// checker's staleStamp). 0: no overlap is excused so.
	StampLease time.Duration `json:",omitempty"`
	// ScheduleLease, when set, is the lease a scheduled run's interleaving
	// is timed against (its TTL). A safe verdict is earned only when the
	// harness never stalled that long at once: through such a stall a
	// lease could expire, and a schedule's steps happen, unseen and out of
	// order (a holder's delayed release and the waiters' takeover falling
	// due in the same stall, the release first), so the run may never have
	// made the interleaving it exists for. It is then inconclusive.
	ScheduleLease time.Duration `json:",omitempty"`
	// Quorum says the lock's state lives on a majority of independent
	// masters: a key stands as the lock when it stands on a majority of
	// the nodes (the leak checks, checker/internal/keyevents); otherwise every node that had
	// the token must agree.
	Quorum bool `json:",omitempty"`
	// OrphanBound, when set, is how long a key may stay set to a token
	// after the last client that believed in it stopped (released,
	// crashed, gave up, failed to acquire) before it is an orphaned key:
	// the longest the lock's own expiry should take, plus the server's
	// expiry cycle. 0: orphans are not judged.
	OrphanBound time.Duration `json:",omitempty"`
	// WaitBound, when set, is how long an acquire may stay pending while
	// the key is free on the nodes a grant needs and nobody holds it,
	// before it is a needless wait (the scenario's wait_bound). 0: needless
	// waits are not judged.
	WaitBound time.Duration `json:",omitempty"`
	// LockstepWithin and LockstepRounds, when both set, judge lockstep
	// retries: tries of different contenders that began within
	// LockstepWithin of each other and split the nodes with no majority,
	// LockstepRounds rounds in a row with no grant between (the
	// scenario's lockstep_within and lockstep_rounds). 0: not judged.
	LockstepWithin time.Duration `json:",omitempty"`
	LockstepRounds int           `json:",omitempty"`
	// BackoffGrowth and BackoffCap, when set, are the pacing a lock
	// declares for a waiter's tries within one acquire (claims
	// backoff_growth and backoff_cap, the cap as a time): each delay
	// grows by BackoffGrowth over the last until BackoffCap. 0: retry
	// cadence is not judged.
	BackoffGrowth float64       `json:",omitempty"`
	BackoffCap    time.Duration `json:",omitempty"`
	// ExtendRetryLease, when set, says the lock retries an extend whose
	// try got no definite answer (claim extend_retries), and is the lease
	// an extend renews (the TTL): an extend that gave up after one try
	// while half of it was left is judged. 0: not judged.
	ExtendRetryLease time.Duration `json:",omitempty"`
	// WaitOut, when set, says the lock refuses an acquire only once this
	// wait timeout has passed (claim waits_out): a refusal sooner is
	// judged. 0: not judged.
	WaitOut time.Duration `json:",omitempty"`
	// Permissions say which kinds of finding the run may show (the
	// expectation's, see scenarios/spec Permissions); checker.Check marks each
	// finding with its own (checker.Result.Permit).
	Permissions []Permission `json:",omitempty"`
}
