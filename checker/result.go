package checker

import "github.com/lockstorm/lockstorm/history"

// Verdict words, as the table prints them.
const (
	Safe         = "safe"
	Unsafe       = "unsafe"
	Deadlock     = "deadlock"
	Inconclusive = "inconclusive"
)

// Kinds of first violation (Result.FirstViolation).
const (
	ViolationOverlap    = "overlap"    // two holders of one key at once
	ViolationHarm       = "harm"       // a stale write, fence regression or duplicated fence
	ViolationStarvation = "starvation" // a key nobody could take for longer than the bound
	// ViolationFalseSuccess: a release acknowledged ok on a key that, by the
	// servers' events, was already gone or someone else's.
	ViolationFalseSuccess = "false-success"
)

// MaxSpans caps Result.OverlapSpans.
const MaxSpans = 100

// Hold is one client's belief that it held a key: from its acquire ok to the
// end of its critical section (its release invoke, its crash, or the end of
// the history).
type Hold struct {
	Process int    `json:"process"`
	Client  int    `json:"client"`
	Key     string `json:"key"`
	Token   string `json:"token,omitempty"`
	Fence   int64  `json:"fence,omitempty"`
	From    int64  `json:"from_ns"`
	To      int64  `json:"to_ns"`
	// Steps are the failpoints the process passed while acquiring, in order
	// (armed runs only): the interleaving in the documents' terms.
	Steps []string `json:"steps,omitempty"`
	// End says what ended the hold: "release" (its release invoke), "crash",
	// "abandon" (a careful client gave the critical section up because its
	// lease was over) or "end" (the end of the history).
	End string `json:"end,omitempty"`
	// Master is the server the client was talking to when it acquired
	// (Sentinel topology: where its failover client had connected last).
	Master string `json:"master,omitempty"`
}

// Witness is the first violation found: two holders of one key at once.
type Witness struct {
	Key    string `json:"key"`
	A      Hold   `json:"a"`
	B      Hold   `json:"b"`
	FromNs int64  `json:"from_ns"` // overlap start
	ToNs   int64  `json:"to_ns"`   // overlap end
	// Text tells the interleaving in one paragraph, for tables and JUnit.
	Text string `json:"text"`
}

// Result is everything the checks found in one history, one part per
// check (embedded: the JSON stays flat).
type Result struct {
	Verdict string `json:"verdict"`
	// Reason says in one line why the verdict is what it is.
	Reason string `json:"reason"`
	// FirstViolationNs is when the first violation began (-1: none): for a
	// deadlock, the start of the first starvation longer than the bound;
	// otherwise the earliest overlap or harm to the resource (on a safe
	// fenced run, the overlap the resource survived). FirstViolation names
	// its kind (ViolationOverlap, ViolationHarm, ViolationStarvation).
	FirstViolationNs int64  `json:"first_violation_ns"`
	FirstViolation   string `json:"first_violation,omitempty"`

	Exclusion
	Validity
	Evidence
	Resource
	KeyEvents
	Liveness
	Stalls

	// DurationNs is the time of the history's last entry.
	DurationNs int64 `json:"duration_ns"`

	// Findings are the kinds of wrong the run showed, each with its count,
	// first time and witness, in the order of Kinds. Which kinds are
	// permitted is the expectation's to say (Options.Permissions, from the
	// spec and the lock's claims); the checker only applies it (Permit) to
	// set Finding.Permitted, every finding permitted when it is nil.
	Findings []Finding `json:"findings,omitempty"`
}

// Exclusion is what the mutual-exclusion checks found: the overlap pass's
// holders and porcupine's pieces.
type Exclusion struct {
	Linearizable string   `json:"linearizable"` // ok, illegal or unknown (porcupine)
	Overlaps     int      `json:"overlaps"`     // pairs of overlapping holds
	Witness      *Witness `json:"witness,omitempty"`
	// OverlapIntervals is how many clusters of overlapping holds there were,
	// per key, summed over keys: holds merged as intervals are (a hold that
	// begins before the cluster's last end joins it), clusters of two or
	// more holds counted. OverlapNs is the total time during which a key had
	// two or more holders. One long stale hold across sixty short ones is
	// sixty pairs (Overlaps) but one interval.
	OverlapIntervals int   `json:"overlap_intervals"`
	OverlapNs        int64 `json:"overlap_ns"`
	// OverlapSpans are the first MaxSpans of those clusters, by start.
	OverlapSpans []Span `json:"overlap_spans,omitempty"`
	// Holds is how many holds (definite acquire ok to end of critical
	// section, reentrant acquisitions counted once) the history has.
	Holds int `json:"holds"`
	// Pieces is how many pieces porcupine checked; TimedOutPieces how many
	// of them ran out of time (which makes the verdict inconclusive).
	Pieces         int `json:"pieces"`
	TimedOutPieces int `json:"timed_out_pieces,omitempty"`
	// Disagreements counts pieces where porcupine and the overlap pass
	// disagree. Both encode the same belief model: anything but 0 is a
	// checker bug.
	Disagreements int `json:"disagreements,omitempty"`
}

