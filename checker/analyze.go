package checker

import (
	"sort"
)

// holdRec is a Hold with what the model and the liveness checks need besides.
type holdRec struct {
	Hold
	invoke  int64 // invoke time of the outermost acquire
	relDone int64 // completion of the release that ended the hold (ok or fail); To otherwise
	relOK   bool  // the hold ended with a release that completed ok
}

// acqRec is one acquire operation.
type acqRec struct {
	process, client int
	invoke, done    int64 // done < 0: never completed
	typ             Type  // Ok, Fail, Info or "" (never completed)
}

// unknownAcq is an acquire whose outcome is unknown: an info completion, no
// completion at all, or an in-flight acquire of a crashed client.
type unknownAcq struct {
	process, client int
	invoke          int64
}

// writeRec is one completed write of the counter resource.
type writeRec struct {
	process, client int
	invoke, done    int64
	typ             Type
	n, fence        int64
}

// interval is a closed time interval.
type interval struct{ from, to int64 }

// keyData is everything the checks need about one key.
type keyData struct {
	name     string
	holds    []holdRec // in order of From
	unknowns []unknownAcq
	acquires []acqRec
	writes   []writeRec // in completion order
	wants    []interval // per client: first attempt → grant (or giving up)
	hasFinal bool
	final    int64
	dupAt    int64 // time of the first duplicated fence, -1: none
	dups     int
}

// heldKey is a process's reentrant hold count on one key.
type heldKey struct {
	count int
	hold  int // index in keyData.holds
}

// curOp is a process's operation in flight.
type curOp struct {
	f       string
	key     int
	invoke  int64
	acq     int // index in keyData.acquires (acquire)
	relHold int // index in keyData.holds ended by this release, -1: none
	n       int64
	fence   int64
	val     string // the invoke's value (a release's token)
}

// releaseRec is a release or an extend acknowledged ok: both say "the
// lock was mine when I acted", and the servers' events judge both alike.
type releaseRec struct {
	f               string // FRelease or FExtend
	process, client int
	key             string
	token           string
	invoke, done    int64
	// acqInvoke is when the released hold's acquire was invoked (-1 when
	// unknown): no set received before it can be the releaser's own.
	acqInvoke int64
}

type procState struct {
	id, client int
	op         *curOp
	holds      map[int]*heldKey
	steps      []string
	crashed    bool
}

// want is a client's open wish for a key: from its first acquire attempt to
// its grant. A fail or info followed directly by another attempt on the
// same key continues the want (a retry loop is one wait, not many).
//
// A want that ends without a grant counts only up to its last definite
// refusal (lastFail: a fail completion), never up to an unknown outcome:
// starvation is a liveness failure only when the lock really said no. An
// attempt that ended unknown (a timeout, a lost reply, a client process
// that died) may have taken the lock, and says nothing about the lock's
// liveness; a run whose attempts all ended so has no starvation and is
// judged by its evidence instead ("not exercised": most attempts ended in
// errors). So zero acquisitions are a deadlock only when definite refusals
// span more than the bound with no hold open, the same rule for every lock.
type want struct {
	key       int
	start     int64
	lastFail  int64 // the last definite refusal (0: none yet)
	tentative bool  // the last attempt failed; open only if the next one retries
}

// analysis is one pass over a history.
type analysis struct {
	keys      []*keyData
	keyIdx    map[string]int
	end       int64 // time of the last entry
	attempts  int
	acquired  int
	unknown   int
	malformed int
	latencies []int64 // acquire invoke → ok
	longest   int64   // longest acquire invoke → completion
	perClient map[int]*[2]int
	server    []*Op          // the servers' key events and the observers' syncs, in time order
	events    int            // key events in server
	owners    map[string]int // acquire token → client (ambiguousOwner: granted to several)
	releases  []releaseRec
	// stampTokens: values name no writer (Options.StampTokens).
	stampTokens bool
	// stalls are the harness's own stalls (FStall entries).
	stalls []interval
	// paused are the nemesis's pauses of each client (a pause fault's start
	// to its heal), and pausing the open ones by fault id.
	paused  map[int][]interval
	pausing map[int64]pauseRec
	// extends are the extends and renewals invoked, by outcome; extending
	// pairs an extend's invoke with its completion by (client, N).
	extends   extendCounts
	extending map[[2]int64]*Op
}

