// Package checker turns a recorded history into verdicts: mutual exclusion
// (a porcupine mutex model partitioned per key, plus a linear overlap pass
// that names the witness), lost updates on the counter resource, fencing and
// liveness.
package checker

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"
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
	FLost   = "lost"  // the implementation reported the lock lost (watchdog)
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
	// delay that client (see lag.go).
	FStall = "stall"
	// FSentinel is an event from a Sentinel's own event stream (process
	// NemesisProcess); Value is "s1 +switch-master n1 n1 r1".
	FSentinel = "sentinel"
	// FMaster says which server a client's connection went to (process
	// NemesisProcess, Client set, Value the server's name), recorded when
	// it changes; Sentinel topology only.
	FMaster = "master"
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
	// N is the counter value read or written.
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
	// Meta is set on the header entry (F == FMeta) only.
	Meta *Meta `json:"meta,omitempty"`
}

// Meta is the header of a runner's history: what the run was asked to do,
// so that `lockstorm check` judges a history file alone, and can tell what
// the run was supposed to exercise (every key, every armed failpoint).
type Meta struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Seed     uint64 `json:"seed"`
	Backend  string `json:"backend,omitempty"`
	// Mode is the spec's mode: scheduled or random.
	Mode string `json:"mode,omitempty"`
	// Client is the workload's client (careful or careless).
	Client string `json:"client,omitempty"`
	// File is the spec's file, for a spec that is not embedded.
	File  string `json:"file,omitempty"`
	Gated bool   `json:"gated,omitempty"`
	// Expected is the expected verdict ("" for none), ExpectedReason why,
	// ExpectedSource where it came from (spec, claims, baseline).
	Expected       string `json:"expected,omitempty"`
	ExpectedReason string `json:"expected_reason,omitempty"`
	ExpectedSource string `json:"expected_source,omitempty"`
	// Keys are every lock key the clients contend on.
	Keys []string `json:"keys"`
	// Options are the checker settings the run is judged with.
	Options Options `json:"checker_options"`
	// Failpoints are the spec's failpoint actions, as armed for this run.
	Failpoints []Armed `json:"failpoints,omitempty"`
	// TimeScale, when set, says the run's times were stretched to fit the
	// lock's clock (the evidence says so).
	TimeScale *TimeScale `json:"time_scale,omitempty"`
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

// Recorder appends entries with times from one monotonic clock. It is safe
// for concurrent use by every client and the nemesis. Entries are kept in
// fixed-size chunks, so a long run never copies what it already recorded,
// and in a compact form (recOp) that History expands.
type Recorder struct {
	mu     sync.Mutex
	start  time.Time
	chunks [][]recOp
	n      int
	ended  bool
}

const recorderChunk = 4096

// recOp is an Op as the Recorder keeps it: about half of an Op's size.
// The index is the position; the type and the function are a byte each
// when they are one of the constants; the fields most entries leave empty
// (a server event's node and owner, a fault's targets, a step's fired
// list, the header, a type or function that is no constant) sit behind
// one pointer. Every Op grew to 208 bytes as fields were added for the
// rarer entries, and the Recorder kept 208 bytes per entry, zeroed and
// scanned by the collector chunk by chunk.
type recOp struct {
	time, n, fence  int64
	process, client int
	key, value, err string
	typ, f          uint8
	errorReply      bool
	rare            *rareFields
}

// rareFields are the fields of an Op that most entries leave empty.
type rareFields struct {
	typ         Type
	f           string
	node, owner string
	targets     *FaultTargets
	fired       []int
	meta        *Meta
}

// recTypes and recFuncs are the constants a recOp names by their position
// (0: the empty string; noCode: the value is in rareFields).
var (
	recTypes = []Type{"", Invoke, Ok, Fail, Info}
	recFuncs = []string{"", FAcquire, FRelease, FExtend, FRead, FWrite, FStep, FLost, FCrash, FAbandon,
		FStart, FStop, FEnd, FMeta, FServer, FSync, FStall, FSentinel, FMaster}
)

const noCode = 255

