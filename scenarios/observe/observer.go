// Package observe watches the servers' side of a run: an Observer per
// node records the lock keys' keyspace events and periodic syncs into the
// run's history (history.FServer, history.FSync), on a connection of its
// own outside every proxy.
package observe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/internal/resp"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// Observer is the server's ground truth. An observer per node watches the lock keys
// through keyspace notifications on a connection of its own, straight to the
// node's address (outside every proxy, so no client fault touches it), and
// records each event as a history entry of process history.ServerProcess:
// F "server", Key, Value the event (set, del, expired, evicted, expire,
// hset, hincrby, ...), Node the node, Owner what the key held after a set.
//
// Keyspace events carry no values, and whose key it is after a set is the
// point. Reading the value with GET on another connection would be racy
// (the key may change between the event and the GET, and nothing would
// tell). The observer instead speaks RESP3 on one connection, where pushes
// and replies share one ordered stream: on a set event it sends GET (HKEYS
// for a hash) on the same connection. Redis writes to a connection's output
// in the order it generates things, so every event on that key that happened
// before the GET ran is pushed before the GET's reply. If none that can
// change the value (anything but expire and persist) arrived in between, the
// reply is exactly the value the set wrote; if one did, the value is unknown
// and Owner stays empty (checks then claim nothing).
//
// Times: an event's time is when the harness had both the event and its
// value (for a set) — after the server executed it, by the loopback latency
// and the observer's scheduling. Within a node the order of entries is the
// server's; across nodes, and against client entries, only these receipt
// times relate them, so a check may only use "received before t ⇒ happened
// before t".
//
// Syncs bound the other side. Every syncEvery, and once more when the
// observer closes, it sends PING on the same connection and records the
// reply as an FSync entry with the send time: the node executed the PING
// after it was sent, so what follows the entry in the node's order
// happened after that time, and what the node did before it is all in
// the stream before the entry. A check that needs the stream complete up
// to a moment t waits for a sync sent after t; without one (the observer
// lagging or its node gone) it does not judge. The syncs' round trips are
// the observers' lag, reported with the result.
type Observer struct {
	node string
	addr string
	// conn and r are the current connection (replaced under mu when the
	// observer reconnects after its node restarted).
	conn net.Conn
	r    *bufio.Reader
	rec  *history.Recorder
	keys map[string]string // the Redis key watched → the harness's key
	done chan struct{}
	// stop ends the periodic syncs; last is closed when the final sync's
	// reply has been recorded and no read is in flight.
	stop chan struct{}
	last chan struct{}
	// after runs once the observer is closed (OnClose: the delay proxies).
	after func()
	// slack is added to the waits for replies (a delayed connection).
	slack time.Duration

	// mu guards the connection's writes and everything below: the loop
	// (replies, events) and the sync ticker both send and queue.
	mu sync.Mutex

	// queue holds entries not yet recorded, in the node's order: a set
	// waits there for its read's reply, and what follows it waits behind
	// it. reads are the sets whose read is in flight, in send order.
	queue []*queued
	reads []*queued
	seen  map[string]int // key → value-changing events received
	// unsent holds the reads not yet written, those of the last nUnsent
	// entries of reads: one write per batch of events received together
	// instead of one per event, as a write is a system call on a path
	// that runs once per lock cycle (pipelined reads prove what a read
	// written at once proves, see event).
	unsent  []byte
	nUnsent int
	// finalIn: the final sync's reply came; lastClosed: last is closed.
	finalIn, lastClosed bool
}

type queued struct {
	op      history.Op
	waiting bool // its read is unanswered
	seen    int  // value-changing events on the key received when the read was sent
	// final, on a sync, says it is the one Close waits for.
	final bool
}

// syncEvery is how often an observer syncs its stream: the longest a
// release waits, after it completes, for the proof its window is closed.
const syncEvery = 20 * time.Millisecond

// finalSyncWait bounds how long Close waits for the last sync's reply; a
// node that does not answer (killed, stopped) leaves its stream open, and
// releases that need it are not judged.
const finalSyncWait = 2 * time.Second

// ErrNoNotifications says the backend cannot report key events.
var ErrNoNotifications = errors.New("no keyspace notifications")

