// Package history is a run's record: its entries (Op, one per line of
// history.jsonl), their types and functions, the header that says what the
// run was asked to do (Meta), the Recorder that appends them as the run
// goes, the JSONL form, the rules a well-formed history keeps (Validate)
// and synthetic histories for benchmarks and tests.
package history

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Type is the kind of a history entry, as in Jepsen.
type Type string

// Entry types. An operation is an Invoke followed by exactly one of Ok, Fail
// or Info; Info means the outcome is unknown (a timeout, a lost connection).
const (
	Invoke Type = "invoke"
	Ok     Type = "ok"
	Fail   Type = "fail"
	Info   Type = "info"
)

// Functions recorded in a history.
const (
	FAcquire = "acquire"
	FRelease = "release"
	// FExtend is an extend of a held lock (Locker's optional Extend, called
	// by the workload) or a watchdog's renewal: invoke, then ok / fail /
	// info like an acquire. Value is the lease's token; N numbers the
	// extend within its client (invoke and completion carry the same N),
	// because a watchdog renews concurrently with its client's other
	// operations: an extend does not occupy its process's one operation in
	// flight, and is paired with its completion by (client, N).
	FExtend = "extend"
	FRead   = "read"  // the critical section reads the counter resource
	FWrite  = "write" // the critical section writes the counter resource
	FStep   = "step"  // a failpoint reached (armed runs only); Value is its name
	FLost   = "lost"  // the implementation reported the lock lost (watchdog): histories of earlier versions; a careful client now records an abandon, a careless one nothing
	FCrash  = "crash" // the client vanished
	// FAbandon: a careful client found its lease over (validity elapsed on
	// its own clock, or the lock reported lost) and gave up its critical
	// section without touching the resource again; Error says why. The hold
	// ends there.
	FAbandon = "abandon"
	// FStart is a fault beginning (process NemesisProcess). Value
	// describes the fault and what it applied to; Targets lists the
	// targets; N is the fault's id, shared with its FStop. The contract a
	// checker relies on:
	//   - Type Ok: the fault applied to at least one target (Targets.Count() >= 1).
	//   - Type Fail: it applied to nothing, with Error "applied to nothing"
	//     (every target it names is missing in the run, or its pick found
	//     none) or the injection's error; no FStop follows.
	// So a start entry of Type Fail, or with zero targets, means the fault
	// applied to nothing and the run did not face it.
	FStart = "start"
	// FStop is a fault healing, with the Value and N of its FStart. Type Ok:
	// healed; Type Fail: the heal failed (Error says why) and the run went on
	// under a fault it believed gone. A fault that lasts to the end of the
	// run heals (and gets its FStop) when the run ends.
	FStop = "stop"
	FEnd  = "end"  // the runner's last entry: a history without it was cut short
	FMeta = "meta" // the runner's first entry: what the run was asked to do (Op.Meta)
	// FServer is a server's key event (process ServerProcess): Value is the
	// event (set, del, expired, evicted, expire, hset, ...), Node the node,
	// Owner the key's value after a set when the observer could read it
	// exactly (empty: unknown). Its time is when the harness received it,
	// after the server executed it.
	FServer = "server"
	// GapEvent is the Value of an FServer entry an observer records on each
	// key it watches when its connection to the node ended before the run
	// did (the node restarted or was killed): until the observer subscribed
	// again nothing the node did is in the stream, and a restart empties
	// the node without an event. Checks read it as a change of the key to
	// a value nobody read (a set whose owner is unknown).
	GapEvent = "gap"
	// FSync is an observer's barrier on one node's event stream (process
	// ServerProcess, Node set): the observer sent PING at N (ns since the
	// run started) on its subscription connection and received the reply at
	// Time. Redis answers a connection in the order it generates output, so
	// every event the node executed before the PING ran is in the stream
	// before this entry, and every event after it ran after N. Time - N is
	// the observer's lag at that moment.
	FSync = "sync"
	// FStall is the harness running late (process NemesisProcess), for N
	// ns (N > 0) up to Time. Client -1: the harness's whole process was not
	// scheduled (a GC pause, a busy machine, a SIGSTOP), and neither were
	// its clients. Client c >= 0: client c alone was late, a sleep the
	// harness owns in its loop (its hold, think time, back-off) woke N ns
	// after it was due while the rest of the process ran, or a pause of c
	// was healed N ns late; it is recorded only where lateness can only
	// delay that client (see checker/lag.go).
	FStall = "stall"
	// FSentinel is an event from a Sentinel's own event stream (process
	// NemesisProcess); Value is "s1 +switch-master n1 n1 r1".
	FSentinel = "sentinel"
	// FMaster says which server a client's connection went to (process
	// NemesisProcess, Client set, Value the server's name), recorded when
	// it changes; Sentinel topology only.
	FMaster = "master"
	// FResend is a command a client sent to a node again within one
	// release after that node had answered the same command definitively
	// (a reply, not an error or a timeout) in the same release (client
	// process Ok entry, no invoke): Key is the release's key, Node the
	// node, Value the command's label (SCRIPT:1a2b3c4d, DEL), Fence when
	// the answered command was sent, N when its answer reached the client,
	// Time when it was sent again.
	FResend = "resend"
)

