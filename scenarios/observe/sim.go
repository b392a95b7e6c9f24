package observe

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
)

// SimObservers record the key events of a sim backend's nodes, as the
// Observers do on redis-server, with the same history entries (FServer,
// FSync). miniredis has no keyspace notifications; a sim node is
// in-process instead, so its watcher (cluster.Watcher) sees each command
// before it runs and each reply before it is written, and the key's state
// is read straight from the server between the two. An event's time is
// the instant the command ran (virtual time: no receipt lag), its owner
// the exact value the key held after it. Expiry, which miniredis applies
// lazily, is read at the instant the key's TTL runs out, by a timer.
//
// One reply may follow several commands on a key (a script's calls): the
// events are the commands' that changed the key, in order, and only the
// last value-changing one knows its owner, as on a real server where the
// observer's read follows them all.
type SimObservers struct {
	nodes []*simNode
	stop  chan struct{}
	wg    sync.WaitGroup
}

// StartSim starts watching every node of m: keys are the harness's lock
// keys, redisKey (when set) the lock's own key for each.
func StartSim(m *cluster.Minis, nodes []cluster.Node, keys []string, redisKey func(string) string, rec *history.Recorder) (*SimObservers, error) {
	s := &SimObservers{stop: make(chan struct{})}
	for i, n := range nodes {
		sn := &simNode{m: m, i: i, name: n.Name, rec: rec, keys: map[string]string{},
			state: map[string]simKey{}, timers: map[string]*time.Timer{}}
		for _, k := range keys {
			rk := k
			if redisKey != nil {
				rk = redisKey(k)
			}
			sn.keys[rk] = k
		}
		if err := m.Watch(i, sn); err != nil {
			s.Close()
			return nil, err
		}
		s.nodes = append(s.nodes, sn)
		s.wg.Add(1)
		go s.syncLoop(sn)
	}
	return s, nil
}

// Close records each node's last sync and stops watching.
func (s *SimObservers) Close() {
	close(s.stop)
	s.wg.Wait()
	for _, n := range s.nodes {
		_ = n.m.Watch(n.i, nil)
		n.mu.Lock()
		n.sync()
		for _, t := range n.timers {
			t.Stop()
		}
		n.done = true
		n.mu.Unlock()
	}
}

// syncLoop records a sync every syncEvery while the node answers: a
// paused node's PING would wait, and a killed one's observer is gone.
func (s *SimObservers) syncLoop(n *simNode) {
	defer s.wg.Done()
	// Off the round instants at which faults are scheduled (whole
	// milliseconds) and off each other's: a sync and a kill of its node at
	// one virtual instant would be recorded in the scheduler's order.
	select {
	case <-s.stop:
		return
	case <-time.After(syncPhase * time.Duration(n.i+1)):
	}
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			n.mu.Lock()
			n.sync()
			n.mu.Unlock()
		}
	}
}

// syncPhase staggers the nodes' syncs (see syncLoop).
const syncPhase = 13_717 * time.Nanosecond

// simKey is what a watched key holds.
type simKey struct {
	exists   bool
	value    string // a string's value, a hash's fields joined by ","
	counts   string // a hash's values, joined by "," (a reentrant count)
	deadline time.Time
}

// simNode watches one node (cluster.Watcher).
type simNode struct {
	m    *cluster.Minis
	i    int
	name string
	rec  *history.Recorder
	keys map[string]string // the Redis key watched → the harness's key

	// pmu guards pending alone: Command runs inside a script holding the
	// server, so it must never wait for mu, whose holder may be waiting
	// for the server.
	pmu     sync.Mutex
	pending []simCmd

	mu     sync.Mutex
	state  map[string]simKey
	timers map[string]*time.Timer
	done   bool // the node was killed or the observers closed: nothing more is recorded
}

type simCmd struct{ cmd, key string }

// Command implements cluster.Watcher: it notes the commands on watched
// keys (it runs inside a script's call, so it reads nothing).
func (n *simNode) Command(cmd string, args []string) {
	if len(args) == 0 {
		return
	}
	if _, ok := n.keys[args[0]]; !ok {
		return
	}
	n.pmu.Lock()
	n.pending = append(n.pending, simCmd{strings.ToLower(cmd), args[0]})
	n.pmu.Unlock()
}

// Replied implements cluster.Watcher: the commands noted ran; their
// effects are read and recorded.
func (n *simNode) Replied() {
	n.pmu.Lock()
	cmds := n.pending
	n.pending = nil
	n.pmu.Unlock()
	if len(cmds) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	mr := n.m.Mini(n.i)
	for _, key := range sortedKeys(cmds) {
		n.changed(mr, key, cmds)
	}
}

// Killed implements cluster.Watcher: the node's stream ends, as a real
// observer's connection does when its server dies.
func (n *simNode) Killed() {
	n.mu.Lock()
	n.done = true
	n.mu.Unlock()
}

