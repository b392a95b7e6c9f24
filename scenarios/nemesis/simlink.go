package nemesis

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
)

// A sim link is a link of the sim backend: no listener, no toxiproxy; a
// connection is a pair of in-memory pipes (net.Pipe) and a relay per
// direction, in a bubble of virtual time (internal/sim). Its toxics do in
// virtual time what toxiproxy v2.12.0's do on a real link, chunk by chunk:
//
//   - latency: each chunk leaves latency ± jitter after it arrived, and
//     never before the chunk ahead of it (toxiproxy's latency toxic is one
//     sequential stage); removing it delivers what it holds at once.
//   - bandwidth: each chunk leaves len/rate after it or the one ahead of
//     it left, whichever is later.
//   - timeout 0 (blackhole, partition, lost-reply): chunks are dropped;
//     removing it closes the connection (toxiproxy's Cleanup closes the
//     stub), so the clients reconnect.
//   - reset_peer 0: the first chunk closes the connection, unread.
//
// Every hop also takes a loopback delay of its own (simHop plus up to
// simHopJitter, drawn per chunk), as a real relay does: two messages sent
// at one virtual instant on two links then reach the server at two
// instants, in an order the seed decides, never the Go scheduler. Every
// draw comes from a generator of the link's own, seeded by the run's seed,
// the link's name, the connection's number and the direction, so the
// same seed gives the same delays whatever else runs.
const (
	simHop       = 40 * time.Microsecond
	simHopJitter = 20 * time.Microsecond
)

// simNet is what a sim network's links need: the seed and the dial to a
// node's in-memory server.
type simNet struct {
	seed uint64
	dial func(addr string) (net.Conn, error)
}

// NewSimNetwork is a network of sim links: dial reaches a node's server by
// its address (cluster.Minis.Dial); seed seeds every delay drawn.
func NewSimNetwork(seed uint64, dial func(addr string) (net.Conn, error)) *Network {
	return &Network{links: map[string]*Link{}, sim: &simNet{seed: seed, dial: dial}}
}

// Sim says whether the network's links are sim links.
func (n *Network) Sim() bool { return n.sim != nil }

// simLink is a Link's state on a sim network.
type simLink struct {
	net    *simNet
	seq    uint64
	toxics map[string]simToxic // by name, in Link.names' directions
	order  []string            // toxic names in the order added (a chain)
	conns  map[*simConn]struct{}
}

type simToxic struct {
	t   Toxic
	dir stream.Direction
}

// simConn is one connection of a sim link: the client's pipe end, the
// server's connection, and a relay per direction.
type simConn struct {
	l      *Link
	client net.Conn // the link's end of the client's pipe
	server net.Conn
	once   sync.Once
	dirs   [stream.NumDirections]*simDir
}

func newSimLinkState(n *simNet) *simLink {
	return &simLink{net: n, toxics: map[string]simToxic{}, conns: map[*simConn]struct{}{}}
}

// Dial opens a connection through the sim link whose Addr is addr, as a
// TCP dial to a toxiproxy listener does: refused while the link refuses;
// accepted and then closed when the node behind it is down.
func (n *Network) Dial(addr string) (net.Conn, error) {
	var l *Link
	for _, x := range n.Links(nil) {
		if x.Addr == addr {
			l = x
		}
	}
	if l == nil || n.sim == nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	return l.simDial()
}

func (l *Link) simDial() (net.Conn, error) {
	if l.refused.Load() {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNRESET)}
	}
	mine, theirs := net.Pipe()
	l.mu.Lock()
	upstream := l.upstream
	l.mu.Unlock()
	up, err := l.sim.net.dial(upstream)
	if err != nil {
		// As the proxy: the client's connection was accepted, then closed.
		mine.Close()
		return theirs, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		mine.Close()
		up.Close()
		return theirs, nil
	}
	l.sim.seq++
	c := &simConn{l: l, client: mine, server: up}
	for _, d := range []stream.Direction{stream.Upstream, stream.Downstream} {
		h := fnv.New64a()
		fmt.Fprintf(h, "%s/%d/%d", l.Name(), l.sim.seq, d)
		c.dirs[d] = &simDir{c: c, dir: d, rng: rand.New(rand.NewPCG(l.sim.net.seed, h.Sum64())),
			wake: make(chan struct{}, 1)}
	}
	l.sim.conns[c] = struct{}{}
	c.dirs[stream.Upstream].start(mine, up)
	c.dirs[stream.Downstream].start(up, mine)
	return theirs, nil
}

// close closes both ends of the connection once.
func (c *simConn) close() {
	c.once.Do(func() {
		c.client.Close()
		c.server.Close()
		c.l.mu.Lock()
		delete(c.l.sim.conns, c)
		c.l.mu.Unlock()
	})
}

// simChunk is a chunk in flight and when it is due.
type simChunk struct {
	data []byte
	due  time.Time
}

// simDir relays one direction of a sim connection: read reads and
// stamps chunks, write delivers them when due.
type simDir struct {
	c   *simConn
	dir stream.Direction
	rng *rand.Rand

	mu    sync.Mutex
	queue []simChunk
	last  time.Time // when the chunk ahead left, or will
	ended bool      // the source ended: close once the queue is empty
	wake  chan struct{}
}