// NemesisProcess is the process id of fault entries.
const NemesisProcess = -1

// FinalProcess is the process id of the harness's own entries: the header
// (FMeta), the final reads of each key's counter, appended after every
// client stopped, and the end record (FEnd).
const FinalProcess = -2

// ServerProcess is the process id of the servers' key events.
const ServerProcess = -3

// Op is one history entry.
type Op struct {
	Index   int    `json:"index"`
	Type    Type   `json:"type"`
	Process int    `json:"process"`
	Client  int    `json:"client"`
	F       string `json:"f"`
	Key     string `json:"key,omitempty"`
	// Value is the lock token for acquire/release, the counter value for
	// read/write, the failpoint for step, the fault description for nemesis.
	Value string `json:"value,omitempty"`
	// N is the counter value read or written; on a release's completion,
	// when its call began, if the runner held it at a failpoint after its
	// invoke (0: at the invoke); on an extend, its number; on a sync, when
	// its PING was sent.
	N int64 `json:"n,omitempty"`
	// Fence is the fencing token carried by the operation, if any.
	Fence int64 `json:"fence,omitempty"`
	// Time is nanoseconds since the run started, from one monotonic clock.
	Time  int64  `json:"time"`
	Error string `json:"error,omitempty"`
	// Node and Owner are set on server events (FServer).
	Node  string `json:"node,omitempty"`
	Owner string `json:"owner,omitempty"`
	// Targets is what a nemesis FStart entry applied to (see FStart).
	Targets *FaultTargets `json:"targets,omitempty"`
	// ErrorReply says a fail completion was the server refusing the
	// command with an error reply (ERR, WRONGTYPE, NOSCRIPT, READONLY...):
	// a definite outcome, not an unknown one, but no evidence about the lock.
	ErrorReply bool `json:"error_reply,omitempty"`
	// Fired, on a step, lists the spec failpoints (by their index in the
	// spec) whose action applied at this hit.
	Fired []int `json:"fired,omitempty"`
	// Tries, on an acquire's or an extend's completion, are when the
	// operation's tries were sent (ns since the run started): each send of
	// the command the operation opened with, on the same node, as the
	// hooks on the client's connections saw it (the library's own retries
	// inside one call included). Empty when nothing was seen.
	Tries []int64 `json:"tries,omitempty"`
	// Meta is set on the header entry (F == FMeta) only.
	Meta *Meta `json:"meta,omitempty"`
}

// Identity is a run's identity: which scenario, lock and seed, where and
// how it ran, and what it was expected to give. It is defined once and
// carried, embedded, by the history's header (Meta), the runner's outcome
// and the report's row, so the data moves one way, from the plan through
// the history to the row, without a copy field by field.
type Identity struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Seed     uint64 `json:"seed"`
	Backend  string `json:"backend"`
	// Mode is the spec's mode: scheduled or random.
	Mode string `json:"mode"`
	// Client is the workload's client (careful or careless).
	Client string `json:"client,omitempty"`
	// File is the spec's file, for a spec that is not embedded.
	File string `json:"file,omitempty"`
	// Gated says a difference from the expectation fails the gate: the
	// run's gating (a gated spec, unless its expectation is exploratory),
	// in the outcome, the history's header and the report's row alike.
	Gated bool `json:"gated"`
	// Expected is the expected verdict ("" for none), ExpectedReason why,
	// ExpectedSource where it came from (spec, claims, baseline).
	Expected       string `json:"expected"`
	ExpectedReason string `json:"expected_reason,omitempty"`
	ExpectedSource string `json:"expected_source,omitempty"`
	// TimeScale, when set, says the run's times were stretched to fit the
	// lock's clock (the evidence says so).
	TimeScale *TimeScale `json:"time_scale,omitempty"`
}

