package checker

import (
	"cmp"
	"slices"
	"sort"
	"sync"

	"github.com/lockstorm/lockstorm/checker/internal/keyevents"
	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/ids"
)

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
	server    []*history.Op // the servers' key events and the observers' syncs, in time order
	events    int           // key events in server
	// h is the history the pass read (ordered by time).
	h history.History
	// owners maps an acquire token to its client (keyevents.AmbiguousOwner: granted
	// to several); built from ownerRefs by ownersOf.
	owners      map[string]int
	ownersOnce  sync.Once
	ownerRefs   []ownerRef
	releaseRefs []releaseRef
	// refusalRefs are the releases and extends answered with a definite
	// "not held" (Fail, no error reply), for the false-refusal check.
	refusalRefs []releaseRef
	// stampTokens: values name no writer (Options.StampTokens).
	stampTokens bool
	// stalls are the harness's own stalls (FStall entries of client -1);
	// lags are each client's own lateness (FStall entries naming it), in
	// time order.
	stalls []liveness.Interval
	lags   map[int][]liveness.Interval
	// late is lateFor of every client with lags, computed once.
	lateOnce sync.Once
	late     map[int][]liveness.Interval
	// silent is when every observed server was silent (silence.go).
	silentOnce sync.Once
	silent     []liveness.Interval
	// paused are the nemesis's pauses of each client (a pause fault's start
	// to its heal), and pausing the open ones by fault id.
	paused  map[int][]liveness.Interval
	pausing map[int64]pauseRec
	// faulted are the spans in which any fault named each client among
	// its targets (a pause, a network fault on links its connections
	// cross), and faulting the open ones by fault id.
	faulted  map[int][]liveness.Interval
	faulting map[int64]pauseRec
	// nodeFaulted are the spans of the faults that named each node among
	// their targets (a kill, a pause, a clock), nodeFaulting the open ones
	// by fault id.
	nodeFaulted  map[string][]liveness.Interval
	nodeFaulting map[int64]openFault[string]
	// resends are the positions of the clients' resends (history.FResend).
	resends []int32
	// extends are the extends and renewals invoked, by outcome; extending
	// pairs an extend's invoke with its completion by (client, N).
	extends   extendCounts
	extending map[[2]int64]int32 // position of the invoke
	// renewals are each client's completed extends and renewals, by
	// invoke (sorted in finish), for renewalCut.
	renewals map[int][]extendFlight

	// What the checks read besides: the validated history in its own
	// order, its problems, and the options.
	input    history.History
	problems []history.Problem
	opts     history.Options
	// streamSet is every node's stream (see keyEventInput).
	streamsOnce sync.Once
	streamSet   *streamSet
	// ovs is the overlap pass per key (see overlaps).
	overlapOnce sync.Once
	ovs         []keyOverlaps
}

// extendCounts counts extends and renewals by outcome.
type extendCounts struct{ invoked, ok, fail, unknown int }

func (a *analysis) key(name string) int {
	if i, ok := a.keyIdx[name]; ok {
		return i
	}
	a.keyIdx[name] = len(a.keys)
	a.keys = append(a.keys, &keyData{name: name, dupAt: -1, fencesUp: true})
	return len(a.keys) - 1
}

// ordered says h is ordered by time.
func ordered(h history.History) bool {
	for i := 1; i < len(h); i++ {
		if h[i].Time < h[i-1].Time {
			return false
		}
	}
	return true
}

// sortedByTime returns a copy of h ordered by time (stably).
func sortedByTime(h history.History) history.History {
	s := append(history.History(nil), h...)
	sort.SliceStable(s, func(i, j int) bool { return s[i].Time < s[j].Time })
	return s
}

// analyze derives holds, unknown acquires, writes and waits per key in one
// pass. Processes are sequential: a completion belongs to the operation the
// process has in flight. Entries that break this are counted as malformed.
func analyze(h history.History) *analysis { return analyzeOrdered(h, false) }

