package scenarios

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// runnerPoint says whether point is one of the runner's own (the workload's
// steps, not the lock's): exploration leaves them alone and coverage does
// not count them.
func runnerPoint(point string) bool {
	return strings.HasPrefix(point, "cycle/") || strings.HasPrefix(point, "cs/")
}

// explorer draws and injects the faults of Explore.
type explorer struct {
	r      *run
	tl     *timeline
	e      spec.Explore
	mu     sync.Mutex
	rngs   map[int]*rand.Rand
	budget map[[2]string]int // (point, action) → faults injected
	hits   map[string]int    // point → candidate hits so far
	own    map[string]int    // client/point → that client's hits of it (sim: simDraws)
	// crashes are capped at half the clients (half): a crashed client
	// stays dead, and the run must keep its traffic to the end. paused,
	// the pauses holding clients now, are capped the same way: a pause
	// shows something only while others run beside it (and take the lock
	// it lets expire).
	crashes, paused, half int
	// table is the run's coverage: the situations reached and the faults
	// injected in each; prior the combinations earlier runs covered
	// (Plan.Prior). sent is when each client last sent each command (its
	// before point), to tell a late reply at the after point.
	table *comboTable
	prior map[string]bool
	sent  map[string]int64
}

// newExplorer explores as e says, its defaults filled in by Compile.
func newExplorer(r *run, tl *timeline, e spec.Explore) *explorer {
	x := &explorer{r: r, tl: tl, e: e, rngs: map[int]*rand.Rand{}, budget: map[[2]string]int{}, hits: map[string]int{}, own: map[string]int{},
		half: max(1, r.plan.Clients/2), table: newComboTable(), prior: map[string]bool{}, sent: map[string]int64{}}
	for _, k := range r.plan.Prior {
		x.prior[k] = true
	}
	return x
}

// hit is the hub's Explore hook.
func (x *explorer) hit(ctx context.Context, client int, point string) error {
	if runnerPoint(point) || !x.candidate(point) || !x.inCall(ctx, x.r.clients[client]) {
		return nil
	}
	if x.r.holdsEnd != nil && x.r.holdsEnd.Err() != nil {
		// The traffic's time is up: a fault now would heal at once and
		// show nothing, and on sim the clients the end releases at one
		// instant would race for its number.
		return nil
	}
	act := x.draw(ctx, client, point)
	if act == "" {
		return nil
	}
	c := x.r.clients[client]
	x.r.hub.MarkFaulted(point)
	x.r.add(c, history.Ok, history.FStep, "", func(o *history.Op) { o.Value = "explore " + act + " at " + point })
	switch act {
	case spec.ExploreCrash:
		return fmt.Errorf("%w %s (explore)", lockimpl.ErrCrashed, point)
	case spec.ExploreLoseReply:
		return fmt.Errorf("%w %s (explore)", lockimpl.ErrLostReply, point)
	case spec.ExploreDelay:
		return c.pause.Sleep(ctx, x.e.Delay)
	case spec.ExplorePause:
		// Through the timeline, so the pause is a fault window in the
		// history and heals when the run ends. The world stops for the
		// thread at the point too: it goes on only when the pause ends (a
		// before point's command is sent late, an after point's reply is
		// seen late), not at once into a paused client's next step.
		defer func() {
			x.mu.Lock()
			x.paused--
			x.mu.Unlock()
		}()
		if err := x.tl.injectNow(ctx, nemesis.Spec{Kind: "pause", Clients: []int{client}, For: x.e.Pause}); err != nil {
			return err
		}
		// Not cut short by the command's own deadline: a stopped thread's
		// timeouts fire only once it runs again.
		return c.pause.Wait(context.WithoutCancel(ctx))
	}
	return nil
}

// steerRate is the least chance of a fault at a hit whose situation has
// a combination no run has covered yet (this run or Plan.Prior), or that
// is a near-miss: the search spends its faults where they can still
// show something new, not on the combinations every run reaches first.
const steerRate = 0.5

