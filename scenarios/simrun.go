package scenarios

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/internal/sim"
)

// runIn runs the plan once: on the sim backend inside a bubble of virtual
// time (internal/sim), where every server, link and client of the run
// lives, on the others in real time.
func runIn(ctx context.Context, plan *Plan, cfg Config) (o *Outcome, err error) {
	if cfg.Backend != cluster.Sim {
		return runOnce(ctx, plan, cfg)
	}
	berr := sim.Do(func() {
		// The bubble's own context: a goroutine waiting on a channel from
		// outside would never count as blocked, and the virtual clock
		// would stand still. The caller's cancellation is looked at
		// every simPoll of virtual time instead.
		bctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(simPoll)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					if ctx.Err() != nil {
						cancel()
						return
					}
				}
			}
		}()
		o, err = runOnce(bctx, plan, cfg)
		close(done)
		cancel()
		if o != nil && err == nil && ctx.Err() != nil {
			o, err = nil, ctx.Err()
		}
	})
	if berr != nil && err == nil {
		if o != nil {
			// The run ended and was judged; what stayed blocked after it
			// (a lock's goroutine waiting on a reply nobody will read) is
			// left behind, as a real run leaves it to the process's end.
			if cfg.Log != nil {
				cfg.Log.Warn("sim: goroutines of the run stayed blocked after it ended", "scenario", plan.Scenario, "impl", cfg.Impl, "err", berr)
			}
			return o, nil
		}
		return nil, berr
	}
	return o, err
}

// simPoll is how often, in virtual time, a sim run looks whether its
// caller cancelled it.
const simPoll = 50 * time.Millisecond

// simStart is how long after time zero client i starts in a sim run: up
// to simStagger, drawn from the seed, distinct per client.
func (r *run) simStart(i int) time.Duration {
	rng := rand.New(rand.NewPCG(r.plan.Seed, 0x73696d7374617274+uint64(i)))
	return time.Duration(i) + time.Duration(rng.Int64N(int64(simStagger)))
}

// simStagger bounds the clients' start offsets in a sim run: about a
// scheduler's delay in starting a goroutine on a busy machine.
const simStagger = 200 * time.Microsecond

// canonical orders a sim run's history by time, then, for entries of one
// virtual instant, by process and node: goroutines woken at one instant
// record in the order the Go scheduler runs them, and that order must not
// reach the history (the same seed gives the same bytes). Entries of one
// process and node at one instant keep their order (one goroutine's
// invoke before its ok), but the faults' entries, which the heal at the
// end makes side by side, go by fault. The header stays first, the end
// record last.
func canonical(h history.History) history.History {
	if len(h) < 3 {
		return h
	}
	body := h[1 : len(h)-1]
	slices.SortStableFunc(body, func(a, b history.Op) int {
		c := cmp.Or(cmp.Compare(a.Time, b.Time), cmp.Compare(a.Process, b.Process), strings.Compare(a.Node, b.Node))
		if c != 0 || a.Process != history.NemesisProcess {
			return c
		}
		// The faults a heal ends at once stop side by side: by fault.
		return cmp.Or(strings.Compare(a.F, b.F), cmp.Compare(a.N, b.N))
	})
	for i := range h {
		h[i].Index = i
	}
	return h
}
