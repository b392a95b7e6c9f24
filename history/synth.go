package history

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"time"
)

// SynthConfig describes a synthetic history (see Synthetic).
type SynthConfig struct {
	// Ops is the approximate number of history entries.
	Ops int
	// Keys is the number of lock keys (0: 1).
	Keys int
	// Clients is the number of clients (0: 4 per key); client c uses key
	// c mod Keys, so every key is contended by Clients/Keys clients.
	Clients int
	// Unknown is the fraction of acquire attempts whose outcome is unknown
	// (an info; the client continues under a new process).
	Unknown float64
	// Violation injects one overlap on the first key, half-way through,
	// which also loses one update.
	Violation bool
	// Starve, when positive, makes the first key's clients want it for
	// that long, half-way through, with every attempt refused (a holder
	// that vanished with the lock, say): a starvation of Starve.
	Starve time.Duration
	// Syncs adds observers' syncs on nodes n1..nSyncs every 20 ms
	// (answered in 0.2 ms), as the runner records them.
	Syncs int
	// Silent makes n1 answer nothing for that long from the start of the
	// starvation: the syncs sent then are answered only when it ends.
	Silent time.Duration
	// Gone makes the nodes after n1 answer nothing from the start of the
	// starvation to the end, as a killed node's observer records it: no
	// sync at all (a sync is recorded only on its reply).
	Gone bool
	// Events makes n1 record the key events of every grant (set) and
	// release (del), as an observer of the lock's one node does.
	Events bool
	// Seed makes the history reproducible.
	Seed uint64
}

// Synthetic generates a history of contended clients on a correct lock
// (plus an optional violation), as the runner would record it: acquire,
// read, write N+1 with the lock's fence, release; waiting acquires are in
// flight while others hold the key; final reads by FinalProcess. For
// benchmarks and tests of the checker itself.
func Synthetic(cfg SynthConfig) History {
	if cfg.Keys <= 0 {
		cfg.Keys = 1
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 4 * cfg.Keys
	}
	cfg.Clients = max(cfg.Clients, cfg.Keys)
	g := &synthGen{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x5eed)),
		h: make(History, 0, cfg.Ops+4*cfg.Keys+16), nextPID: cfg.Clients, perKey: max(cfg.Ops/cfg.Keys, 8)}
	for k := 0; k < cfg.Keys; k++ {
		g.key(k)
	}
	for n := 1; n <= cfg.Syncs; n++ {
		g.syncs("n" + strconv.Itoa(n))
	}
	h := g.h
	for i := range h {
		if h[i].Time < 0 {
			h[i].Time = g.end + us(1000)
		}
	}
	slices.SortStableFunc(h, func(a, b Op) int {
		switch {
		case a.Time < b.Time:
			return -1
		case a.Time > b.Time:
			return 1
		}
		return 0
	})
	for i := range h {
		h[i].Index = i
	}
	return h
}

func us(n int) int64 { return int64(n) * 1000 }

// synthGen is Synthetic's state across keys.
type synthGen struct {
	cfg     SynthConfig
	rng     *rand.Rand
	h       History
	nextPID int
	perKey  int
	end     int64
	// starved is the starvation Starve made: from, to (ns).
	starved [2]int64
}

// synthClient is one generated client: its process, and when it acts next.
type synthClient struct {
	id, pid int
	next    int64
}

// synthKey is the state of one key's generation: its clients, when it is
// free, the counter, the last fence and the last hold.
type synthKey struct {
	*synthGen
	key                                    string
	cls                                    []synthClient
	free, counter, fence, prevFrom, prevTo int64
	cycles                                 int
	inject                                 bool // the violation is still to be injected here
}

// key generates key k's clients' cycles and its final read.
func (g *synthGen) key(k int) {
	sk := &synthKey{synthGen: g, key: "lock:" + strconv.Itoa(k), inject: g.cfg.Violation && k == 0}
	for c := k; c < g.cfg.Clients; c += g.cfg.Keys {
		sk.cls = append(sk.cls, synthClient{id: c, pid: c, next: us(g.rng.IntN(100))})
	}
	for n := 0; n < g.perKey; {
		if k == 0 && g.cfg.Starve > 0 && g.starved[1] == 0 && n >= g.perKey/2 {
			sk.starve()
		}
		c := &sk.cls[0]
		for i := range sk.cls {
			if sk.cls[i].next < c.next {
				c = &sk.cls[i]
			}
		}
		if g.cfg.Unknown > 0 && g.rng.Float64() < g.cfg.Unknown {
			sk.unknownAttempt(c)
			n += 2
			continue
		}
		sk.cycle(c)
		n += 8
	}
	g.h = append(g.h, Op{Type: Invoke, Process: FinalProcess, Client: -1, F: FRead, Key: sk.key, Time: -1},
		Op{Type: Ok, Process: FinalProcess, Client: -1, F: FRead, Key: sk.key, N: sk.counter, Time: -1})
}