// draw decides whether this hit of point by client gets a fault, and which
// action: "" for none.
func (x *explorer) draw(ctx context.Context, client int, point string) string {
	now := x.r.rec.Now()
	sit := x.situation(ctx, client, point, now)
	x.mu.Lock()
	defer x.mu.Unlock()
	near := x.nearMiss(client, point, sit.State, now)
	rng := x.rngs[client]
	if rng == nil {
		rng = rand.New(rand.NewPCG(x.r.seed(), 0x6578706c6f7265+uint64(client)))
		x.rngs[client] = rng
	}
	if x.r.sim {
		rng = x.simDraws(client, point)
	}
	// A point's hits and budget are counted per kind of reply: the rare
	// SET that took the lock is tried on its first hits, not drowned in
	// the hundreds of refused retries that pass the same point.
	if sit.Reply != "" {
		point += "=" + sit.Reply
	}
	x.hits[point]++
	x.table.reached[sit]++
	if near {
		x.table.near++
	}
	open, fresh := x.open(sit, point, now)
	// A point's n-th hit is faulted with probability 1/n when that beats
	// Rate: a rare point (a PEXPIRE after a won SETNX, a release script) is
	// tried on its first hits, not after 1/Rate of them, which a hot point
	// (the retried SET NX) would reach in milliseconds and a rare one
	// perhaps never in the run.
	p := max(x.e.Rate, 1/float64(x.hits[point]))
	if len(fresh) > 0 || near {
		p = max(p, steerRate)
	}
	if rng.Float64() >= p || len(open) == 0 {
		return ""
	}
	if len(fresh) > 0 {
		open = fresh
	}
	act := open[rng.IntN(len(open))]
	x.budget[[2]string{point, act}]++
	x.table.fault(sit, act, now)
	if near {
		x.table.nearFaulted++
	}
	switch act {
	case spec.ExploreCrash:
		x.crashes++
	case spec.ExplorePause:
		x.paused++
	}
	return act
}

// open lists the actions that may still act at this hit (budget and caps
// left), and fresh those of them whose combination with the situation no
// run has covered yet. x.mu held.
func (x *explorer) open(sit Situation, point string, now int64) (open, fresh []string) {
	for _, a := range faultsAt(x.e.Actions, sit) {
		if a == spec.ExploreCrash && x.crashes >= x.crashCap(now) || a == spec.ExplorePause && x.paused >= x.half {
			continue
		}
		if x.budget[[2]string{point, a}] >= x.e.PerPoint {
			continue
		}
		open = append(open, a)
		c := Combo{Situation: sit, Fault: a}
		if !x.table.coveredBefore(sit, a, now) && !x.prior[c.Key(x.r.plan.Impl)] {
			fresh = append(fresh, a)
		}
	}
	return open, fresh
}

// crashCap is how many crashes the explorer may have spent by now: the
// half of the clients it may crash, paced over the traffic's duration (the
// k-th not before (k-1)/half of it). Spent on first hits, they all fell
// in the run's first milliseconds, on the points every client reaches
// first (before its first command, a refused SETNX, a GET), and none was
// left for the points reached later: a release, a takeover, a grant.
// Seen: explore-crash x setnx-del on sim, seed 1, 8 crashes by 3.4 ms.
func (x *explorer) crashCap(now int64) int {
	d := int64(x.r.plan.Duration)
	if d <= 0 || now >= d {
		return x.half
	}
	return min(x.half, 1+int(int64(x.half)*max(now, 0)/d))
}

// situation is the hit's situation: its point folded, the client's state
// and whether another client was waiting to acquire.
func (x *explorer) situation(ctx context.Context, client int, point string, now int64) Situation {
	c := x.r.clients[client]
	call := lockimpl.CallOf(ctx)
	if now := c.callNow(); call == "" || call != now {
		// A relay's point carries no context of ours; a straggler's names
		// a call that has returned (inCall).
		call = now
	}
	state := StateHolding
	switch call {
	case lockimpl.CallAcquire:
		state = StateWaiting
	case lockimpl.CallRelease:
		state = StateReleasing
	case lockimpl.CallExtend:
		state = StateExtending
	}
	if p := c.pausedAt.Load(); p > 0 && p > c.since.Load() {
		state = StatePaused
	}
	return Situation{Point: foldPoint(point), Reply: lockimpl.ReplyOf(ctx), State: state, Contender: x.contender(client, now)}
}

// contender says whether a client other than client was inside an acquire
// at now, and not paused. An acquire that begins at now does not count and one that ends
// at now does: on sim, two goroutines at one virtual instant run in the
// scheduler's order, and the answer must be the seed's whatever that order.
func (x *explorer) contender(client int, now int64) bool {
	for _, o := range x.r.clients {
		if o.id == client || o.crashed.Load() {
			continue
		}
		from, to := o.acqFrom.Load(), o.acqTo.Load()
		if from > 0 && from < now && (to < from || to >= now) && !pausedAt(o, now) {
			return true
		}
	}
	return false
}

// pausedAt says whether a pause held c at now, by the same rule as an
// acquire in contender: a client paused contends for nothing, the lock
// it waits for is taken by the others.
func pausedAt(c *runClient, now int64) bool {
	from, to := c.pausedAt.Load(), c.resumedAt.Load()
	return from > 0 && from < now && (to < from || to >= now)
}

