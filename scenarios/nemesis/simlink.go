package nemesis

import (
	"cmp"
	"errors"
	"fmt"
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
// connection is an in-memory pair of ends (simConn, simconn.go) joined by
// a queue per direction, in a bubble of virtual time (internal/sim). Its
// toxics do in virtual time what toxiproxy v2.12.0's do on a real link,
// chunk by chunk (a chunk is what one write carried, up to 32 KiB):
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
// draw comes from a generator of the connection's direction, seeded by
// the run's seed, the link's name, the direction and the connection's
// first chunk with its instant (not its number on the link: connections
// dialed at one instant are numbered in the scheduler's order), so the
// same seed gives the same delays whatever else runs.
const (
	simHop       = 40 * time.Microsecond
	simHopJitter = 20 * time.Microsecond
)

// simNet is what a sim network's links need: the seed and the way to hand
// a connection's server end to a node's in-memory server.
type simNet struct {
	seed  uint64
	serve func(addr string, c net.Conn) error

	// taken are the instants chunks are due at (unique). Two chunks due
	// at one instant wake two readers at once, and the Go scheduler,
	// not the seed, then decides which command a node runs first: two
	// clients' SETs on one node, 1 in 20,000 draws of the hop apart,
	// made explore-late-grant × redlock seed 10 give two histories.
	mu    sync.Mutex
	taken map[int64]struct{}
}

// unique is the first instant from at that no chunk is due at yet, taken
// for the caller. A chunk written earlier in virtual time takes its
// instant first, so the same seed bumps the same chunk.
func (n *simNet) unique(at, now time.Time) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.taken == nil {
		n.taken = map[int64]struct{}{}
	}
	if len(n.taken) > 1<<14 {
		past := now.UnixNano()
		for t := range n.taken {
			if t < past {
				delete(n.taken, t)
			}
		}
	}
	t := at.UnixNano()
	for {
		if _, ok := n.taken[t]; !ok {
			break
		}
		t++
	}
	n.taken[t] = struct{}{}
	return time.Unix(0, t).In(at.Location())
}

// NewSimNetwork is a network of sim links: serve hands the server end of
// a connection to the node at addr (cluster.Minis.Serve), or fails as a
// refused dial; seed seeds every delay drawn.
func NewSimNetwork(seed uint64, serve func(addr string, c net.Conn) error) *Network {
	return &Network{links: map[string]*Link{}, sim: &simNet{seed: seed, serve: serve}}
}

// Sim says whether the network's links are sim links.
func (n *Network) Sim() bool { return n.sim != nil }

// simLink is a Link's state on a sim network.
type simLink struct {
	net    *simNet
	seq    uint64
	toxics map[string]simToxic // by name, in Link.names' directions
	order  []string            // toxic names in the order added (a chain)
	// byDir are each direction's toxics in chain order, made anew on
	// every change (never changed in place), so that each chunk reads them
	// without a copy.
	byDir [stream.NumDirections][]Toxic
	conns map[*simConn]struct{}
}

type simToxic struct {
	t   Toxic
	dir stream.Direction
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
	l.mu.Lock()
	l.sim.seq++
	c := newSimConn(l, l.sim.seq)
	upstream, closed := l.upstream, l.closed
	if !closed {
		l.sim.conns[c] = struct{}{}
	}
	l.mu.Unlock()
	if closed || l.sim.net.serve(upstream, &c.ends[serverEnd]) != nil {
		// As the proxy: the client's connection was accepted, then closed.
		c.close()
	}
	return &c.ends[clientEnd], nil
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

// simToxics are dir's toxics in chain order; the slice is never changed.
func (l *Link) simToxics(dir stream.Direction) []Toxic {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sim.byDir[dir]
}

// simDropping says whether dir has a blackhole now.
func (l *Link) simDropping(dir stream.Direction) bool {
	return slices.ContainsFunc(l.simToxics(dir), func(t Toxic) bool { return t.Type == "timeout" })
}

// simChain remakes each direction's chain after a change; l.mu is held.
func (l *Link) simChain() {
	var by [stream.NumDirections][]Toxic
	for _, name := range l.sim.order {
		t := l.sim.toxics[name]
		by[t.dir] = append(by[t.dir], t.t)
	}
	l.sim.byDir = by
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
	l.simChain()
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
	l.simChain()
	conns := l.simConns()
	l.mu.Unlock()
	for _, c := range conns {
		switch t.t.Type {
		case "timeout":
			c.close()
		case "latency", "bandwidth":
			c.flush(t.dir)
		}
	}
	return nil
}

var errNoToxic = errors.New("no such toxic")

// simConns are the link's live connections, in the order they were
// dialled (l.mu held): what is done to each at one instant is then done
// in the same order every run.
func (l *Link) simConns() []*simConn {
	conns := make([]*simConn, 0, len(l.sim.conns))
	for c := range l.sim.conns {
		conns = append(conns, c)
	}
	slices.SortFunc(conns, func(a, b *simConn) int { return cmp.Compare(a.seq, b.seq) })
	return conns
}

// simDropConns closes every connection of a sim link; l.mu is held.
func (l *Link) simDropConns() {
	conns := l.simConns()
	l.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
	l.mu.Lock()
}