// analyzeOrdered is analyze; sorted says h is known to be ordered by time
// (validate found it so). The pass reads h in time order. The Recorder
// stamps times under its lock, so recorded histories are ordered already:
// the pass checks the order as it goes (one comparison on an entry it
// reads anyway, cheaper than a walk of its own) and starts again on a
// sorted copy at the first entry out of order.
func analyzeOrdered(h history.History, sorted bool) *analysis {
	a := &analysis{keyIdx: map[string]int{}, perClient: map[int]*[2]int{}, h: h,
		extending: map[[2]int64]int32{}}
	ps := &pass{a: a, inherit: map[int]*procState{}}
	for i := range h {
		if !sorted && i > 0 && h[i].Time < h[i-1].Time {
			return analyzeOrdered(sortedByTime(h), true)
		}
		ps.at = i
		ps.entry(i)
	}
	ps.finish()
	return a
}

// pass is the state of analyze's one walk over the history. Processes and
// wants are kept by id in slices (ids.Map), not maps: the pass looks them
// up on every entry.
type pass struct {
	a     *analysis
	procs ids.Map[*procState]
	// inherit: after an info completion the client continues under a new
	// process id; the holds of the old process (an info write inside a
	// critical section) pass to the client's next process, which releases.
	inherit map[int]*procState
	wants   ids.Map[*want] // by client
	// spare are closed wants to reuse: wants open and close once per
	// acquisition, an allocation each, while few are open at once.
	spare []*want
	at    int // the entry being read
}

// room returns s with room for one more record. A full s grows to what
// its growth so far projects for the whole history (the records of a key,
// or of every key, come at a steady pace as the run goes on), at least
// doubling and at most eightfold, so a slice is copied fewer times and
// ends nearer its final size than by doubling alone.
func room[T any](ps *pass, s []T) []T {
	if len(s) < cap(s) {
		return s
	}
	n, l := len(ps.a.h), len(s)
	want := 2*l + 8
	if ps.at > 0 {
		proj := int(int64(l+1) * int64(n) / int64(ps.at))
		want = max(want, min(proj+proj/8, 8*l+8))
	}
	return slices.Grow(s, want-l)
}

func (ps *pass) wantOf(client int) *want {
	w, _ := ps.wants.Get(client)
	return w
}

// closeWant ends the client's want at t; a want whose last attempt failed
// (tentative) ends at its last definite refusal instead.
func (ps *pass) closeWant(client int, t int64) {
	w := ps.wantOf(client)
	if w == nil {
		return
	}
	if w.tentative {
		t = w.lastFail
	}
	if t < w.start {
		t = w.start
	}
	kd := ps.a.keys[w.key]
	kd.wants = append(room(ps, kd.wants), wantRec{liveness.Interval{From: w.start, To: t}, client})
	ps.wants.Del(client)
	ps.spare = append(ps.spare, w)
}

// openWant opens client's want of key k at t.
func (ps *pass) openWant(client, k int, t int64) {
	var w *want
	if n := len(ps.spare); n > 0 {
		w, ps.spare = ps.spare[n-1], ps.spare[:n-1]
	} else {
		w = new(want)
	}
	*w = want{key: k, start: t}
	ps.wants.Set(client, w)
}

func (ps *pass) endHold(p *procState, k int, t int64, how string) {
	hk := p.holds.get(k)
	if hk == nil {
		return
	}
	hr := &ps.a.keys[k].holds[hk.hold]
	hr.To, hr.relDone, hr.End = t, t, how
	p.holds.del(k)
}

func (ps *pass) proc(op *history.Op) *procState {
	p, _ := ps.procs.Get(op.Process)
	if p == nil {
		p = &procState{id: op.Process, client: op.Client, lastKey: -1, perClient: ps.a.perClient}
		if old := ps.inherit[op.Client]; old != nil {
			p.holds, old.holds = old.holds, nil
			delete(ps.inherit, op.Client)
		}
		ps.procs.Set(op.Process, p)
	}
	return p
}

// entry takes the history's i-th entry.
func (ps *pass) entry(i int) {
	a := ps.a
	op := &a.h[i]
	if op.Time > a.end {
		a.end = op.Time
	}
	if ps.harnessEntry(op) {
		return
	}
	p := ps.proc(op)
	if ps.clientEvent(i, op, p) {
		return
	}
	// A client's next action decides whether a failed attempt was
	// retried (the want continues) or abandoned.
	if op.Type == history.Invoke {
		if w := ps.wantOf(p.client); w != nil && w.tentative {
			if op.F == history.FAcquire && op.Key == a.keys[w.key].name {
				w.tentative = false
			} else {
				ps.closeWant(p.client, 0)
			}
		}
	}
	k := p.lastKey
	if k < 0 || a.keys[k].name != op.Key { // a process mostly stays on one key
		k = a.key(op.Key)
		p.lastKey = k
	}
	if op.Type == history.Invoke {
		ps.invoke(i, op, p, k)
		return
	}
	ps.complete(i, op, p, k)
}