// typeCode and funcCode are the positions in recTypes and recFuncs (a
// switch: a walk over the table comparing strings was a fifth of Add).
func typeCode(t Type) uint8 {
	switch t {
	case "":
		return 0
	case Invoke:
		return 1
	case Ok:
		return 2
	case Fail:
		return 3
	case Info:
		return 4
	}
	return noCode
}

func funcCode(f string) uint8 {
	switch f {
	case "":
		return 0
	case FAcquire:
		return 1
	case FRelease:
		return 2
	case FExtend:
		return 3
	case FRead:
		return 4
	case FWrite:
		return 5
	case FStep:
		return 6
	case FLost:
		return 7
	case FCrash:
		return 8
	case FAbandon:
		return 9
	case FStart:
		return 10
	case FStop:
		return 11
	case FEnd:
		return 12
	case FMeta:
		return 13
	case FServer:
		return 14
	case FSync:
		return 15
	case FStall:
		return 16
	case FSentinel:
		return 17
	case FMaster:
		return 18
	}
	return noCode
}

func pack(op *Op) recOp {
	r := recOp{time: op.Time, n: op.N, fence: op.Fence, process: op.Process, client: op.Client,
		key: op.Key, value: op.Value, err: op.Error, errorReply: op.ErrorReply,
		typ: typeCode(op.Type), f: funcCode(op.F)}
	if r.typ == noCode || r.f == noCode || op.Node != "" || op.Owner != "" || op.Targets != nil || op.Fired != nil || op.Meta != nil {
		r.rare = &rareFields{typ: op.Type, f: op.F, node: op.Node, owner: op.Owner, targets: op.Targets, fired: op.Fired, meta: op.Meta}
	}
	return r
}

func (r *recOp) unpack(index int) Op {
	op := Op{Index: index, Time: r.time, N: r.n, Fence: r.fence, Process: r.process, Client: r.client,
		Key: r.key, Value: r.value, Error: r.err, ErrorReply: r.errorReply}
	if r.typ != noCode {
		op.Type = recTypes[r.typ]
	}
	if r.f != noCode {
		op.F = recFuncs[r.f]
	}
	if x := r.rare; x != nil {
		op.Type, op.F = x.typ, x.f
		op.Node, op.Owner, op.Targets, op.Fired, op.Meta = x.node, x.owner, x.targets, x.fired, x.meta
	}
	return op
}

// NewRecorder starts the clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is nanoseconds since the recorder started (monotonic).
func (r *Recorder) Now() int64 { return int64(time.Since(r.start)) }

// Start is the wall-clock instant of time zero.
func (r *Recorder) Start() time.Time { return r.start }

// Add stamps op with the current time and an index, appends it and returns it.
func (r *Recorder) Add(op Op) Op {
	rec := pack(&op) // outside the lock: only the time and index are stamped under it
	r.mu.Lock()
	if r.ended {
		// After the end record nothing belongs to the history (a
		// watchdog's late step while the run shuts down).
		r.mu.Unlock()
		return op
	}
	op.Time, op.Index = r.addLocked(&rec)
	r.mu.Unlock()
	return op
}

func (r *Recorder) addLocked(rec *recOp) (t int64, index int) {
	rec.time = int64(time.Since(r.start))
	if r.n%recorderChunk == 0 {
		r.chunks = append(r.chunks, make([]recOp, 0, recorderChunk))
	}
	last := len(r.chunks) - 1
	r.chunks[last] = append(r.chunks[last], *rec)
	r.n++
	return rec.time, r.n - 1
}

// End adds the end record op (F FEnd) as the last entry, ignores every Add
// after it, and returns the history: nothing a straggling goroutine records
// can land after the end record.
func (r *Recorder) End(op Op) History {
	rec := pack(&op)
	r.mu.Lock()
	if !r.ended {
		r.addLocked(&rec)
		r.ended = true
	}
	r.mu.Unlock()
	return r.History()
}

// History returns a copy of what was recorded so far.
func (r *Recorder) History() History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := make(History, 0, r.n)
	for _, c := range r.chunks {
		for i := range c {
			h = append(h, c[i].unpack(len(h)))
		}
	}
	return h
}

// Infinity is the return time of an operation whose outcome is unknown: it
// may take effect at any moment after its invocation, even after the client
// gave up (a SET NX stuck in a delayed link lands later).
const Infinity = int64(math.MaxInt64)

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