// Validity is what the history's validation found.
type Validity struct {
	// Malformed counts the history's problems (history.Validate): unreadable
	// lines, duplicates, a completion without its invoke, an invoke while
	// the process has an operation in flight, a missing end record. With
	// any, only an unsafe verdict stands; anything else is inconclusive.
	Malformed int `json:"malformed,omitempty"`
	// Problems are the first of them, by line.
	Problems []history.Problem `json:"problems,omitempty"`
}

// Evidence is what the run exercised.
type Evidence struct {
	// Gaps lists what the run did not exercise (no
	// holds on a key, most attempts failing, a fault that applied to
	// nothing, a heal that failed, a failpoint short of its schedule); with
	// any, a verdict that would be safe is inconclusive.
	Gaps []string `json:"gaps,omitempty"`
	// GapsByHarness counts the gaps the harness's own lateness (or the
	// servers' silence) alone explains; when every gap is one, the
	// inconclusive verdict is the harness's (ByHarness).
	GapsByHarness int `json:"gaps_by_harness,omitempty"`
	// ErrorReplies counts operations the server refused with an error reply.
	ErrorReplies int `json:"error_replies"`
	// FaultsFailed counts fault starts that applied to nothing; HealsFailed
	// heals that failed.
	FaultsFailed int `json:"faults_failed,omitempty"`
	HealsFailed  int `json:"heals_failed,omitempty"`
	// Failpoints says how often each armed failpoint action fired.
	Failpoints []FailpointCount `json:"failpoints,omitempty"`
}

// Resource is what the counter resource shows: its writes, stale ones and
// fences.
type Resource struct {
	AckedWrites int64 `json:"acked_writes"`
	FinalValue  int64 `json:"final_value"`
	// NetLostUpdates is acknowledged writes minus the final value, summed
	// over keys: the counter's net shortfall. It depends on what the stale
	// writes overwrote (one stale write of 1 over 60 counts 60); StaleWrites
	// counts the events.
	NetLostUpdates int64 `json:"net_lost_updates"`
	// StaleWrites counts acknowledged writes made with a stale view of the
	// resource: the value written (read+1) was not above the value of the
	// key's latest acknowledged write before it (completion order), so the
	// writer's read was older than what the counter held when it wrote.
	StaleWrites int `json:"stale_writes"`
	// FenceRegressions counts writes accepted with a fence not above the
	// greatest fence accepted before on the key (a fencing bug).
	FenceRegressions int `json:"fence_regressions"`
	DupFences        int `json:"dup_fences"`      // fencing tokens issued to two holders
	Rejected         int `json:"rejected_writes"` // writes the fenced resource refused (stale tokens)
	// Harm describes the first harmful write (or duplicated fence), if any.
	Harm string `json:"harm,omitempty"`
}

// KeyEvents is what the servers' key events show: false successes of
// releases and extends, and how far behind the observers were.
type KeyEvents struct {
	// FalseSuccesses counts releases acknowledged ok while, by the servers'
	// key events, the key was already gone or someone else's;
	// FalseSuccess tells the first. ServerEvents is how many key events
	// the servers reported (0: no observer, e.g. the embedded backend).
	FalseSuccesses int    `json:"false_successes,omitempty"`
	FalseSuccess   string `json:"false_success,omitempty"`
	ServerEvents   int    `json:"server_events,omitempty"`
	// FalseSuccessUnjudged counts releases acknowledged ok that the
	// servers' events would have shown false, had the observers' view been
	// complete up to the release's end: a node's stream had no sync after
	// it (the observer was behind, or stopped). They are neither flagged
	// nor cleared; FalseSuccessUnjudgedWhy tells the first.
	FalseSuccessUnjudged int `json:"false_success_unjudged,omitempty"`
	// FalseSuccessesWithoutStalls counts the false successes (of
	// FalseSuccesses) that stay false when each release is moved earlier
	// by the harness's own stalls in its hold: only those are the lock's.
	FalseSuccessesWithoutStalls int    `json:"false_successes_without_stalls,omitempty"`
	FalseSuccessUnjudgedWhy     string `json:"false_success_unjudged_why,omitempty"`
	// Extends counts extends and watchdog renewals invoked (FExtend), and
	// ExtendsOK, ExtendsFailed, ExtendsUnknown their outcomes.
	Extends        int `json:"extends,omitempty"`
	ExtendsOK      int `json:"extends_ok,omitempty"`
	ExtendsFailed  int `json:"extends_failed,omitempty"`
	ExtendsUnknown int `json:"extends_unknown,omitempty"`
	// ExtendFalseSuccesses counts the false successes (of FalseSuccesses)
	// that were extends or renewals. ForeignRenewals counts those whose key
	// was another holder's throughout; ForeignRenewal tells the first.
	ExtendFalseSuccesses int    `json:"extend_false_successes,omitempty"`
	ForeignRenewals      int    `json:"foreign_renewals,omitempty"`
	ForeignRenewal       string `json:"foreign_renewal,omitempty"`
	// ObserverSyncs counts the observers' barriers (FSync entries);
	// ObserverLagMaxMs and ObserverLagP99Ms are their round trips: how far
	// behind the servers the observers' view was.
	ObserverSyncs    int     `json:"observer_syncs,omitempty"`
	ObserverLagMaxMs float64 `json:"observer_lag_max_ms,omitempty"`
	ObserverLagP99Ms float64 `json:"observer_lag_p99_ms,omitempty"`
	// FalseRefusals counts releases and extends answered with a definite
	// "not held" while, by the servers' key events, the key stood as the
	// caller's on every node throughout (keyevents.FalseRefusals).
	FalseRefusals int `json:"false_refusals,omitempty"`
	// ReleaseResends counts commands a client sent a node again within one
	// release after the node had answered them definitively, with no fault
	// on the client or the node between; ReleaseResendsExcused those a
	// fault or a possibly earlier decision excused (checker/resend.go).
	ReleaseResends        int `json:"release_resends,omitempty"`
	ReleaseResendsExcused int `json:"release_resends_excused,omitempty"`
}

