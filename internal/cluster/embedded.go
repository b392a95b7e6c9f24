package cluster

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// clockTick is how often a shifted miniredis clock is re-pinned to
// real time + offset, for readers that bypass commands (Mini(i).TTL and
// other direct accessors); commands re-pin it themselves before they run.
const clockTick = 5 * time.Millisecond

// Minis is a cluster of in-process miniredis servers, for machines without
// redis-server. TTLs run on the wall clock (ClockTTL), so expiry behaves in
// real time as on a real server; a server clock offset moves miniredis's own
// clock. It implements ServerControl; see the methods for where the
// emulation differs from a real server.
type Minis struct {
	kind  string // Embedded or Sim
	nodes []*miniNode
	stop  chan struct{} // closed by Close: ends the clock tickers
	once  sync.Once
}

// miniNode is one embedded server and its fault state.
type miniNode struct {
	addr string
	stop <-chan struct{}

	mu   sync.Mutex
	mr   *miniredis.Miniredis // the current instance; Restart replaces it
	up   bool
	gate chan struct{} // non-nil while paused; closed by Resume or Kill

	// sim: the node is reached only in-process (Minis.Serve), in a run of
	// the sim backend; watch, when set, sees its commands (see sim.go).
	sim   bool
	watch Watcher

	clockMu    sync.Mutex   // orders SetTime calls, so the pinned clock never steps back by accident
	offset     atomic.Int64 // nanoseconds
	pinned     atomic.Bool  // an offset was set: the clock is now driven by us
	tickerOnce sync.Once
}

// StartEmbedded starts o.Nodes miniredis servers on loopback.
func StartEmbedded(o Options) (*Minis, error) {
	m := &Minis{stop: make(chan struct{}), kind: Embedded}
	for i := 0; i < o.Nodes; i++ {
		n := &miniNode{stop: m.stop}
		if err := n.start("127.0.0.1:0"); err != nil {
			m.Close()
			return nil, fmt.Errorf("start embedded redis n%d: %w", i+1, err)
		}
		m.nodes = append(m.nodes, n)
	}
	return m, nil
}

// start runs a fresh, empty miniredis on addr (port 0: any free port).
func (n *miniNode) start(addr string) error {
	mr := miniredis.NewMiniRedis()
	if n.pinned.Load() {
		mr.SetTime(time.Now().Add(time.Duration(n.offset.Load())))
	}
	mr.ClockTTL(true)
	if n.sim {
		if err := startInMemory(mr); err != nil {
			return err
		}
	} else if err := mr.StartAddr(addr); err != nil {
		return err
	}
	// Installed just after the listener opens: a command racing in before
	// it sees a clock up to clockTick stale, no worse than between ticks.
	mr.Server().SetPreHook(n.hook(mr))
	n.mu.Lock()
	n.mr, n.up = mr, true
	if !n.sim {
		n.addr = mr.Addr()
	}
	n.mu.Unlock()
	return nil
}

// hook runs before every command of mr: it holds the command while the node
// is paused and re-pins a shifted clock so the command sees the exact time.
func (n *miniNode) hook(mr *miniredis.Miniredis) server.Hook {
	return func(_ *server.Peer, cmd string, args ...string) bool {
		n.mu.Lock()
		gate, watch := n.gate, n.watch
		n.mu.Unlock()
		if gate != nil {
			<-gate
			n.mu.Lock()
			dead := n.mr != mr || !n.up
			n.mu.Unlock()
			if dead {
				// Killed while paused: like a SIGKILLed stopped process,
				// the command is never executed nor answered (true =
				// handled). The connection is being closed.
				return true
			}
		}
		if watch != nil {
			watch.Command(cmd, args)
		}
		// No clock sync here: Lua's redis.call dispatches through this hook
		// while EVAL holds miniredis's lock, and SetTime takes that lock.
		// The ticker keeps the clock within clockTick of real time + offset.
		return false
	}
}

// syncClock pins mr's clock to real time + offset once an offset was set.
func (n *miniNode) syncClock(mr *miniredis.Miniredis) {
	if !n.pinned.Load() {
		return
	}
	n.clockMu.Lock()
	defer n.clockMu.Unlock()
	mr.SetTime(time.Now().Add(time.Duration(n.offset.Load())))
}