// harnessEntry takes the entries of the nemesis, the servers' observers and
// the final read, and says whether op was one.
func (ps *pass) harnessEntry(op *history.Op) bool {
	a := ps.a
	switch op.Process {
	case history.NemesisProcess:
		if op.F == history.FStall && op.N > 0 {
			a.stallOp(op)
		}
		a.pauseOp(op)
		a.nodeFaultOp(op)
	case history.ServerProcess:
		switch op.F {
		case history.FServer:
			a.server = append(a.server, op)
			a.events++
		case history.FSync:
			a.server = append(a.server, op)
		}
	case history.FinalProcess:
		if op.F == history.FRead && op.Type == history.Ok {
			kd := a.keys[a.key(op.Key)]
			kd.hasFinal, kd.final = true, op.N
		}
	default:
		return false
	}
	return true
}

// clientEvent takes a client's entries that are not operations on a key
// (steps, extends, lost, abandon, crash...) and says whether op was one.
func (ps *pass) clientEvent(i int, op *history.Op, p *procState) bool {
	switch op.F {
	case history.FStep:
		p.steps = append(p.steps, op.Value)
	case history.FExtend:
		ps.a.extendOp(i, p)
	case history.FResend:
		ps.a.resends = append(ps.a.resends, int32(i))
	case history.FLost, history.FStart, history.FStop:
		// lost does not end a hold: the client still believes in its
		// critical section until it sends its release (the runner
		// releases right after a lost).
	case history.FAbandon:
		// A careful client stops believing at once: from here on it
		// neither reads nor writes, so it is no longer a holder, even
		// though its release (and the key in Redis) may come later.
		if k, ok := ps.a.keyIdx[op.Key]; ok {
			ps.endHold(p, k, op.Time, "abandon")
		}
	case history.FCrash:
		for len(p.holds) > 0 {
			ps.endHold(p, p.holds[0].key, op.Time, "crash")
		}
		p.crashed = true
		ps.closeWant(p.client, op.Time)
	default:
		return false
	}
	return true
}

// invoke starts an operation of p on key k: an acquire opens (or continues)
// the client's want; a release ends the hold when it is the last of a
// reentrant count.
func (ps *pass) invoke(i int, op *history.Op, p *procState, k int) {
	a := ps.a
	kd := a.keys[k]
	if p.busy {
		a.malformed++
		a.abandon(p)
	}
	c := curOp{f: op.F, key: k, invoke: op.Time, relHold: -1, n: op.N, fence: op.Fence, at: int32(i)}
	switch op.F {
	case history.FAcquire:
		a.attempts++
		p.stats()[0]++
		c.acq = len(kd.acquires)
		kd.acquires = append(room(ps, kd.acquires), acqRec{invoke: op.Time, done: -1, client: p.client})
		p.steps = p.steps[:0]
		if ps.wantOf(p.client) == nil {
			ps.openWant(p.client, k, op.Time)
		}
	case history.FRelease:
		if hk := p.holds.get(k); hk != nil && hk.count > 0 {
			hk.count--
			if hk.count == 0 {
				c.relHold = hk.hold
				ps.endHold(p, k, op.Time, "release")
			}
		}
	}
	p.op, p.busy = c, true
}

