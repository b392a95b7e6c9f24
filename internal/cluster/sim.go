package cluster

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/alicebob/miniredis/v2"
)

// Sim is the backend of a simulated run: miniredis servers reached only
// through in-memory connections, inside a bubble of virtual time (package
// internal/sim). TTLs follow miniredis's clock, which in a bubble is the
// bubble's.
const Sim = "sim"

// Watcher sees a sim node's commands: Command before each one runs (a
// script's redis.call included, while the script holds the server: it
// must not call back into the server), Replied when a reply is about to
// be written, after the command it answers ran and before any client can
// read it. The sim observer builds the node's key events from the two.
type Watcher interface {
	Command(cmd string, args []string)
	Replied()
	// Killed says the node died: like a real observer's connection, the
	// watcher's stream of it ends.
	Killed()
}

// Paused says whether node i holds its commands (Pause).
func (m *Minis) Paused(i int) bool {
	n, err := m.node(i)
	if err != nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.gate != nil
}

// StartSim starts o.Nodes miniredis servers that listen nowhere: Serve
// reaches them by their addresses, which name loopback ports no one
// dials (127.0.83.N:1), so nothing can reach them by mistake through a
// real socket.
func StartSim(o Options) (*Minis, error) {
	m := &Minis{stop: make(chan struct{}), kind: Sim}
	for i := 0; i < o.Nodes; i++ {
		n := &miniNode{stop: m.stop, sim: true, addr: fmt.Sprintf("127.0.83.%d:1", i+1)}
		if err := n.start(n.addr); err != nil {
			m.Close()
			return nil, fmt.Errorf("start sim redis n%d: %w", i+1, err)
		}
		m.nodes = append(m.nodes, n)
	}
	return m, nil
}

// startInMemory gives mr a server with no listener (miniredis starts one
// on its first Dial; the pre-command hook must be set on it before any).
func startInMemory(mr *miniredis.Miniredis) error {
	c, err := mr.Dial()
	if err != nil {
		return err
	}
	return c.Close()
}

// Serve hands c, the server end of an in-memory connection, to the sim
// node at addr, which serves it until either end closes it: as a TCP
// connection to the node, refused while the node is down. The caller
// makes the connection (a sim link's, in virtual time), so no relay stands
// between the link and the server.
func (m *Minis) Serve(addr string, c net.Conn) error {
	for _, n := range m.nodes {
		if n.addr != addr {
			continue
		}
		mr, up := n.current()
		if !up || !n.sim {
			break
		}
		mr.Server().ServeConn(&watchedConn{Conn: c, n: n})
		return nil
	}
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// Watch makes w see node i's commands from now on, across restarts.
func (m *Minis) Watch(i int, w Watcher) error {
	n, err := m.node(i)
	if err != nil {
		return err
	}
	n.mu.Lock()
	n.watch = w
	n.mu.Unlock()
	return nil
}

// watchedConn is the server's end of a sim connection: its writes are
// the node's replies, each told to the node's watcher first.
type watchedConn struct {
	net.Conn
	n *miniNode
}

func (c *watchedConn) Write(b []byte) (int, error) {
	c.n.mu.Lock()
	w := c.n.watch
	c.n.mu.Unlock()
	if w != nil {
		w.Replied()
	}
	return c.Conn.Write(b)
}