// UnseenKeys are the keys some client acquired, when no observer received a
// single event on any of them: a lock whose Redis key is not the harness's
// (a library that prefixes its keys) is then judged by nothing the servers
// saw, and the run should say so rather than pass in silence. A name that
// does not match hides every key; when some acquired key was seen, the
// names match, and a key without events is one whose grants all came from
// a node that went away before its events arrived (sentinel-kill-random's
// killed master), which is no reason to doubt the lock's key names.
func UnseenKeys(h history.History) []string {
	acquired, seen := map[string]bool{}, map[string]bool{}
	for _, op := range h {
		switch {
		case op.F == history.FServer:
			seen[op.Key] = true
		case op.F == history.FAcquire && op.Type == history.Ok:
			acquired[op.Key] = true
		}
	}
	var out []string
	for k := range acquired {
		if seen[k] {
			return nil
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// CloseAll closes every observer of obs (Close).
func CloseAll(obs []*Observer) {
	for _, o := range obs {
		o.Close()
	}
}

// Delayed routes the observers' connections to nodes through proxies of
// their own with latency and jitter on what the servers send (latency
// unset: nodes as they are). closeProxies stops the proxies.
func Delayed(nodes []cluster.Node, latency, jitter time.Duration) (out []cluster.Node, closeProxies func(), err error) {
	if latency <= 0 {
		return nodes, func() {}, nil
	}
	net := nemesis.NewNetwork()
	for _, n := range nodes {
		l, err := net.AddLink("observer", n.Name, n.Addr)
		if err == nil {
			_, err = l.AddToxic(nemesis.Toxic{Type: "latency", Stream: "downstream",
				Attributes: map[string]any{"latency": latency.Milliseconds(), "jitter": jitter.Milliseconds()}})
		}
		if err != nil {
			net.Close()
			return nil, nil, fmt.Errorf("observer delay: %w", err)
		}
		n.Addr = l.Addr
		out = append(out, n)
	}
	return out, net.Close, nil
}

// Start starts an observer on each node; on a backend without keyspace
// notifications (miniredis) it returns ErrNoNotifications and starts none.
// slack lengthens the set-up's deadline (a delayed connection's replies).
// redisKey, when set, is the Redis key the lock uses for each of keys
// (lockimpl.Info.RedisKey): that key is watched, its events recorded under
// the harness's.
func Start(ctx context.Context, nodes []cluster.Node, keys []string, redisKey func(string) string, rec *history.Recorder, slack time.Duration) ([]*Observer, error) {
	watched := map[string]string{}
	for _, k := range keys {
		if redisKey != nil {
			watched[redisKey(k)] = k
		} else {
			watched[k] = k
		}
	}
	var out []*Observer
	for _, n := range nodes {
		o, err := startObserver(ctx, n.Name, n.Addr, watched, rec, slack)
		if err != nil {
			for _, o := range out {
				o.Close()
			}
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func startObserver(ctx context.Context, node, addr string, keys map[string]string, rec *history.Recorder, slack time.Duration) (*Observer, error) {
	conn, r, err := subscribe(ctx, node, addr, keys, slack)
	if err != nil {
		return nil, err
	}
	o := &Observer{node: node, addr: addr, conn: conn, r: r, rec: rec, keys: keys,
		done: make(chan struct{}), stop: make(chan struct{}), last: make(chan struct{}), seen: map[string]int{}, slack: slack}
	go o.loop()
	go o.syncLoop()
	return o, nil
}

// subscribe dials node, turns its keyspace notifications on and subscribes
// to the keys' channels, on a connection of its own.
func subscribe(ctx context.Context, node, addr string, keys map[string]string, slack time.Duration) (net.Conn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("observer of %s: %w", node, err)
	}
	r := bufio.NewReader(conn)
	fail := func(err error) (net.Conn, *bufio.Reader, error) {
		conn.Close()
		return nil, nil, err
	}
	_ = conn.SetDeadline(time.Now().Add(2*time.Second + slack))
	// K: keyspace channel (__keyspace@0__:KEY, the event as message);
	// g: generic (del, expire, rename); $: strings (set); h: hashes;
	// x: expired; e: evicted.
	setup := [][]string{{"HELLO", "3"}, {"CONFIG", "SET", "notify-keyspace-events", "Kg$hxe"}}
	for _, cmd := range setup {
		if err := resp.Write(conn, cmd...); err != nil {
			return fail(fmt.Errorf("observer of %s: %w", node, err))
		}
		v, err := resp.Read(r)
		if err == nil {
			if e, ok := v.(resp.Error); ok {
				err = e
			}
		}
		if err != nil {
			return fail(fmt.Errorf("observer of %s: %s: %w: %v", node, cmd[0], ErrNoNotifications, err))
		}
	}
	// READONLY lets the observer's GET read a cluster replica's value
	// instead of a MOVED redirect; outside a cluster it is refused, which
	// changes nothing.
	if err := resp.Write(conn, "READONLY"); err == nil {
		if _, err = resp.Read(r); err != nil {
			return fail(fmt.Errorf("observer of %s: READONLY: %w", node, err))
		}
	}
	chans := make([]string, 0, len(keys)+1)
	chans = append(chans, "SUBSCRIBE")
	for k := range keys {
		chans = append(chans, "__keyspace@0__:"+k)
	}
	if err := resp.Write(conn, chans...); err != nil {
		return fail(fmt.Errorf("observer of %s: %w", node, err))
	}
	for range keys { // one subscribe confirmation per channel
		if _, err := resp.Read(r); err != nil {
			return fail(fmt.Errorf("observer of %s: subscribe: %w", node, err))
		}
	}
	_ = conn.SetDeadline(time.Time{})
	return conn, r, nil
}

// syncLoop sends a sync every syncEvery until Close.
func (o *Observer) syncLoop() {
	t := time.NewTicker(syncEvery)
	defer t.Stop()
	for {
		select {
		case <-o.stop:
			return
		case <-o.done:
			return
		case <-t.C:
			o.sync(false)
		}
	}
}

// sync sends PING and queues its FSync entry, stamped with the send time.
func (o *Observer) sync(final bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	q := &queued{op: history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FSync,
		Node: o.node, N: o.rec.Now()}, waiting: true, final: final}
	o.unsent = append(o.unsent, resp.Command("PING")...)
	if !o.flushReads() {
		return false
	}
	// Into the queue only when its reply arrives: the events the node
	// pushed before the reply are received (and queued) after the send.
	o.reads = append(o.reads, q)
	return true
}

const keyspacePrefix = "__keyspace@0__:"

func (o *Observer) loop() {
	defer close(o.done)
	for {
		v, err := resp.Read(o.r)
		if err != nil {
			o.flush()
			if !o.reconnect() {
				return
			}
			continue
		}
		o.mu.Lock()
		if p, ok := v.(resp.Push); ok {
			o.event(p)
		} else {
			o.reply(v)
		}
		// The reads go out when nothing received is left to handle: the
		// next read may wait for the node, and no read may wait on it.
		if o.r.Buffered() == 0 {
			o.flushReads()
		}
		o.mu.Unlock()
	}
}

// event handles one push: ["message", "__keyspace@0__:KEY", "EVENT"].
func (o *Observer) event(p resp.Push) {
	if len(p) != 3 || p[0] != "message" {
		return
	}
	ch, _ := p[1].(string)
	ev, _ := p[2].(string)
	key, ok := strings.CutPrefix(ch, keyspacePrefix)
	name, ok := o.keys[key]
	if !ok {
		return
	}
	if ev != "expire" && ev != "persist" {
		// A TTL change leaves the value as it was (SET ... PX itself
		// pushes set then expire); anything else may have changed it.
		o.seen[key]++
	}
	op := history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer, Key: name, Value: ev, Node: o.node}
	read := ""
	switch ev {
	case "set", "restore":
		// restore: a key migrated here with its value (MIGRATE).
		read = "GET"
	case "hset", "hincrby", "hincrbyfloat":
		read = "HKEYS"
	}
	q := &queued{op: op}
	if read != "" {
		// Written with the batch's other reads, after every event received
		// with this one: an event on the key that lands between the set
		// and the read's execution counts in seen before the reply, as it
		// would for a read written at once, and the owner stays unknown.
		q.waiting, q.seen = true, o.seen[key]
		o.reads = append(o.reads, q)
		o.unsent = append(o.unsent, resp.Command(read, key)...)
		o.nUnsent++
	}
	o.queue = append(o.queue, q)
	o.drain()
}

// flushReads writes the unsent commands (the batch's reads, a sync's
// PING last). When the write fails, the batch's reads are given up as a
// read that could not be sent always was: their sets are recorded with
// the owner unknown instead of waiting for replies that will not come.
// The caller holds mu.
func (o *Observer) flushReads() bool {
	if len(o.unsent) == 0 {
		return true
	}
	_, err := o.conn.Write(o.unsent)
	o.unsent = o.unsent[:0]
	if err != nil {
		for _, q := range o.reads[len(o.reads)-o.nUnsent:] {
			q.waiting = false
		}
		o.reads = o.reads[:len(o.reads)-o.nUnsent]
		o.nUnsent = 0
		o.drain()
		return false
	}
	o.nUnsent = 0
	return true
}

// reply answers the oldest read in flight.
func (o *Observer) reply(v any) {
	if len(o.reads) == 0 {
		return
	}
	q := o.reads[0]
	o.reads = o.reads[1:]
	q.waiting = false
	if q.op.F == history.FSync {
		o.queue = append(o.queue, q)
		o.finalIn = o.finalIn || q.final
	} else if o.seen[q.op.Key] == q.seen {
		// No event on the key between the set and the read: the value is
		// the one the set wrote.
		switch x := v.(type) {
		case string:
			q.op.Owner = x
		case []any:
			var f []string
			for _, e := range x {
				if s, ok := e.(string); ok {
					f = append(f, s)
				}
			}
			q.op.Owner = strings.Join(f, ",")
		}
	}
	o.drain()
	// The final sync's reply proves every event before it received, not
	// the replies to the reads those events sent after the sync: Close
	// waits for them too, or the run's last sets would lose their owners.
	if o.finalIn && len(o.reads) == 0 && !o.lastClosed {
		o.lastClosed = true
		close(o.last)
	}
}

// drain records the queue's head up to the first entry still waiting.
func (o *Observer) drain() {
	i := 0
	for ; i < len(o.queue) && !o.queue[i].waiting; i++ {
		o.rec.Add(o.queue[i].op)
	}
	o.queue = o.queue[i:]
}

// flush records whatever is still queued when the connection ends (reads
// unanswered: owner unknown). A sync whose reply never came proves
// nothing and is dropped.
func (o *Observer) flush() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, q := range o.queue {
		if q.op.F != history.FSync {
			o.rec.Add(q.op)
		}
	}
	o.queue, o.reads = nil, nil
}

// reconnectEvery is how often an observer whose connection ended dials its
// node again: a node the scenario restarts answers within a few of them.
const reconnectEvery = 20 * time.Millisecond

// reconnect records the gap (history.GapEvent on each watched key) and
// dials the node until it answers or the observer is closed; false:
// closed.
func (o *Observer) reconnect() bool {
	select {
	case <-o.stop:
		return false
	default:
	}
	o.mu.Lock()
	for _, name := range o.keys {
		o.rec.Add(history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer,
			Key: name, Value: history.GapEvent, Node: o.node})
	}
	o.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-o.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(reconnectEvery)
	defer t.Stop()
	for {
		if conn, r, err := subscribe(ctx, o.node, o.addr, o.keys, o.slack); err == nil {
			o.mu.Lock()
			defer o.mu.Unlock()
			select {
			case <-o.stop:
				conn.Close()
				return false
			default:
			}
			// What the old connection still owed (a sync or read written
			// to it after its end was read, racing flush) is answered by
			// nothing: the new connection's replies answer its own.
			for _, q := range o.queue {
				q.waiting = false
			}
			o.drain()
			o.reads, o.unsent, o.nUnsent = nil, o.unsent[:0], 0
			o.conn, o.r = conn, r
			return true
		}
		select {
		case <-o.stop:
			return false
		case <-t.C:
		}
	}
}

// OnClose makes f run once the observer is closed (the proxies of
// Delayed, closed with the last observer).
func (o *Observer) OnClose(f func()) { o.after = f }

// Close syncs the stream one last time (every event the node executed
// before now is then recorded), stops the observer and waits for its
// last entries.
func (o *Observer) Close() {
	close(o.stop)
	if o.sync(true) {
		t := time.NewTimer(finalSyncWait + o.slack)
		select {
		case <-o.last:
		case <-o.done:
		case <-t.C:
		}
		t.Stop()
	}
	o.mu.Lock()
	conn := o.conn
	o.mu.Unlock()
	_ = conn.Close()
	<-o.done
	if o.after != nil {
		o.after()
	}
}