// Liveness is what the liveness checks measured: acquisitions, waits and
// starvation.
type Liveness struct {
	Acquired      int     `json:"acquired"`
	Attempts      int     `json:"attempts"`
	Unknown       int     `json:"unknown"`
	AcquireP50Ms  float64 `json:"acquire_p50_ms"`
	AcquireP99Ms  float64 `json:"acquire_p99_ms"`
	HandoffP50Ms  float64 `json:"handoff_p50_ms"` // release ok → next acquire ok on the key
	HandoffMaxMs  float64 `json:"handoff_max_ms"`
	Fairness      float64 `json:"fairness"` // Jain's index of acquisitions per client
	LongestWaitMs float64 `json:"longest_wait_ms"`
	// LongestStarvedMs is the longest time a key had acquisitions attempted
	// and none granted (the deadlock measure).
	LongestStarvedMs float64 `json:"longest_starved_ms"`
	// StarvedKey is the key of LongestStarvedMs, StarvedFromNs when that
	// starvation began.
	StarvedKey    string `json:"starved_key,omitempty"`
	StarvedFromNs int64  `json:"starved_from_ns,omitempty"`
	// StarvedNetMs is the longest starvation net of the harness's own
	// stalls inside it (and of the moments every client that wanted the
	// key was late by its own lag): the figure the deadlock verdict
	// compares with the bound. HarnessStalls, HarnessStallMaxMs and
	// HarnessStallTotalMs are the times the harness's process was not
	// scheduled (FStall entries of client -1).
	StarvedNetMs float64 `json:"starved_net_ms,omitempty"`
	// ServersSilentMs is how long every server was silent at once, by the
	// observers' syncs (unanswered past their usual round trip, see
	// silence.go): no lock could be granted then, so a starvation within
	// the bound without it is inconclusive, never a deadlock.
	ServersSilentMs float64 `json:"servers_silent_ms,omitempty"`
}

// Stalls are the harness's own lateness (its process's stalls, its
// clients' own lags) and what the violations are without it.
type Stalls struct {
	// OverlapsWithoutStalls counts the overlapping pairs left when every
	// hold is shortened by the harness's stalls and its own client's lag
	// inside it (Overlaps when there were none): 0 while Overlaps > 0
	// makes the run inconclusive.
	OverlapsWithoutStalls int `json:"overlaps_without_stalls"`
	// OverlapsStaleStamps counts the overlapping pairs, left out of
	// OverlapsWithoutStalls, that only a stamp made stale by the harness's
	// lateness explains (history.Options.StampLease; see stale_stamp.go).
	OverlapsStaleStamps int `json:"overlaps_stale_stamps,omitempty"`
	// HoldsCutAtRenewal counts the holds that, for
	// OverlapsWithoutStalls, count only up to a renewal the harness's
	// lateness may have made fail (sent late, or its outcome unknown while
	// the harness was late): a renewing hold's lapse rests on it.
	HoldsCutAtRenewal int `json:"holds_cut_at_renewal,omitempty"`
	HarnessStalls     int `json:"harness_stalls,omitempty"`
	// ByHarness: the verdict is inconclusive because of the harness's own
	// stalls and its clients' own lag alone (every violation, or the
	// starvation past the bound, goes away without them). Such a run says
	// nothing about the lock; a runner may run it again
	// (scenarios.Config.Rejudge).
	ByHarness           bool    `json:"by_harness,omitempty"`
	HarnessStallMaxMs   float64 `json:"harness_stall_max_ms,omitempty"`
	HarnessStallTotalMs float64 `json:"harness_stall_total_ms,omitempty"`
	// ClientLags counts the clients' own lags (FStall entries naming a
	// client: a sleep the harness owns in that client's loop woke late
	// while the rest of the process ran); ClientLagMaxMs is the longest,
	// of client ClientLagMaxClient, and ClientLagTotalMs their sum over
	// every client.
	ClientLags         int     `json:"client_lags,omitempty"`
	ClientLagMaxMs     float64 `json:"client_lag_max_ms,omitempty"`
	ClientLagMaxClient *int    `json:"client_lag_max_client,omitempty"`
	ClientLagTotalMs   float64 `json:"client_lag_total_ms,omitempty"`
}
