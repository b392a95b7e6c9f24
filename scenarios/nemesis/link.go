package nemesis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// A link's connections pass bytes in two ways. While a direction has no
// toxic, one goroutine per direction reads the source and writes the
// destination (a pipe in direct mode): no channel, no chunk allocation, no
// goroutine hop beyond the one a proxy needs. toxiproxy's ToxicLink costs
// three goroutines and two channel hand-offs per direction even with no
// toxic, which made a proxied lock cycle cost 3.5× a direct one.
//
// Before the first toxic of a direction is added, every live pipe of that
// direction is handed to a toxiproxy chain holding only its noop (the state
// toxiproxy's own links are in), and only then is the toxic added to the
// collection: toxiproxy applies it to those chains exactly as to its own
// live links. The pipe's goroutine stops reading at its next read (a read
// deadline wakes it), writes what it read, and only then lets the chain
// read: no byte lost or reordered. Connections accepted while a direction
// has toxics start on a full chain with the real connections, as toxiproxy
// starts them (a reset_peer toxic then sets SO_LINGER 0 on them).
//
// When the last toxic of a direction is removed, chains that only ever held
// pass-through toxics (latency, bandwidth: toxics that never drop data nor
// close the stream) are drained and their pipes go back to direct mode.
// Chains that saw any other toxic stay until toxiproxy closes them (a healed
// timeout closes its connections; a reset_peer closes them on data), which
// is what toxiproxy does to them.

// passThrough lists the toxic types that neither drop bytes nor close the
// stream: a chain that held only these can be drained and left.
var passThrough = map[string]bool{"latency": true, "bandwidth": true}

// pipe is one direction of one proxied connection.
type pipe struct {
	l      *Link
	dir    stream.Direction
	src    *net.TCPConn
	dst    *net.TCPConn
	buf    []byte
	handed atomic.Bool // a handoff to a chain is requested or done
	dead   atomic.Bool // the pipe's goroutine ended
	back   atomic.Bool // the chain is asked to drain and give the pipe back
	// sticky: the chain saw a toxic that is not pass-through.
	sticky atomic.Bool
	// released closes when the pipe's goroutine stopped reading src (or
	// ended); release closes it once.
	released chan struct{}
	release  func()
	// resumed closes when the pipe is back in direct mode after a switch back.
	resumed chan struct{}
	// done receives whether the pipe resumes direct mode once its chain ended.
	done     chan bool
	switched bool // the chain's reader ended on a switch back (chain goroutines only)
	writeErr bool
}

// run is the pipe's goroutine: direct copying, hand-offs, and the close
// toxiproxy does when a stream ends (the destination closes fully).
func (p *pipe) run() {
	defer p.l.wg.Done()
	for {
		if !p.direct() {
			return
		}
		// Handed off: the chain owns src and dst until it ends.
		if !<-p.done {
			return
		}
	}
}

// direct copies src to dst until the stream ends (false) or a hand-off is
// requested (true, after releasing src).
//
// The copy runs inside one RawConn.Read: after a read that drained the
// socket it waits for the next readiness edge instead of reading again
// into EAGAIN first, as net.Conn.Read does; that saves a syscall per
// message in each direction, a third of a relay's syscalls.
func (p *pipe) direct() bool {
	rc, err := p.src.SyscallConn()
	if err != nil {
		p.dst.Close()
		return false
	}
	var ioErr error
	for {
		if p.handed.Load() {
			return p.letGo()
		}
		err := rc.Read(func(fd uintptr) bool {
			for !p.handed.Load() {
				n, err := syscall.Read(int(fd), p.buf)
				switch {
				case err == syscall.EINTR:
					continue
				case err == syscall.EAGAIN:
					return false
				case err != nil:
					ioErr = err
					return true
				case n == 0:
					ioErr = io.EOF
					return true
				}
				if _, err := p.dst.Write(p.buf[:n]); err != nil {
					ioErr = err
					return true
				}
				if n < len(p.buf) {
					return false // drained: wait for the next edge
				}
			}
			return true
		})
		if err == nil {
			err = ioErr
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && p.wake() {
			continue // the flag is checked at the top
		}
		if err != nil {
			p.dst.Close()
			return false
		}
	}
}

// wake clears the read deadline a request set to interrupt a read. The
// deadline may outlive its request (set just after the reader saw the
// flag), so a reader that meets an expired deadline clears it and then
// looks at the flags again: a request stores its flag before it sets the
// deadline, so the reader cannot miss one. Always true.
func (p *pipe) wake() bool {
	_ = p.src.SetReadDeadline(time.Time{})
	return true
}

// letGo lets the chain read src.
func (p *pipe) letGo() bool {
	_ = p.src.SetReadDeadline(time.Time{})
	p.release()
	return true
}

// handOff starts a chain on the pipe (from the link's lock, while the
// direction's chain is noop only) and wakes the pipe's goroutine.
func (p *pipe) handOff(name string) {
	p.released = make(chan struct{})
	p.release = sync.OnceFunc(func() { close(p.released) })
	p.resumed = make(chan struct{})
	p.done = make(chan bool, 1)
	p.switched, p.writeErr = false, false
	p.handed.Store(true)
	if p.dead.Load() {
		p.release() // the chain reads the end of src
	}
	p.l.proxy.Toxics.StartLink(p.l.srv, name, chainSrc{p}, chainDst{p}, p.dir)
	_ = p.src.SetReadDeadline(time.Now())
}

// giveBack asks the chain to drain and return the pipe to direct mode; the
// returned channel closes once it is back.
func (p *pipe) giveBack() <-chan struct{} {
	p.back.Store(true)
	_ = p.src.SetReadDeadline(time.Now())
	return p.resumed
}

// chainSrc is what a chain reads: src, once the pipe released it, until a
// switch back.
type chainSrc struct{ p *pipe }

func (s chainSrc) Read(b []byte) (int, error) {
	p := s.p
	<-p.released
	for {
		if p.back.Load() {
			p.switched = true
			return 0, io.EOF
		}
		n, err := p.src.Read(b)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return n, err
		}
		if n > 0 {
			return n, nil
		}
		p.wake()
	}
}