// sync records a sync (the caller holds mu) unless the node is gone or
// paused.
func (n *simNode) sync() {
	if n.done || n.m.Paused(n.i) {
		return
	}
	n.rec.Add(history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FSync,
		Node: n.name, N: n.rec.Now()})
}

// changed records the events of cmds on key, from the key's state before
// and after them.
func (n *simNode) changed(mr *miniredis.Miniredis, key string, cmds []simCmd) {
	before, after := n.state[key], read(mr, key)
	if before == after {
		// Nothing the commands did changed the key (a refused SET NX):
		// its expiry timer, if any, is already set for this deadline.
		// Making it anew cost a timer for each of the thousands of
		// refusals of a contended run.
		return
	}
	n.state[key] = after
	n.arm(key, after)
	var evs []string
	for _, c := range cmds {
		if c.key == key {
			evs = append(evs, eventsOf(c.cmd, before, after)...)
		}
	}
	if len(evs) == 0 {
		evs = []string{diffEvent(before, after)}
	}
	last := -1
	for i, ev := range evs {
		if valueEvent(ev) {
			last = i
		}
	}
	for i, ev := range evs {
		op := history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer,
			Key: n.keys[key], Value: ev, Node: n.name}
		if i == last && after.exists && (ev == "set" || strings.HasPrefix(ev, "h")) {
			op.Owner = after.value
		}
		n.rec.Add(op)
	}
}

// arm sets the timer that reads key when its TTL runs out.
func (n *simNode) arm(key string, k simKey) {
	if t := n.timers[key]; t != nil {
		t.Stop()
		delete(n.timers, key)
	}
	if !k.exists || k.deadline.IsZero() {
		return
	}
	n.timers[key] = time.AfterFunc(time.Until(k.deadline), func() { n.expire(key) })
}

// expire reads key at its deadline: gone, it expired.
func (n *simNode) expire(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	delete(n.timers, key)
	after := read(n.m.Mini(n.i), key)
	if after.exists {
		n.state[key] = after
		n.arm(key, after)
		return
	}
	n.state[key] = after
	n.rec.Add(history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer,
		Key: n.keys[key], Value: "expired", Node: n.name})
}

// read is key's state on mr (reading it expires it when its TTL is out).
func read(mr *miniredis.Miniredis, key string) simKey {
	if mr == nil || !mr.Exists(key) {
		return simKey{}
	}
	k := simKey{exists: true}
	switch mr.Type(key) {
	case "hash":
		f, _ := mr.HKeys(key)
		k.value = strings.Join(f, ",")
		for _, x := range f {
			k.counts += mr.HGet(key, x) + ","
		}
	default:
		k.value, _ = mr.Get(key)
	}
	if ttl := mr.TTL(key); ttl > 0 {
		k.deadline = time.Now().Add(ttl)
	}
	return k
}

// eventsOf is what Redis notifies for cmd, given what it did to the key.
func eventsOf(cmd string, before, after simKey) []string {
	switch cmd {
	case "set", "setnx", "getset", "setex", "psetex", "setrange", "append", "incr", "incrby", "decr", "decrby":
		if !after.exists {
			return nil
		}
		if after.deadline != before.deadline && !after.deadline.IsZero() {
			return []string{"set", "expire"}
		}
		return []string{"set"}
	case "del", "unlink", "getdel":
		if !after.exists && before.exists {
			return []string{"del"}
		}
	case "expire", "pexpire", "expireat", "pexpireat":
		if !after.exists && before.exists {
			return []string{"del"} // a deadline in the past deletes the key
		}
		if after.deadline != before.deadline {
			return []string{"expire"}
		}
	case "persist":
		if before.exists && !before.deadline.IsZero() && after.deadline.IsZero() {
			return []string{"persist"}
		}
	case "hset", "hmset", "hsetnx", "hincrby", "hincrbyfloat", "hdel":
		ev := cmd
		if cmd == "hmset" || cmd == "hsetnx" {
			ev = "hset"
		}
		if !after.exists && before.exists {
			return []string{ev, "del"}
		}
		if after.value != before.value || after.counts != before.counts {
			return []string{ev}
		}
	}
	return nil
}

// diffEvent names a change no known command explains.
func diffEvent(before, after simKey) string {
	switch {
	case !after.exists:
		return "del"
	case after.value != before.value || !before.exists:
		return "set"
	case after.deadline.IsZero():
		return "persist"
	}
	return "expire"
}

// valueEvent says whether ev may change the key's value (as the real
// observer counts them: anything but expire and persist).
func valueEvent(ev string) bool { return ev != "expire" && ev != "persist" }

// sortedKeys are the keys cmds touched, in order of first touch.
func sortedKeys(cmds []simCmd) []string {
	var out []string
	for _, c := range cmds {
		if !slices.Contains(out, c.key) {
			out = append(out, c.key)
		}
	}
	return out
}