func (sk *synthKey) add(c *synthClient, t Type, f string, at int64, mod func(*Op)) {
	op := Op{Type: t, Process: c.pid, Client: c.id, F: f, Key: sk.key, Time: at}
	if mod != nil {
		mod(&op)
	}
	sk.h = append(sk.h, op)
}

// unknownAttempt is an acquire whose outcome is unknown: the client goes on
// under a new process.
func (sk *synthKey) unknownAttempt(c *synthClient) {
	inv := c.next
	sk.add(c, Invoke, FAcquire, inv, nil)
	sk.add(c, Info, FAcquire, inv+us(5000), func(o *Op) { o.Error = "timeout" })
	c.pid, sk.nextPID = sk.nextPID, sk.nextPID+1
	c.next = inv + us(5000+sk.rng.IntN(300))
}

// starve makes every client of the key try in turn every 10 ms from when
// it is free and all are ready, each try refused after 1 ms, for Starve;
// then they go on as before.
func (sk *synthKey) starve() {
	from := sk.free
	for _, c := range sk.cls {
		from = max(from, c.next)
	}
	to := from + int64(sk.cfg.Starve)
	i := 0
	for at := from; at < to; at += us(10000) {
		c := &sk.cls[i%len(sk.cls)]
		sk.add(c, Invoke, FAcquire, at, nil)
		sk.add(c, Fail, FAcquire, at+us(1000), nil)
		i++
	}
	for i := range sk.cls {
		sk.cls[i].next = to + us(sk.rng.IntN(100))
	}
	sk.free = to
	sk.starved = [2]int64{from, to}
}

// syncs are node's observer syncs every 20 ms to the end; on n1, with
// Silent, those sent in its silence are answered when the silence ends.
func (g *synthGen) syncs(node string) {
	from, to := g.starved[0], g.starved[0]+int64(g.cfg.Silent)
	for at := int64(0); at < g.end; at += us(20000) {
		reply := at + us(200)
		if node == "n1" && g.cfg.Silent > 0 && at >= from && at < to {
			reply = to + us(200)
		}
		if node != "n1" && g.cfg.Gone && g.starved[1] > 0 && at >= from {
			break
		}
		g.h = append(g.h, Op{Type: Ok, Process: ServerProcess, Client: -1, F: FSync, Node: node, N: at, Time: reply})
	}
}

// cycle is one acquire, read, write, release of client c; the injected
// violation grants the lock while the previous holder still holds it.
func (sk *synthKey) cycle(c *synthClient) {
	inv := c.next
	g := max(inv, sk.free) + us(50+sk.rng.IntN(150))
	read := sk.counter
	violating := sk.inject && sk.cycles >= sk.perKey/16 && inv+us(1) < sk.prevTo && len(sk.cls) > 1
	if violating {
		// granted while the previous holder still holds, and it
		// reads the counter before the previous holder's write
		g = max(inv, sk.prevFrom) + us(1)
		read = sk.counter - 1
		sk.inject = false
	}
	sk.fence++
	f := sk.fence
	tok := strconv.Itoa(c.pid) + ":" + strconv.FormatInt(f, 10)
	sk.add(c, Invoke, FAcquire, inv, nil)
	sk.add(c, Ok, FAcquire, g, func(o *Op) { o.Value, o.Fence = tok, f })
	sk.add(c, Invoke, FRead, g+us(10), nil)
	sk.add(c, Ok, FRead, g+us(30), func(o *Op) { o.N = read })
	w := g + us(200+sk.rng.IntN(800))
	sk.add(c, Invoke, FWrite, w, func(o *Op) { o.N, o.Fence = read+1, f })
	sk.add(c, Ok, FWrite, w+us(20), func(o *Op) { o.N, o.Fence = read+1, f })
	sk.counter = read + 1 // after a violation: the same value twice, one update lost
	r := w + us(30)
	sk.add(c, Invoke, FRelease, r, func(o *Op) { o.Value = tok })
	sk.add(c, Ok, FRelease, r+us(100), nil)
	if sk.cfg.Events {
		sk.h = append(sk.h, Op{Type: Ok, Process: ServerProcess, Client: -1, F: FServer, Node: "n1", Key: sk.key, Value: "set", Owner: tok, Time: g},
			Op{Type: Ok, Process: ServerProcess, Client: -1, F: FServer, Node: "n1", Key: sk.key, Value: "del", Time: r + us(50)})
	}
	sk.free = max(sk.free, r+us(50))
	sk.prevFrom, sk.prevTo = g, r
	c.next = r + us(100+sk.rng.IntN(300))
	sk.end = max(sk.end, c.next)
	sk.cycles++
}
