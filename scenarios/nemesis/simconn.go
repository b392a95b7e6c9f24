package nemesis

import (
	"encoding/binary"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
)

// simConn is one connection of a sim link: two ends joined by a queue per
// direction, with no goroutine of its own. A write decides each chunk's
// fate on the direction's toxics there and then (simDir.arrive) and queues
// it with the instant it is due; the other end's read returns it no
// earlier. Where a relay of goroutines between two synchronous pipes
// (net.Pipe) took some eight goroutine hand-offs per command and reply,
// this takes one wake-up of each reader, at the instant its data is due:
// the sim backend's CPU per run is mostly those hand-offs.
//
// Every wait is on a channel or a timer, which a bubble of virtual time
// counts as durably blocked (a sync.Mutex is not, and is never held across
// a wait here).
type simConn struct {
	l   *Link
	seq uint64 // the link's count of dials when this one was made

	mu   sync.Mutex
	torn bool // both ends are cut: reads see EOF, writes a closed pipe
	dirs [stream.NumDirections]simDir
	ends [2]simEnd // ends[clientEnd] writes Upstream, ends[serverEnd] Downstream
}

const (
	clientEnd = 0
	serverEnd = 1
)

// simChunk is a chunk in flight and when it is due.
type simChunk struct {
	data []byte
	due  time.Time
}

// simDir is one direction of a sim connection.
type simDir struct {
	// rng draws the hops' delays, seeded at the first chunk (dirSeed);
	// key is the link's and direction's part of that seed.
	rng   *rand.Rand
	key   uint64
	queue []simChunk
	head  int       // queue[head:] is in flight
	last  time.Time // when the chunk ahead is due
	ended bool      // its writing end closed: cut once the queue is empty
}

// simEnd is one end of a sim connection, a net.Conn. Its reads come from
// one goroutine at a time (a client's pooled connection, a server's
// reader): waiting, wakeAt and timer are that reader's.
type simEnd struct {
	c     *simConn
	side  int // clientEnd or serverEnd
	write stream.Direction
	read  stream.Direction

	closed     bool // Close was called on this end
	rdl, wdl   time.Time
	waiting    bool      // a Read waits: timer and sig wake it
	wakeAt     time.Time // when timer fires, while waiting (zero: not armed)
	timer      *time.Timer
	sig        chan struct{} // wakes a waiting Read now
	remoteAddr net.Addr
}

// simMaxChunk is the most one chunk carries: the relay that sim links
// stand for reads 32 KiB at a time, and each read is a chunk with a delay
// of its own.
const simMaxChunk = 32 << 10

// newSimConn makes a connection of l; each direction seeds its generator
// at its first chunk (seedDir).
func newSimConn(l *Link, seq uint64) *simConn {
	c := &simConn{l: l, seq: seq}
	for d := range c.dirs {
		h := fnv.New64a()
		h.Write([]byte(l.Name()))
		c.dirs[d].key = h.Sum64() ^ uint64(d+1)*0x9e3779b97f4a7c15
	}
	c.ends[clientEnd] = simEnd{c: c, side: clientEnd, write: stream.Upstream, read: stream.Downstream}
	c.ends[serverEnd] = simEnd{c: c, side: serverEnd, write: stream.Downstream, read: stream.Upstream}
	for i := range c.ends {
		c.ends[i].sig = make(chan struct{}, 1)
		c.ends[i].remoteAddr = simAddr(l.Addr)
	}
	return c
}

// other is the end across from e.
func (e *simEnd) other() *simEnd { return &e.c.ends[1-e.side] }

// Read returns the next chunk of e's direction once it is due, a part of
// it when b is shorter (the rest stays first in line).
func (e *simEnd) Read(b []byte) (int, error) {
	c := e.c
	d := &c.dirs[e.read]
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if e.closed {
			return 0, io.ErrClosedPipe
		}
		if c.torn {
			return 0, io.EOF
		}
		now := time.Now()
		if !e.rdl.IsZero() && !now.Before(e.rdl) {
			return 0, errSimTimeout("read")
		}
		if d.head < len(d.queue) && !d.queue[d.head].due.After(now) {
			if c.l.simDropping(e.read) {
				d.pop() // a blackhole put in while it was held
				continue
			}
			ch := &d.queue[d.head]
			n := copy(b, ch.data)
			if ch.data = ch.data[n:]; len(ch.data) == 0 {
				d.pop()
			}
			return n, nil
		}
		if d.head == len(d.queue) && d.ended {
			c.tearDown()
			continue
		}
		e.wait(d)
	}
}

