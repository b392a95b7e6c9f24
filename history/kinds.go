package history

import "slices"

// Kind is one kind of wrong a lock can show. A run's result lists each kind
// it showed as a checker.Finding; an expectation says which kinds a lock may
// show in a scenario (the rest fail the run wherever they appear, even inside
// a run whose overlap was expected), and the history's header records it
// (Options.Permissions).
type Kind string

// The kinds, in the order checker.Result.Findings lists them.
const (
	// KindTwoHolders: two clients held one key at once (by their own
	// definite grants), not explained by the harness's own stalls.
	KindTwoHolders Kind = "two-holders"
	// KindHarm: the resource was harmed: a stale write, a fence that went
	// back, a fence granted twice, or updates lost.
	KindHarm Kind = "harm"
	// KindReleaseFalseSuccess: a release acknowledged ok on a key that, by
	// the servers' events, was already gone or someone else's.
	KindReleaseFalseSuccess Kind = "release-false-success"
	// KindExtendFalseSuccess: an extend or a watchdog's renewal
	// acknowledged ok on a key that was not the extender's (a foreign
	// renewal, one that extended another holder's key, included).
	KindExtendFalseSuccess Kind = "extend-false-success"
	// KindReleaseNotFreed: a release acknowledged ok whose key stood as the
	// releaser's across it.
	KindReleaseNotFreed Kind = "release-not-freed"
	// KindLostAcquire: an acquire that reported a definite failure while
	// its set landed and held the key after it returned.
	KindLostAcquire Kind = "lost-acquire"
	// KindLostAcquireUnknown: the same after an acquire whose outcome was
	// unknown (a lost reply): honest, but the key leaks until its TTL.
	KindLostAcquireUnknown Kind = "lost-acquire-unknown"
	// KindStarvation: a key nobody could take for longer than the deadlock
	// bound while acquisitions were attempted.
	KindStarvation Kind = "starvation"
	// KindOrphanedKey: a key that stayed set for longer than the orphan
	// bound after the last client that believed in it stopped.
	KindOrphanedKey Kind = "orphaned-key"
	// KindNeedlessWait: an acquire stayed pending for longer than the
	// scenario's wait bound while, by the servers' key events, the key was
	// free on the nodes a grant needs and nobody held it (a lost wake-up,
	// a waiter asleep to its timeout), the harness's stalls, the client's
	// own lag and pauses and the servers' silences aside.
	KindNeedlessWait Kind = "needless-wait"
	// KindLockstepRetries: contenders whose tries, by the servers' key
	// events, began within the scenario's lockstep window of each other and
	// split the nodes with no majority for anyone, round after round (as
	// many as the scenario's lockstep rounds) while nobody held the key.
	KindLockstepRetries Kind = "lockstep-retries"
	// KindRetryCadence: a waiter's tries within one acquire, none on a
	// fault's or a stall's path, that did not follow the pacing its lock
	// declares (backoff_growth): their gaps never grew where the claim
	// says they grow.
	KindRetryCadence Kind = "retry-cadence"
	// KindExtendGaveUp: an extend that reported an unknown outcome after
	// a single try, on a lock that declares it retries such tries
	// (extend_retries), while half its lease was left.
	KindExtendGaveUp Kind = "extend-gave-up"
	// KindReleaseRetries: within one release, the client sent a command
	// to a node again after that node had answered it definitively, with
	// no fault on the client or the node between the answer and the
	// resend: the answer was known, and asking again only spends the
	// release's time (a retry loop that counts a "not held" as a vote
	// against).
	KindReleaseRetries Kind = "release-retries"
	// KindFalseRefusal: a release or an extend answered with a definite
	// "not held" while, by the servers' key events, the key certainly
	// stood as the caller's on every node for the whole operation: the
	// caller gives the lease up while the key leaks until its TTL.
	KindFalseRefusal Kind = "false-refusal"
	// KindEarlyGiveUp: an acquire answered with a definite "not
	// acquired" before its wait timeout had passed, on a lock that
	// declares it waits the timeout out (waits_out), with no fault on the
	// client while it waited (a clock fault can run its timer fast): the
	// waiter gave up with time left (Spring GH-3700: a waiter that lost
	// the race after an unlock notification returned false at once).
	KindEarlyGiveUp Kind = "early-give-up"
)

// Kinds are every kind, in order.
var Kinds = []Kind{KindTwoHolders, KindHarm, KindReleaseFalseSuccess, KindExtendFalseSuccess,
	KindReleaseNotFreed, KindLostAcquire, KindLostAcquireUnknown, KindStarvation, KindOrphanedKey,
	KindNeedlessWait, KindLockstepRetries, KindRetryCadence, KindExtendGaveUp, KindReleaseRetries, KindFalseRefusal, KindEarlyGiveUp}

// KnownKind says k is one of Kinds.
func KnownKind(k string) bool { return slices.Contains(Kinds, Kind(k)) }

// Permission says whether one kind of finding may appear in a run, and why.
type Permission struct {
	Kind      Kind   `json:"kind"`
	Permitted bool   `json:"permitted"`
	Why       string `json:"why,omitempty"`
}
