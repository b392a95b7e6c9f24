package checker

import (
	"math/rand/v2"
	"slices"
	"strconv"
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
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	h := make(History, 0, cfg.Ops+4*cfg.Keys+16)
	nextPID := cfg.Clients
	perKey := max(cfg.Ops/cfg.Keys, 8)
	us := func(n int) int64 { return int64(n) * 1000 }
	var end int64
	for k := 0; k < cfg.Keys; k++ {
		key := "lock:" + strconv.Itoa(k)
		type cl struct {
			id, pid int
			next    int64
		}
		var cls []cl
		for c := k; c < cfg.Clients; c += cfg.Keys {
			cls = append(cls, cl{id: c, pid: c, next: us(rng.IntN(100))})
		}
		add := func(c *cl, t Type, f string, at int64, mod func(*Op)) {
			op := Op{Type: t, Process: c.pid, Client: c.id, F: f, Key: key, Time: at}
			if mod != nil {
				mod(&op)
			}
			h = append(h, op)
		}
		var free, counter, fence, prevFrom, prevTo int64
		cycles, inject := 0, cfg.Violation && k == 0
		for n := 0; n < perKey; {
			c := &cls[0]
			for i := range cls {
				if cls[i].next < c.next {
					c = &cls[i]
				}
			}
			inv := c.next
			if cfg.Unknown > 0 && rng.Float64() < cfg.Unknown {
				add(c, Invoke, FAcquire, inv, nil)
				add(c, Info, FAcquire, inv+us(5000), func(o *Op) { o.Error = "timeout" })
				c.pid, nextPID = nextPID, nextPID+1
				c.next = inv + us(5000+rng.IntN(300))
				n += 2
				continue
			}
			g := max(inv, free) + us(50+rng.IntN(150))
			read := counter
			violating := inject && cycles >= perKey/16 && inv+us(1) < prevTo && len(cls) > 1
			if violating {
				// granted while the previous holder still holds, and it
				// reads the counter before the previous holder's write
				g = max(inv, prevFrom) + us(1)
				read = counter - 1
				inject = false
			}
			fence++
			f := fence
			tok := strconv.Itoa(c.pid) + ":" + strconv.FormatInt(f, 10)
			add(c, Invoke, FAcquire, inv, nil)
			add(c, Ok, FAcquire, g, func(o *Op) { o.Value, o.Fence = tok, f })
			add(c, Invoke, FRead, g+us(10), nil)
			add(c, Ok, FRead, g+us(30), func(o *Op) { o.N = read })
			w := g + us(200+rng.IntN(800))
			add(c, Invoke, FWrite, w, func(o *Op) { o.N, o.Fence = read+1, f })
			add(c, Ok, FWrite, w+us(20), func(o *Op) { o.N, o.Fence = read+1, f })
			counter = read + 1 // after a violation: the same value twice, one update lost
			r := w + us(30)
			add(c, Invoke, FRelease, r, func(o *Op) { o.Value = tok })
			add(c, Ok, FRelease, r+us(100), nil)
			free = max(free, r+us(50))
			prevFrom, prevTo = g, r
			c.next = r + us(100+rng.IntN(300))
			end = max(end, c.next)
			cycles++
			n += 8
		}
		h = append(h, Op{Type: Invoke, Process: FinalProcess, Client: -1, F: FRead, Key: key, Time: -1},
			Op{Type: Ok, Process: FinalProcess, Client: -1, F: FRead, Key: key, N: counter, Time: -1})
	}
	for i := range h {
		if h[i].Time < 0 {
			h[i].Time = end + us(1000)
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