// complete ends p's operation in flight on key k.
func (ps *pass) complete(i int, op *history.Op, p *procState, k int) {
	a := ps.a
	kd := a.keys[k]
	if op.Type != history.Ok && op.Type != history.Fail && op.Type != history.Info {
		a.malformed++
		return
	}
	c := &p.op
	if !p.busy || c.f != op.F || a.keys[c.key].name != op.Key {
		a.malformed++
		return
	}
	p.busy = false
	if op.Type == history.Info {
		a.unknown++
	}
	switch op.F {
	case history.FAcquire:
		ps.acquireDone(i, op, p, k, c)
	case history.FRelease:
		switch {
		case op.Type == history.Ok:
			a.releaseRefs = append(room(ps, a.releaseRefs), releaseRef{c.at, int32(i), int32(p.client)})
		case op.Type == history.Fail && !op.ErrorReply:
			a.refusalRefs = append(a.refusalRefs, releaseRef{c.at, int32(i), int32(p.client)})
		}
		if c.relHold >= 0 && op.Type != history.Info {
			hr := &kd.holds[c.relHold]
			hr.relDone, hr.relOK = op.Time, op.Type == history.Ok
		}
	case history.FWrite:
		kd.writes = append(room(ps, kd.writes), writeRec{process: p.id, client: p.client, invoke: c.invoke,
			typ: history.TypeCode(op.Type), n: op.N, fence: op.Fence})
	}
	if op.Type == history.Info {
		ps.inherit[p.client] = p
	}
}

// acquireDone completes an acquire: a grant starts a hold (or continues a
// reentrant one) and closes the want; a refusal or an unknown outcome leaves
// the want open until the client's next action says whether it retries.
func (ps *pass) acquireDone(i int, op *history.Op, p *procState, k int, c *curOp) {
	a := ps.a
	kd := a.keys[k]
	ar := &kd.acquires[c.acq]
	ar.done = op.Time
	if d := op.Time - ar.invoke; d > a.longest {
		a.longest = d
	}
	if op.Type != history.Ok {
		if op.Type == history.Info {
			kd.unknowns = append(kd.unknowns, unknownAcq{process: p.id, client: p.client, invoke: ar.invoke})
		}
		if w := ps.wantOf(p.client); w != nil && w.key == k {
			w.tentative = true
			if op.Type == history.Fail {
				w.lastFail = op.Time
			}
		}
		return
	}
	if op.Value != "" {
		a.ownerRefs = append(room(ps, a.ownerRefs), ownerRef{int32(i), int32(p.client)})
	}
	a.acquired++
	p.stats()[1]++
	a.latencies = append(room(ps, a.latencies), op.Time-ar.invoke)
	if op.Fence > 0 {
		if n := len(kd.fences); n > 0 && op.Fence <= kd.fences[n-1].fence {
			kd.fencesUp = false
		}
		kd.fences = append(room(ps, kd.fences), grant{op.Fence, p.id, op.Time})
	}
	if hk := p.holds.get(k); hk != nil && hk.count > 0 {
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
			p.holds.add(k, len(kd.holds))
		}
		kd.holds = append(room(ps, kd.holds), hr)
	}
	if w := ps.wantOf(p.client); w != nil && w.key == k {
		w.tentative = false
		ps.closeWant(p.client, op.Time)
	}
}

// finish ends the history: what is still in flight never completed, holds
// and wants still open end at its end, and each key's lists are put in the
// orders the checks rely on.
func (ps *pass) finish() {
	a := ps.a
	ps.procs.Each(func(_ int, p *procState) {
		if p.busy {
			a.abandon(p)
		}
		for len(p.holds) > 0 {
			ps.endHold(p, p.holds[0].key, a.end, "end")
		}
	})
	ps.wants.Each(func(c int, w *want) {
		if w.tentative {
			ps.closeWant(c, 0)
		} else {
			ps.closeWant(c, a.end)
		}
	})
	a.mergeLags()
	a.sortRenewals()
	for _, kd := range a.keys {
		for i := range kd.holds {
			if kd.holds[i].To < 0 { // held by a process that was inherited and never seen again
				kd.holds[i].To, kd.holds[i].relDone, kd.holds[i].End = a.end, a.end, "end"
			}
		}
		kd.countDupFences()
		// By From (they are, being recorded in time order): the overlap
		// pass and the liveness checks rely on it and run concurrently.
		if !sort.SliceIsSorted(kd.holds, func(i, j int) bool { return kd.holds[i].From < kd.holds[j].From }) {
			sort.SliceStable(kd.holds, func(i, j int) bool { return kd.holds[i].From < kd.holds[j].From })
		}
		sort.Slice(kd.wants, func(i, j int) bool { return kd.wants[i].From < kd.wants[j].From })
		sort.SliceStable(kd.unknowns, func(i, j int) bool { return kd.unknowns[i].invoke < kd.unknowns[j].invoke })
	}
}