// Meta is the header of a runner's history: what the run was asked to do,
// so that `lockstorm check` judges a history file alone, and can tell what
// the run was supposed to exercise (every key, every armed failpoint).
type Meta struct {
	Identity
	// Keys are every lock key the clients contend on.
	Keys []string `json:"keys"`
	// Options are the checker settings the run is judged with.
	Options Options `json:"checker_options"`
	// Failpoints are the spec's failpoint actions, as armed for this run.
	Failpoints []Armed `json:"failpoints,omitempty"`
}

// Armed is one failpoint action of a spec, as armed in a run.
type Armed struct {
	// Index is the failpoint's position in the spec (what Op.Fired names).
	Index int `json:"index"`
	// Client is the client it is attached to (-1: every client).
	Client int    `json:"client"`
	Point  string `json:"point"`
	Skip   int    `json:"skip,omitempty"`
	// Times is how many hits the action applies to (0: every hit).
	Times int     `json:"times,omitempty"`
	Prob  float64 `json:"prob,omitempty"`
	// Inert: the point is a step of another implementation, which this
	// implementation never reaches by design (one spec forces the
	// interleavings of several algorithms side by side).
	Inert bool `json:"inert,omitempty"`
}

// FaultTargets is what one fault concretely applied to, as the nemesis
// reports it (nemesis.Targets).
type FaultTargets struct {
	// Links are proxied links (host>node) that got toxics or were redirected.
	Links []string `json:"links,omitempty"`
	// Clients are the clients acted on; for a network fault, every client
	// whose connections cross the links (clients share hosts).
	Clients []int `json:"clients,omitempty"`
	// Nodes are the servers acted on (kill, pause, clock, failover).
	Nodes []string `json:"nodes,omitempty"`
	// Replicas are replicas promoted, or whose replication link was touched.
	Replicas []string `json:"replicas,omitempty"`
	// Picked is what a random pick drew ("client 3", "nodes [n1 n2]").
	Picked string `json:"picked,omitempty"`
	// Missing are named targets the run does not have; they were left out,
	// never wrapped onto another target.
	Missing []string `json:"missing,omitempty"`
}

// Count is how many targets of every sort are listed; 0 means applied to
// nothing.
func (t *FaultTargets) Count() int {
	if t == nil {
		return 0
	}
	return len(t.Links) + len(t.Clients) + len(t.Nodes) + len(t.Replicas)
}

// History is a recorded run.
type History []Op

// WriteJSONL writes h, one entry per line.
func WriteJSONL(w io.Writer, h History) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for i := range h {
		if err := enc.Encode(&h[i]); err != nil {
			return fmt.Errorf("write history entry %d: %w", i, err)
		}
	}
	return bw.Flush()
}

// ReadJSONL reads a history written by WriteJSONL; errors name the line.
func ReadJSONL(r io.Reader) (History, error) {
	var h History
	err := eachLine(r, func(line int, op Op, err error) error {
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		h = append(h, op)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}

// eachLine decodes a JSONL history line by line, skipping empty lines, and
// hands each entry (or its decoding error) to fn with its line number; fn's
// error stops the reading. A read error names the line it stopped at.
func eachLine(r io.Reader, fn func(line int, op Op, err error) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var op Op
		uerr := json.Unmarshal(b, &op)
		if err := fn(line, op, uerr); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("line %d: %w", line+1, err)
	}
	return nil
}

// WriteFile writes h to path as JSONL.
func WriteFile(path string, h History) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJSONL(f, h); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadFile reads a JSONL history from path; errors name the file and line.
func ReadFile(path string) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := ReadJSONL(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}