// extendCounts counts extends and renewals by outcome.
type extendCounts struct{ invoked, ok, fail, unknown int }

func (a *analysis) key(name string) int {
	if i, ok := a.keyIdx[name]; ok {
		return i
	}
	a.keyIdx[name] = len(a.keys)
	a.keys = append(a.keys, &keyData{name: name, dupAt: -1})
	return len(a.keys) - 1
}

// sortedByTime returns h ordered by time. The Recorder stamps times under
// its lock, so recorded histories are already ordered and are not copied.
func sortedByTime(h History) History {
	if sort.SliceIsSorted(h, func(i, j int) bool { return h[i].Time < h[j].Time }) {
		return h
	}
	s := append(History(nil), h...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Time < s[j].Time })
	return s
}

// analyze derives holds, unknown acquires, writes and waits per key in one
// pass. Processes are sequential: a completion belongs to the operation the
// process has in flight. Entries that break this are counted as malformed.
func analyze(h History) *analysis {
	h = sortedByTime(h)
	a := &analysis{keyIdx: map[string]int{}, perClient: map[int]*[2]int{}, owners: map[string]int{},
		extending: map[[2]int64]*Op{}}
	procs := map[int]*procState{}
	// inherit: after an info completion the client continues under a new
	// process id; the holds of the old process (an info write inside a
	// critical section) pass to the client's next process, which releases.
	inherit := map[int]*procState{}
	wants := map[int]*want{}
	fences := map[[2]int64]int{} // (key, fence) → first process; -1 once counted

	closeWant := func(client int, t int64) {
		w := wants[client]
		if w == nil {
			return
		}
		if w.tentative {
			t = w.lastFail
		}
		if t < w.start {
			t = w.start
		}
		a.keys[w.key].wants = append(a.keys[w.key].wants, interval{w.start, t})
		delete(wants, client)
	}
	endHold := func(p *procState, k int, t int64, how string) {
		hk := p.holds[k]
		if hk == nil {
			return
		}
		hr := &a.keys[k].holds[hk.hold]
		hr.To, hr.relDone, hr.End = t, t, how
		delete(p.holds, k)
	}
	proc := func(op *Op) *procState {
		p := procs[op.Process]
		if p == nil {
			p = &procState{id: op.Process, client: op.Client, holds: map[int]*heldKey{}}
			if old := inherit[op.Client]; old != nil {
				p.holds, old.holds = old.holds, map[int]*heldKey{}
				delete(inherit, op.Client)
			}
			procs[op.Process] = p
		}
		return p
	}
	client := func(c int) *[2]int {
		s := a.perClient[c]
		if s == nil {
			s = new([2]int)
			a.perClient[c] = s
		}
		return s
	}

	for i := range h {
		op := &h[i]
		if op.Time > a.end {
			a.end = op.Time
		}
		if op.Process == NemesisProcess {
			if op.F == FStall && op.N > 0 {
				a.stalls = append(a.stalls, interval{op.Time - op.N, op.Time})
			}
			a.pauseOp(op)
			continue
		}
		if op.Process == ServerProcess {
			switch op.F {
			case FServer:
				a.server = append(a.server, op)
				a.events++
			case FSync:
				a.server = append(a.server, op)
			}
			continue
		}
		if op.Process == FinalProcess {
			if op.F == FRead && op.Type == Ok {
				kd := a.keys[a.key(op.Key)]
				kd.hasFinal, kd.final = true, op.N
			}
			continue
		}
		p := proc(op)
		switch op.F {
		case FStep:
			p.steps = append(p.steps, op.Value)
			continue
		case FExtend:
			a.extendOp(op, p)
			continue
		case FLost, FStart, FStop:
			// lost does not end a hold: the client still believes in its
			// critical section until it sends its release (the runner
			// releases right after a lost).
			continue
		case FAbandon:
			// A careful client stops believing at once: from here on it
			// neither reads nor writes, so it is no longer a holder, even
			// though its release (and the key in Redis) may come later.
			if k, ok := a.keyIdx[op.Key]; ok {
				endHold(p, k, op.Time, "abandon")
			}
			continue
		case FCrash:
			for k := range p.holds {
				endHold(p, k, op.Time, "crash")
			}
			p.crashed = true
			closeWant(p.client, op.Time)
			continue
		}
		// A client's next action decides whether a failed attempt was
		// retried (the want continues) or abandoned.
		if op.Type == Invoke {
			if w := wants[p.client]; w != nil && w.tentative {
				if op.F == FAcquire && op.Key == a.keys[w.key].name {
					w.tentative = false
				} else {
					closeWant(p.client, 0)
				}
			}
		}
		k := a.key(op.Key)
		kd := a.keys[k]
		if op.Type == Invoke {
			if p.op != nil {
				a.malformed++
				a.abandon(p)
			}
			c := &curOp{f: op.F, key: k, invoke: op.Time, relHold: -1, n: op.N, fence: op.Fence, val: op.Value}
			switch op.F {
			case FAcquire:
				a.attempts++
				client(p.client)[0]++
				c.acq = len(kd.acquires)
				kd.acquires = append(kd.acquires, acqRec{process: p.id, client: p.client, invoke: op.Time, done: -1})
				p.steps = p.steps[:0]
				if wants[p.client] == nil {
					wants[p.client] = &want{key: k, start: op.Time}
				}
			case FRelease:
				if hk := p.holds[k]; hk != nil && hk.count > 0 {
					hk.count--
					if hk.count == 0 {
						c.relHold = hk.hold
						endHold(p, k, op.Time, "release")
					}
				}
			}
			p.op = c
			continue
		}
		// A completion.
		if op.Type != Ok && op.Type != Fail && op.Type != Info {
			a.malformed++
			continue
		}
		c := p.op
		if c == nil || c.f != op.F || a.keys[c.key].name != op.Key {
			a.malformed++
			continue
		}
		p.op = nil
		if op.Type == Info {
			a.unknown++
		}
		switch op.F {
		case FAcquire:
			ar := &kd.acquires[c.acq]
			ar.done, ar.typ = op.Time, op.Type
			if d := op.Time - ar.invoke; d > a.longest {
				a.longest = d
			}
			switch op.Type {
			case Ok:
				if op.Value != "" {
					// Timestamp-valued locks can grant two clients the same
					// value (the same millisecond): then the value does not
					// say whose the key is, and no check may rely on it.
					if prev, seen := a.owners[op.Value]; seen && prev != p.client {
						a.owners[op.Value] = ambiguousOwner
					} else {
						a.owners[op.Value] = p.client
					}
				}
				a.acquired++
				client(p.client)[1]++
				a.latencies = append(a.latencies, op.Time-ar.invoke)
				if op.Fence > 0 {
					fk := [2]int64{int64(k), op.Fence}
					if first, ok := fences[fk]; !ok {
						fences[fk] = p.id
					} else if first >= 0 && first != p.id {
						fences[fk] = -1
						kd.dups++
						if kd.dupAt < 0 {
							kd.dupAt = op.Time
						}
					}
				}
				if hk := p.holds[k]; hk != nil && hk.count > 0 {
					hk.count++ // reentrant: the hold goes on
				} else {
					hr := holdRec{Hold: Hold{Process: p.id, Client: p.client, Key: op.Key, Token: op.Value,
						Fence: op.Fence, From: op.Time, To: -1}, invoke: ar.invoke, relDone: -1}
					if len(p.steps) > 0 {
						hr.Steps = append([]string(nil), p.steps...)
					}
					if p.crashed {
						// Granted to a client that already vanished: it never
						// acts on it, so its belief lasts no time at all.
						hr.To, hr.relDone, hr.End = op.Time, op.Time, "crash"
					} else {
						p.holds[k] = &heldKey{count: 1, hold: len(kd.holds)}
					}
					kd.holds = append(kd.holds, hr)
				}
				if w := wants[p.client]; w != nil && w.key == k {
					w.tentative = false
					closeWant(p.client, op.Time)
				}
			case Fail, Info:
				if op.Type == Info {
					kd.unknowns = append(kd.unknowns, unknownAcq{process: p.id, client: p.client, invoke: ar.invoke})
				}
				if w := wants[p.client]; w != nil && w.key == k {
					w.tentative = true
					if op.Type == Fail {
						w.lastFail = op.Time
					}
				}
			}
		case FRelease:
			if op.Type == Ok {
				rr := releaseRec{f: FRelease, process: p.id, client: p.client, key: op.Key, token: c.val, invoke: c.invoke, done: op.Time, acqInvoke: -1}
				if c.relHold >= 0 {
					rr.acqInvoke = kd.holds[c.relHold].invoke
				}
				a.releases = append(a.releases, rr)
			}
			if c.relHold >= 0 && op.Type != Info {
				hr := &kd.holds[c.relHold]
				hr.relDone, hr.relOK = op.Time, op.Type == Ok
			}
		case FWrite:
			kd.writes = append(kd.writes, writeRec{process: p.id, client: p.client, invoke: c.invoke, done: op.Time,
				typ: op.Type, n: op.N, fence: op.Fence})
		}
		if op.Type == Info {
			inherit[p.client] = p
		}
	}
	// The end of the history: what is still in flight never completed.
	for _, p := range procs {
		if p.op != nil {
			a.abandon(p)
		}
		for k := range p.holds {
			endHold(p, k, a.end, "end")
		}
	}
	for c, w := range wants {
		if w.tentative {
			closeWant(c, 0)
		} else {
			closeWant(c, a.end)
		}
	}
	for _, kd := range a.keys {
		for i := range kd.holds {
			if kd.holds[i].To < 0 { // held by a process that was inherited and never seen again
				kd.holds[i].To, kd.holds[i].relDone, kd.holds[i].End = a.end, a.end, "end"
			}
		}
		sort.Slice(kd.wants, func(i, j int) bool { return kd.wants[i].from < kd.wants[j].from })
		sort.SliceStable(kd.unknowns, func(i, j int) bool { return kd.unknowns[i].invoke < kd.unknowns[j].invoke })
	}
	return a
}