// abandon ends p's operation in flight without a completion: an acquire
// becomes an unknown one (its SET may still land).
func (a *analysis) abandon(p *procState) {
	c := &p.op
	p.busy = false
	if c.f == history.FAcquire {
		kd := a.keys[c.key]
		kd.unknowns = append(kd.unknowns, unknownAcq{process: p.id, client: p.client, invoke: c.invoke})
	}
}

// extendOp records one extend entry. An acknowledged extend joins the
// releases for the false-success check; a completion without its invoke is
// malformed. An extend never opens or ends a hold: the client believes in
// its lock across it either way (a failed extend is the client's news, and
// the workload decides what to do about it).
func (a *analysis) extendOp(i int, p *procState) {
	op := &a.h[i]
	id := [2]int64{int64(op.Client), op.N}
	if op.Type == history.Invoke {
		if _, ok := a.extending[id]; ok {
			a.malformed++
		}
		a.extending[id] = int32(i)
		a.extends.invoked++
		return
	}
	at, ok := a.extending[id]
	if !ok || a.h[at].Key != op.Key {
		a.malformed++
		return
	}
	delete(a.extending, id)
	a.addRenewal(p.client, extendFlight{key: op.Key, invoke: a.h[at].Time, done: op.Time, outcome: op.Type})
	switch op.Type {
	case history.Ok:
		a.extends.ok++
		a.releaseRefs = append(a.releaseRefs, releaseRef{at, int32(i), int32(p.client)})
	case history.Fail:
		a.extends.fail++
		if !op.ErrorReply {
			a.refusalRefs = append(a.refusalRefs, releaseRef{at, int32(i), int32(p.client)})
		}
	default:
		a.extends.unknown++
	}
}

// releases returns the releases and extends acknowledged ok, in the order
// of their completions.
func (a *analysis) releases() []keyevents.Release { return a.releasesOf(a.releaseRefs) }

// releasesOf is the releases or extends refs points at, as keyevents reads
// them.
func (a *analysis) releasesOf(refs []releaseRef) []keyevents.Release {
	out := make([]keyevents.Release, len(refs))
	for i, r := range refs {
		inv, done := &a.h[r.inv], &a.h[r.done]
		invoke := inv.Time
		if done.F == history.FRelease && done.N > invoke && done.N <= done.Time {
			// The runner held the release at its own failpoint after the
			// invoke (which ends the hold: the critical section is over);
			// its command could act only from when the call began.
			invoke = done.N
		}
		out[i] = keyevents.Release{F: done.F, Extend: done.F == history.FExtend, Process: done.Process, Client: int(r.client), Key: done.Key, Token: inv.Value,
			Invoke: invoke, Done: done.Time}
	}
	return out
}

// ownersOf builds a.owners from the acquires granted with a value, in
// order. Timestamp-valued locks can grant two clients the same value (the
// same millisecond): then the value does not say whose the key is, and no
// check may rely on it.
//
// Several checks read it concurrently (false success, leaks): it is built
// once.
func (a *analysis) ownersOf() map[string]int {
	a.ownersOnce.Do(func() {
		a.owners = make(map[string]int, len(a.ownerRefs))
		for _, r := range a.ownerRefs {
			v, c := a.h[r.at].Value, int(r.client)
			if prev, seen := a.owners[v]; seen && prev != c {
				a.owners[v] = keyevents.AmbiguousOwner
			} else {
				a.owners[v] = c
			}
		}
	})
	return a.owners
}

// countDupFences counts the fences granted to two processes: once per
// fence, at the first grant to a process other than its first holder
// (dupAt is the earliest of those). Fences that only ever rose have no
// repeat; otherwise the grants are grouped by fence, sorted in place
// rather than hashed into a map, since a repeated fence is rare.
func (kd *keyData) countDupFences() {
	if kd.fencesUp {
		return
	}
	g := kd.fences
	slices.SortStableFunc(g, func(x, y grant) int { return cmp.Compare(x.fence, y.fence) })
	for i := 0; i < len(g); {
		j := i + 1
		for ; j < len(g) && g[j].fence == g[i].fence; j++ {
		}
		for m := i + 1; m < j; m++ {
			if g[m].process != g[i].process {
				kd.dups++
				if kd.dupAt < 0 || g[m].at < kd.dupAt {
					kd.dupAt = g[m].at
				}
				break
			}
		}
		i = j
	}
}