// nearMiss says whether the hit is one step from a violation, on the
// lease's clock: a hold that outlived its lease, a release or an extend
// landing in the last quarter of the lease, or a command's reply that came
// back a quarter of the TTL late inside an acquire (the grant it brings is
// close to the lease's end). A pause or a delay there is what turns it into
// two holders. x.mu held.
func (x *explorer) nearMiss(client int, point, state string, now int64) bool {
	c := x.r.clients[client]
	ttl := int64(x.r.plan.Options.TTL)
	if spec.CmdPoint(point) {
		cmd := fmt.Sprintf("%d/%s", client, strings.TrimSuffix(strings.TrimSuffix(point, "/before"), "/after"))
		if strings.HasSuffix(point, "/before") {
			x.sent[cmd] = now
		} else if sent, ok := x.sent[cmd]; ok && state == StateWaiting && ttl > 0 && now-sent > ttl/4 {
			return true
		}
	}
	held := c.heldAt.Load()
	if ttl <= 0 || held == 0 {
		return false
	}
	switch state {
	case StateReleasing, StateExtending:
		return now-held > ttl*3/4
	case StateHolding, StatePaused:
		return c.holding.Load() && now-held > ttl
	}
	return false
}

// simDraws is the generator of one hit in a sim run: seeded by the
// client, the point and how often the client hit it before, not one stream
// per client. A lock's goroutines that pass their points at one virtual
// instant (Redlock's fan-out, the goroutines a pause's end releases) take
// them in the Go scheduler's order; drawn this way, each hit's fate is the
// seed's whatever that order.
func (x *explorer) simDraws(client int, point string) *rand.Rand {
	k := fmt.Sprintf("%d/%s", client, point)
	x.own[k]++
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", k, x.own[k])
	return rand.New(rand.NewPCG(x.r.seed(), h.Sum64()))
}

// inCall says whether a hit made on ctx by client c is inside one of
// Explore.During's Locker calls (any hit when During is empty). A hit
// whose context names a call that c is no longer in is a straggler's: a
// quorum lock's goroutine whose node answered after the call returned
// (Redlock's fan-out, once it had its quorum). It is not inside that call:
// a pause there stops a client that holds, a hold paused past its lease,
// not a late grant. Seen: explore-late-grant x redlock, redis-server seed
// 14, a pause at cmd/n2/SET/after 11 ms after the acquire returned, and
// the next holder overlapped the paused one.
func (x *explorer) inCall(ctx context.Context, c *runClient) bool {
	if len(x.e.During) == 0 {
		return true
	}
	call := lockimpl.CallOf(ctx)
	return call != "" && call == c.callNow() && slices.Contains(x.e.During, call)
}

func (x *explorer) candidate(point string) bool {
	if len(x.e.Points) == 0 {
		return true
	}
	for _, p := range x.e.Points {
		if ok, _ := path.Match(p, point); ok {
			return true
		}
	}
	return false
}

// Coverage is how much of a lock's points a run reached: the distinct
// points (declared failpoints and command points; the runner's own steps
// are left out) hit while points were armed, and how many of them had a
// fault injected; and, when the run explored, its combinations: every
// situation (point × client state × contender) the explorer could fault,
// times each fault it could inject there, and which of them it did.
type Coverage struct {
	Hit     int                  `json:"hit"`
	Faulted int                  `json:"faulted"`
	Points  []lockimpl.PointStat `json:"points,omitempty"`
	// Covered of Combinations were faulted at least once; Combos lists
	// them all.
	Covered      int     `json:"covered"`
	Combinations int     `json:"combinations"`
	Combos       []Combo `json:"combos,omitempty"`
	// NearMisses counts the hits one step from a violation (explorer.nearMiss),
	// NearMissFaults those the explorer faulted.
	NearMisses     int `json:"near_misses,omitempty"`
	NearMissFaults int `json:"near_miss_faults,omitempty"`
}

func coverage(h *lockimpl.Hub, x *explorer) *Coverage {
	cov := &Coverage{}
	for _, ps := range h.Coverage() {
		if runnerPoint(ps.Point) {
			continue
		}
		if ps.Hits > 0 {
			cov.Hit++
		}
		if ps.Faults > 0 {
			cov.Faulted++
		}
		cov.Points = append(cov.Points, ps)
	}
	if x != nil {
		x.mu.Lock()
		cov.Combos = x.table.combos(x.e.Actions)
		cov.NearMisses, cov.NearMissFaults = x.table.near, x.table.nearFaulted
		x.mu.Unlock()
		cov.Combinations = len(cov.Combos)
		for _, c := range cov.Combos {
			if c.Faults > 0 {
				cov.Covered++
			}
		}
	}
	return cov
}