// chainDst is what a chain writes to: dst. toxiproxy closes it when the
// chain ends; that close is real unless the chain ended on a switch back.
type chainDst struct{ p *pipe }

func (d chainDst) Write(b []byte) (int, error) {
	n, err := d.p.dst.Write(b)
	if err != nil {
		d.p.writeErr = true
	}
	return n, err
}

func (d chainDst) Close() error {
	p := d.p
	back := p.switched && !p.writeErr && !p.sticky.Load()
	var err error
	if !back {
		err = p.dst.Close()
	}
	p.handed.Store(false)
	p.back.Store(false)
	close(p.resumed)
	p.done <- back
	return err
}

// serve accepts the link's connections.
func (l *Link) serve() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		l.accept(c.(*net.TCPConn))
	}
}

// accept dials the upstream and starts both directions of a connection.
func (l *Link) accept(client *net.TCPConn) {
	if l.refused.Load() {
		// Rejected (Refuse): a reset, not an orderly close.
		_ = client.SetLinger(0)
		client.Close()
		return
	}
	l.mu.Lock()
	upstream := l.upstream
	l.mu.Unlock()
	uc, err := net.Dial("tcp", upstream)
	if err != nil {
		client.Close()
		return
	}
	up := uc.(*net.TCPConn)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		client.Close()
		up.Close()
		return
	}
	l.conns[client] = struct{}{}
	l.conns[up] = struct{}{}
	name := client.RemoteAddr().String()
	for _, d := range []struct {
		dir      stream.Direction
		src, dst *net.TCPConn
	}{{stream.Upstream, client, up}, {stream.Downstream, up, client}} {
		if l.toxics[d.dir] > 0 {
			// As toxiproxy starts a connection: the full chain, on the real
			// connections; it stays on the chain for its life.
			l.seq++
			l.proxy.Toxics.StartLink(l.srv, fmt.Sprintf("%s%s%d", name, d.dir, l.seq), d.src, d.dst, d.dir)
			continue
		}
		p := &pipe{l: l, dir: d.dir, src: d.src, dst: d.dst, buf: make([]byte, 32<<10)}
		l.pipes[p] = struct{}{}
		l.wg.Add(1)
		go func() {
			p.run()
			p.dead.Store(true)
			if p.handed.Load() {
				// A chain started on a pipe that ended meanwhile reads src's end.
				p.release()
			}
			l.mu.Lock()
			delete(l.pipes, p)
			delete(l.conns, p.src)
			delete(l.conns, p.dst)
			l.mu.Unlock()
		}()
	}
}

// beforeToxic hands the direction's direct pipes to chains before its first
// toxic goes in; l.mu is held.
func (l *Link) beforeToxic(dir stream.Direction, typ string) {
	if l.toxics[dir] == 0 {
		for p := range l.pipes {
			if p.dir == dir && !p.handed.Load() {
				l.seq++
				p.handOff(fmt.Sprintf("%s%s%d", p.src.RemoteAddr(), dir, l.seq))
			}
		}
	}
	if !passThrough[typ] {
		for p := range l.pipes {
			if p.dir == dir {
				p.sticky.Store(true)
			}
		}
	}
	l.toxics[dir]++
}

// afterRemove gives the direction's chains back once its last toxic is
// gone; l.mu is held.
func (l *Link) afterRemove(dir stream.Direction) {
	l.toxics[dir]--
	if l.toxics[dir] > 0 {
		return
	}
	// Wait until every chain drained, so that a toxic added next finds
	// each pipe either direct or on a chain, never between the two.
	var wait []<-chan struct{}
	for p := range l.pipes {
		if p.dir == dir && p.handed.Load() && !p.sticky.Load() {
			wait = append(wait, p.giveBack())
		}
	}
	for _, c := range wait {
		<-c
	}
}

// dropConns closes every connection of the link; l.mu is held.
func (l *Link) dropConns() {
	if l.sim != nil {
		l.simDropConns()
		return
	}
	for c := range l.conns {
		c.Close()
	}
	l.conns = map[net.Conn]struct{}{}
}

// newLink listens on a free loopback port for host's traffic to upstream.
func newLink(srv *toxiproxy.ApiServer, host, node, upstream string, bus bool) (*Link, error) {
	ln, err := cluster.Listen()
	if err != nil {
		return nil, err
	}
	l := &Link{Host: host, Node: node, Bus: bus, Addr: ln.Addr().String(), srv: srv, ln: ln, upstream: upstream,
		conns: map[net.Conn]struct{}{}, pipes: map[*pipe]struct{}{}}
	l.proxy = toxiproxy.NewProxy(srv, l.Name(), ln.Addr().String(), upstream)
	l.wg.Add(1)
	go l.serve()
	return l, nil
}

// close stops accepting and drops every connection.
func (l *Link) close() {
	if l.sim != nil {
		l.mu.Lock()
		l.closed = true
		l.dropConns()
		l.mu.Unlock()
		return
	}
	l.ln.Close()
	l.mu.Lock()
	l.closed = true
	l.dropConns()
	l.mu.Unlock()
	l.wg.Wait()
}