// abandon ends p's operation in flight without a completion: an acquire
// becomes an unknown one (its SET may still land).
func (a *analysis) abandon(p *procState) {
	c := p.op
	p.op = nil
	if c.f == FAcquire {
		kd := a.keys[c.key]
		kd.unknowns = append(kd.unknowns, unknownAcq{process: p.id, client: p.client, invoke: c.invoke})
	}
}

// extendOp records one extend entry. An acknowledged extend joins the
// releases for the false-success check; a completion without its invoke is
// malformed. An extend never opens or ends a hold: the client believes in
// its lock across it either way (a failed extend is the client's news, and
// the workload decides what to do about it).
func (a *analysis) extendOp(op *Op, p *procState) {
	id := [2]int64{int64(op.Client), op.N}
	if op.Type == Invoke {
		if a.extending[id] != nil {
			a.malformed++
		}
		a.extending[id] = op
		a.extends.invoked++
		return
	}
	inv := a.extending[id]
	if inv == nil || inv.Key != op.Key {
		a.malformed++
		return
	}
	delete(a.extending, id)
	switch op.Type {
	case Ok:
		a.extends.ok++
		a.releases = append(a.releases, releaseRec{f: FExtend, process: p.id, client: p.client, key: op.Key,
			token: inv.Value, invoke: inv.Time, done: op.Time, acqInvoke: -1})
	case Fail:
		a.extends.fail++
	default:
		a.extends.unknown++
	}
}
