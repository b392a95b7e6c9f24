// Package keyevents judges the operations of a history by the servers' own
// key events and the observers' syncs: false successes on release and
// extend (falsesuccess.go) and leaks (leak.go), each concluded only from
// orderings that are certain. It knows no history entry: the checker's
// pass hands it the events, the releases and the owners as records of
// their own (Input), and writes what it finds on its Result.
package keyevents

import (
	"fmt"
	"time"
)

// Event is one server key event or one observer sync, as received.
type Event struct {
	Time int64
	// Sync: an observer's barrier on the node's stream, whose PING was
	// sent at N; otherwise a key event.
	Sync bool
	N    int64
	Node string
	Key  string
	// Value is the event ("set", "del", "expired", ...); Owner is the
	// token the observer read after a set ("": not read).
	Value, Owner string
}

// Release is a release or an extend acknowledged ok: both say "the lock
// was mine when I acted", and the servers' events judge both alike.
type Release struct {
	F               string // the operation, as the history names it
	Extend          bool   // an extend or renewal, not a release
	Process, Client int
	Key             string
	Token           string
	Invoke, Done    int64
}

// AmbiguousOwner marks a token granted to more than one client in
// Input.Owners.
const AmbiguousOwner = -1

// Input is what the judgements read.
type Input struct {
	// Nodes are the nodes with a stream, in order; Streams each node's key
	// events and syncs in that node's order.
	Nodes   []string
	Streams map[string][]*Event
	// Releases are the releases and extends acknowledged ok; Refusals
	// those answered with a definite "not held" (no error reply).
	Releases []Release
	Refusals []Release
	// Owners maps an acquire's token to the client it was granted to
	// (AmbiguousOwner: to several).
	Owners map[string]int
	// StampTokens: values name no writer (history.Options.StampTokens).
	StampTokens bool

	// For false successes: whether the history recorded any lateness of
	// the harness; LateIn how long client was late within [from, to) (the
	// harness's stalls and the client's own lag); HoldStart when the hold
	// a release of client on key invoked at t ended began: the earlier of
	// its acquire's invoke and its grant (t when there is no such hold).
	AnyStall  bool
	LateIn    func(client int, from, to int64) int64
	HoldStart func(key string, client int, t int64) int64

	// For leaks: Quorum and OrphanBound as history.Options say; Failed the
	// acquires that ended without a grant, by key; BeliefEnd when the last
	// client that believed in each (key, token) stopped (Leaks adds a lost
	// acquire's end in a map of its own, leaving this one as it was).
	Quorum      bool
	OrphanBound time.Duration
	Failed      map[string][]FailedAcquire
	BeliefEnd   map[[2]string]int64
}

// ms formats a time in ms, as the checker's sentences do.
func ms(ns int64) string { return fmt.Sprintf("%.1f ms", float64(ns)/1e6) }
