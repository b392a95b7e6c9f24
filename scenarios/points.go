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
}

// newExplorer explores as e says, its defaults filled in by Compile.
func newExplorer(r *run, tl *timeline, e spec.Explore) *explorer {
	return &explorer{r: r, tl: tl, e: e, rngs: map[int]*rand.Rand{}, budget: map[[2]string]int{}, hits: map[string]int{}, own: map[string]int{},
		half: max(1, r.plan.Clients/2)}
}

// hit is the hub's Explore hook.
func (x *explorer) hit(ctx context.Context, client int, point string) error {
	if runnerPoint(point) || !x.candidate(point) || !x.inCall(ctx) {
		return nil
	}
	act := x.draw(client, point)
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

// draw decides whether this hit of point by client gets a fault, and which
// action: "" for none.
func (x *explorer) draw(client int, point string) string {
	after := spec.CmdPoint(point) && strings.HasSuffix(point, "/after")
	x.mu.Lock()
	rng := x.rngs[client]
	if rng == nil {
		rng = rand.New(rand.NewPCG(x.r.seed(), 0x6578706c6f7265+uint64(client)))
		x.rngs[client] = rng
	}
	if x.r.sim {
		rng = x.simDraws(client, point)
	}
	// A point's n-th hit is faulted with probability 1/n when that beats
	// Rate: a rare point (a PEXPIRE after a won SETNX, a release script) is
	// tried on its first hits, not after 1/Rate of them, which a hot point
	// (the retried SET NX) would reach in milliseconds and a rare one
	// perhaps never in the run.
	x.hits[point]++
	if rng.Float64() >= max(x.e.Rate, 1/float64(x.hits[point])) {
		x.mu.Unlock()
		return ""
	}
	var open []string
	for _, a := range x.e.Actions {
		if a == spec.ExploreLoseReply && !after {
			continue // a reply can only be lost once there is one
		}
		if a == spec.ExploreCrash && x.crashes >= x.half || a == spec.ExplorePause && x.paused >= x.half {
			continue
		}
		if x.budget[[2]string{point, a}] < x.e.PerPoint {
			open = append(open, a)
		}
	}
	if len(open) == 0 {
		x.mu.Unlock()
		return ""
	}
	act := open[rng.IntN(len(open))]
	x.budget[[2]string{point, act}]++
	switch act {
	case spec.ExploreCrash:
		x.crashes++
	case spec.ExplorePause:
		x.paused++
	}
	x.mu.Unlock()
	return act
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

// inCall says whether a hit made on ctx is inside one of Explore.During's
// Locker calls (any hit when During is empty).
func (x *explorer) inCall(ctx context.Context) bool {
	return len(x.e.During) == 0 || slices.Contains(x.e.During, lockimpl.CallOf(ctx))
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
// fault injected.
type Coverage struct {
	Hit     int                  `json:"hit"`
	Faulted int                  `json:"faulted"`
	Points  []lockimpl.PointStat `json:"points,omitempty"`
}

func coverage(h *lockimpl.Hub) *Coverage {
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
	return cov
}