func (n *miniNode) current() (*miniredis.Miniredis, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.mr, n.up
}

// kill closes the server; paused commands are released unanswered first,
// or Close would wait for them forever.
func (n *miniNode) kill() {
	n.mu.Lock()
	if !n.up {
		n.mu.Unlock()
		return
	}
	n.up = false
	if n.gate != nil {
		close(n.gate)
		n.gate = nil
	}
	mr, watch := n.mr, n.watch
	n.mu.Unlock()
	if watch != nil {
		watch.Killed()
	}
	mr.Close()
}

// Kind implements Cluster.
func (m *Minis) Kind() string { return m.kind }

// Nodes implements Cluster.
func (m *Minis) Nodes() []Node {
	out := make([]Node, len(m.nodes))
	for i, n := range m.nodes {
		out[i] = Node{Name: fmt.Sprintf("n%d", i+1), Addr: n.addr}
	}
	return out
}

// Mini returns node i's current miniredis (Restart replaces it), for
// direct inspection.
func (m *Minis) Mini(i int) *miniredis.Miniredis {
	mr, _ := m.nodes[i].current()
	return mr
}

func (m *Minis) node(i int) (*miniNode, error) {
	if i < 0 || i >= len(m.nodes) {
		return nil, fmt.Errorf("node index %d out of range [0,%d)", i, len(m.nodes))
	}
	return m.nodes[i], nil
}

// Kill implements ServerControl: the server closes its listener and every
// connection.
func (m *Minis) Kill(i int) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	n.kill()
	return nil
}

// Restart implements ServerControl: a new, empty miniredis on the same
// address (a new instance rather than miniredis's Restart, which would keep
// the data and the script cache a real restart loses). The clock offset is
// kept, as it is a property of the machine.
func (m *Minis) Restart(i int) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	n.kill()
	if err := n.start(n.addr); err != nil {
		return fmt.Errorf("restart embedded redis n%d on %s: %w", i+1, n.addr, err)
	}
	return nil
}

// Pause implements ServerControl by holding every command in a pre-command
// hook until Resume: connections are accepted and requests read, but no
// reply is sent, as with a SIGSTOPped redis-server. Unlike SIGSTOP, keys
// keep expiring in the background for readers that bypass commands.
func (m *Minis) Pause(i int) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.up {
		return fmt.Errorf("n%d: not running", i+1)
	}
	if n.gate == nil {
		n.gate = make(chan struct{})
	}
	return nil
}

// Resume implements ServerControl; resuming a running node is a no-op.
func (m *Minis) Resume(i int) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.up {
		return fmt.Errorf("n%d: not running", i+1)
	}
	if n.gate != nil {
		close(n.gate)
		n.gate = nil
	}
	return nil
}

// SetClockOffset implements ServerControl: node i's clock runs d ahead of
// real time (behind when d is negative) from now on, with no refreshing by
// the caller: every command re-pins the clock, and a background ticker does
// too for direct accessors, until Close.
//
// A forward jump expires keys early as on Redis. A backward jump differs:
// miniredis keeps TTLs as remaining durations, not absolute deadlines, so
// existing keys do not live longer (TIME and PEXPIREAT do see the earlier
// clock).
func (m *Minis) SetClockOffset(i int, d time.Duration) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	if d == 0 && !n.pinned.Load() {
		return nil // never shifted: the real clock is already right
	}
	n.offset.Store(int64(d))
	// Once pinned the clock stays pinned (offset 0 = real time): miniredis
	// cannot go back to its own clock without resetting its TTL baseline.
	n.pinned.Store(true)
	if mr, _ := n.current(); mr != nil {
		n.syncClock(mr)
	}
	n.tickerOnce.Do(func() { go n.tick() })
	return nil
}

// ClockOffset implements ServerControl.
func (m *Minis) ClockOffset(i int) time.Duration {
	n, err := m.node(i)
	if err != nil {
		return 0
	}
	return time.Duration(n.offset.Load())
}

func (n *miniNode) tick() {
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			if mr, up := n.current(); up {
				n.syncClock(mr)
			}
		}
	}
}

// Close implements Cluster.
func (m *Minis) Close() error {
	m.once.Do(func() {
		close(m.stop)
		for _, n := range m.nodes {
			n.kill()
		}
	})
	return nil
}