// pop drops the chunk first in line.
func (d *simDir) pop() {
	d.queue[d.head] = simChunk{}
	d.head++
	if d.head == len(d.queue) {
		d.queue, d.head = d.queue[:0], 0
	}
}

// wait waits, with c.mu held (and released meanwhile), until the first
// chunk of d is due, the read deadline passes or something else may have
// changed (sig).
func (e *simEnd) wait(d *simDir) {
	if e.timer == nil {
		// Made by the reader, in the bubble it reads in, and stopped:
		// armed for each wait that has an instant to wait for.
		e.timer = time.NewTimer(time.Hour)
		e.timer.Stop()
	}
	var at time.Time
	if d.head < len(d.queue) {
		at = d.queue[d.head].due
	}
	if !e.rdl.IsZero() && (at.IsZero() || e.rdl.Before(at)) {
		at = e.rdl
	}
	if !at.IsZero() {
		e.arm(at)
	}
	e.waiting = true
	e.c.mu.Unlock()
	select {
	case <-e.timer.C:
	case <-e.sig:
	}
	e.c.mu.Lock()
	e.waiting = false
	if !e.wakeAt.IsZero() {
		e.timer.Stop()
		e.wakeAt = time.Time{}
	}
}

// arm sets e's timer to fire at at (c.mu held). One timer per end, reset
// for every wait: Go's timers since 1.23 deliver no stale tick after Reset.
func (e *simEnd) arm(at time.Time) {
	d := time.Until(at)
	if e.timer == nil {
		e.timer = time.NewTimer(d)
	} else {
		e.timer.Reset(d)
	}
	e.wakeAt = at
}

// due tells e's waiting Read that a chunk is due at at (c.mu held): a
// reader waiting for nothing sooner is woken then, by its timer, and not
// before, so a command costs its server one wake-up.
func (e *simEnd) due(at time.Time) {
	if !e.waiting || (!e.wakeAt.IsZero() && !at.Before(e.wakeAt)) {
		return
	}
	e.arm(at)
}

// poke wakes e's waiting Read now (c.mu held).
func (e *simEnd) poke() {
	select {
	case e.sig <- struct{}{}:
	default:
	}
}

// Write queues b as chunks in e's direction, each with its fate decided
// on the direction's toxics as they are now. What a toxic drops or the
// connection's end loses was still written, as on a socket.
func (e *simEnd) Write(b []byte) (int, error) {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case e.closed || c.torn:
		return 0, io.ErrClosedPipe
	case !e.wdl.IsZero() && !time.Now().Before(e.wdl):
		return 0, errSimTimeout("write")
	case e.other().closed:
		// Nobody reads it: the relay's write to the closed end fails and
		// it cuts the connection.
		c.tearDown()
		return len(b), nil
	}
	for off := 0; off < len(b) && !c.torn; off += simMaxChunk {
		c.arrive(e, b[off:min(off+simMaxChunk, len(b))])
	}
	return len(b), nil
}

// arrive queues a chunk written at e with its due time, drops it, or
// resets the connection, as the direction's toxics say (c.mu held).
func (c *simConn) arrive(e *simEnd, b []byte) {
	d := &c.dirs[e.write]
	now := time.Now()
	if d.rng == nil {
		d.rng = rand.New(rand.NewPCG(c.l.sim.net.seed, dirSeed(d.key, now, b)))
	}
	due := now.Add(simHop + time.Duration(d.rng.Int64N(int64(simHopJitter))))
	var rate int64
	for _, t := range c.l.simToxics(e.write) {
		switch t.Type {
		case "timeout":
			return // dropped
		case "reset_peer":
			c.tearDown()
			return
		case "latency":
			due = due.Add(latencyOf(t, d.rng))
		case "bandwidth":
			rate, _ = toInt64(t.Attributes["rate"])
		}
	}
	if due.Before(d.last) {
		due = d.last
	}
	if rate > 0 {
		due = due.Add(time.Duration(len(b)) * time.Millisecond / time.Duration(rate))
	}
	due = c.l.sim.net.unique(due, now)
	d.last = due
	d.queue = append(d.queue, simChunk{data: slices.Clone(b), due: due})
	e.other().due(due)
}

func maxTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// dirSeed seeds a direction's generator from the link and direction
// (key) and its first chunk with its instant, never from the connection's
// number on its link: two connections dialed at one virtual instant (a
// client's pub/sub and command connections) are numbered in the
// scheduler's order, and draws that followed it would let the scheduler
// decide which of two clients' commands reaches the server first.
func dirSeed(key uint64, now time.Time, b []byte) uint64 {
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], key)
	binary.LittleEndian.PutUint64(buf[8:], uint64(now.UnixNano()))
	h := fnv.New64a()
	h.Write(buf[:])
	h.Write(b[:min(len(b), 256)])
	return h.Sum64()
}

// flush makes every chunk held in direction dir due now, a hop apart (a
// removed latency or bandwidth toxic delivers what it holds at once): the
// heal flushes every connection of the link, so the chunks of two clients'
// connections get instants of their own, drawn as a hop's, never one
// instant the scheduler would order.
func (c *simConn) flush(dir stream.Direction) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := &c.dirs[dir]
	last := now
	for i := d.head; i < len(d.queue); i++ {
		if d.queue[i].due.After(now) {
			at := now
			if d.rng != nil {
				at = now.Add(time.Duration(d.rng.Int64N(int64(simHopJitter))))
			}
			d.queue[i].due = c.l.sim.net.unique(maxTime(at, last), now)
		}
		last = d.queue[i].due
	}
	d.last = last
	for i := range c.ends {
		if c.ends[i].read == dir {
			c.ends[i].poke()
		}
	}
}

// close cuts the connection, as the relay closing both its sockets.
func (c *simConn) close() {
	c.mu.Lock()
	c.tearDown()
	c.mu.Unlock()
}

// tearDown cuts the connection (c.mu held): what is in flight is lost and
// both ends' readers wake to EOF.
func (c *simConn) tearDown() {
	if c.torn {
		return
	}
	c.torn = true
	for i := range c.dirs {
		c.dirs[i].queue, c.dirs[i].head = nil, 0
	}
	for i := range c.ends {
		c.ends[i].poke()
	}
	// l.mu is taken under c.mu only here and in simToxics, never the
	// other way round.
	c.l.mu.Lock()
	delete(c.l.sim.conns, c)
	c.l.mu.Unlock()
}

// Close closes e: its own reads and writes fail from now; what it wrote
// is still delivered, after which the connection is cut (the relay passes
// an end on once everything ahead of it went).
func (e *simEnd) Close() error {
	c := e.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.poke()
	d := &c.dirs[e.write]
	d.ended = true
	if d.head == len(d.queue) {
		c.tearDown()
	}
	return nil
}

func (e *simEnd) LocalAddr() net.Addr  { return simAddr("sim") }
func (e *simEnd) RemoteAddr() net.Addr { return e.remoteAddr }

func (e *simEnd) SetDeadline(t time.Time) error {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.rdl, e.wdl = t, t
	if e.waiting {
		e.poke()
	}
	return nil
}

func (e *simEnd) SetReadDeadline(t time.Time) error {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.rdl = t
	if e.waiting {
		e.poke()
	}
	return nil
}

func (e *simEnd) SetWriteDeadline(t time.Time) error {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.wdl = t
	return nil
}

// errSimTimeout is a deadline's error, worded as net.Pipe words it (the
// relay's pipes did: a history's error text stays what it was).
func errSimTimeout(op string) error {
	return &net.OpError{Op: op, Net: "pipe", Err: os.ErrDeadlineExceeded}
}

// simAddr is the address of a sim connection's end.
type simAddr string

func (simAddr) Network() string  { return "sim" }
func (a simAddr) String() string { return string(a) }