func (d *simDir) start(src, dst net.Conn) {
	go d.read(src)
	go d.write(dst)
}

// read takes each chunk as it arrives and decides its fate on the
// direction's toxics as they are now.
func (d *simDir) read(src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			d.arrive(slices.Clone(buf[:n]))
		}
		if err != nil {
			d.mu.Lock()
			d.ended = true
			d.mu.Unlock()
			d.poke()
			return
		}
	}
}

// arrive queues a chunk with its due time, drops it, or resets the
// connection, as the direction's toxics say.
func (d *simDir) arrive(b []byte) {
	now := time.Now()
	due := now.Add(simHop + time.Duration(d.rng.Int64N(int64(simHopJitter))))
	var rate int64
	for _, t := range d.c.l.simToxics(d.dir) {
		switch t.Type {
		case "timeout":
			return // dropped
		case "reset_peer":
			d.c.close()
			return
		case "latency":
			due = due.Add(latencyOf(t, d.rng))
		case "bandwidth":
			rate, _ = toInt64(t.Attributes["rate"])
		}
	}
	d.mu.Lock()
	if due.Before(d.last) {
		due = d.last
	}
	if rate > 0 {
		due = due.Add(time.Duration(len(b)) * time.Millisecond / time.Duration(rate))
	}
	d.last = due
	d.queue = append(d.queue, simChunk{data: b, due: due})
	d.mu.Unlock()
	d.poke()
}

func (d *simDir) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// write delivers the queue's chunks when due; the end of the source is
// passed on once everything ahead of it was delivered.
func (d *simDir) write(dst net.Conn) {
	for {
		d.mu.Lock()
		if len(d.queue) == 0 {
			ended := d.ended
			d.mu.Unlock()
			if ended {
				d.c.close()
				return
			}
			<-d.wake
			continue
		}
		head := d.queue[0]
		d.mu.Unlock()
		if wait := time.Until(head.due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-d.wake:
				t.Stop()
				continue // flushed, or more queued: look again
			}
		}
		d.mu.Lock()
		d.queue = d.queue[1:]
		d.mu.Unlock()
		if d.c.l.simDropping(d.dir) {
			continue // a blackhole put in while it was held
		}
		if _, err := dst.Write(head.data); err != nil {
			d.c.close()
			return
		}
	}
}

// flush makes every chunk held by a latency or bandwidth toxic due now (a
// removed toxic delivers what it holds at once).
func (d *simDir) flush() {
	now := time.Now()
	d.mu.Lock()
	for i := range d.queue {
		if d.queue[i].due.After(now) {
			d.queue[i].due = now
		}
	}
	d.last = now
	d.mu.Unlock()
	d.poke()
}

func latencyOf(t Toxic, rng *rand.Rand) time.Duration {
	lat, _ := toInt64(t.Attributes["latency"])
	jit, _ := toInt64(t.Attributes["jitter"])
	d := lat
	if jit > 0 {
		d += rng.Int64N(2*jit) - jit
	}
	return time.Duration(d) * time.Millisecond
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		return int64(x), true
	}
	return 0, false
}

// simToxics are dir's toxics in chain order.
func (l *Link) simToxics(dir stream.Direction) []Toxic {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Toxic
	for _, name := range l.sim.order {
		if t := l.sim.toxics[name]; t.dir == dir {
			out = append(out, t.t)
		}
	}
	return out
}

// simDropping says whether dir has a blackhole now.
func (l *Link) simDropping(dir stream.Direction) bool {
	return slices.ContainsFunc(l.simToxics(dir), func(t Toxic) bool { return t.Type == "timeout" })
}

// simAdd installs a toxic on a sim link; l.mu is held.
func (l *Link) simAdd(name string, t Toxic, dir stream.Direction) error {
	switch t.Type {
	case "latency", "bandwidth", "timeout", "reset_peer":
	default:
		return fmt.Errorf("link %s: the sim backend has no %s toxic", l.Name(), t.Type)
	}
	l.sim.toxics[name] = simToxic{t: t, dir: dir}
	l.sim.order = append(l.sim.order, name)
	return nil
}

// simRemove removes a toxic from a sim link, with what toxiproxy does on
// removal: held chunks go at once; a blackhole's connections close.
func (l *Link) simRemove(name string) error {
	l.mu.Lock()
	t, ok := l.sim.toxics[name]
	if !ok {
		l.mu.Unlock()
		return fmt.Errorf("link %s: remove toxic %s: %w", l.Name(), name, errNoToxic)
	}
	delete(l.sim.toxics, name)
	l.sim.order = slices.DeleteFunc(l.sim.order, func(s string) bool { return s == name })
	conns := make([]*simConn, 0, len(l.sim.conns))
	for c := range l.sim.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		switch t.t.Type {
		case "timeout":
			c.close()
		case "latency", "bandwidth":
			c.dirs[t.dir].flush()
		}
	}
	return nil
}

var errNoToxic = errors.New("no such toxic")

// simDropConns closes every connection of a sim link; l.mu is held.
func (l *Link) simDropConns() {
	conns := make([]*simConn, 0, len(l.sim.conns))
	for c := range l.sim.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	l.mu.Lock()
}
