package scenarios

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Command points. Every command a lock sends on Env.Nodes passes two
// failpoints of its client, whatever the lock (a shipped one, a user's, a
// library that knows nothing of lockstorm):
//
//	cmd/<node>/<COMMAND>/before   before it is sent
//	cmd/<node>/<COMMAND>/after    after its reply arrived, before the lock sees it
//
// <node> is the node's name (n1, n2, ...), <COMMAND> the command in upper
// case; scripts are told apart by the first 8 hex digits of their SHA-1
// (EVAL:1a2b3c4d, EVALSHA:1a2b3c4d: the same script under both names, as
// go-redis sends EVALSHA first and EVAL after a NOSCRIPT). Specs address
// them like any failpoint, with '*' for a segment (cmd/*/SET/after: a SET
// on any node) and nth for the occurrence in the client's cycle (nth: 2:
// the second SET of a cycle). A pipeline's commands pass their before
// points in order, then are sent together, then pass their after points.
//
// A crash at a before point sends nothing; at an after point the command
// landed and the client never learns its reply; either way the client
// sends nothing more (the hook refuses every later command of a crashed
// client, its watchdog's included). A lost reply (lose_reply, only at an
// after point) hands the lock a timeout instead of the reply: the command
// landed and the outcome is unknown to the client.
type cmdHook struct {
	node  string
	fp    *lockimpl.Failpoints
	crash func(err error) // marks the client crashed, at once
	dead  func() bool     // the client has crashed
	mu    sync.Mutex
	names map[string]*[2]string // command → its before and after points
}

// errLostReply is what a lock sees instead of a reply lost at a point: a
// timeout, as a real lost reply would surface (a net.Error whose Timeout is
// true), so libraries classify it as an unknown outcome.
type errLostReply struct{ err error }

func (e *errLostReply) Error() string   { return "i/o timeout (" + e.err.Error() + ")" }
func (e *errLostReply) Unwrap() error   { return e.err }
func (e *errLostReply) Timeout() bool   { return true }
func (e *errLostReply) Temporary() bool { return true }

func (h *cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.dead() {
			return setErr(lockimpl.ErrCrashed, cmd)
		}
		if !h.fp.Armed() {
			return next(ctx, cmd)
		}
		pts := h.points(cmd)
		if pts == nil {
			return next(ctx, cmd)
		}
		if err := h.fp.Hit(ctx, pts[0]); err != nil {
			return h.fail(err, false, cmd)
		}
		err := next(ctx, cmd)
		if herr := h.fp.Hit(ctx, pts[1]); herr != nil {
			return h.fail(herr, true, cmd)
		}
		return err
	}
}

func (h *cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.dead() {
			return setErr(lockimpl.ErrCrashed, cmds...)
		}
		if !h.fp.Armed() {
			return next(ctx, cmds)
		}
		for _, cmd := range cmds {
			if pts := h.points(cmd); pts != nil {
				if err := h.fp.Hit(ctx, pts[0]); err != nil {
					return h.fail(err, false, cmds...)
				}
			}
		}
		err := next(ctx, cmds)
		for _, cmd := range cmds {
			if pts := h.points(cmd); pts != nil {
				if herr := h.fp.Hit(ctx, pts[1]); herr != nil {
					return h.fail(herr, true, cmds...)
				}
			}
		}
		return err
	}
}

// fail turns a point's error into the commands' error. A crash marks the
// client dead before the lock sees anything, so the runner ends it even if
// the lock swallows or rewraps the error.
func (h *cmdHook) fail(err error, after bool, cmds ...redis.Cmder) error {
	switch {
	case errors.Is(err, lockimpl.ErrCrashed):
		h.crash(err)
	case errors.Is(err, lockimpl.ErrLostReply) && after:
		err = &errLostReply{err}
	case errors.Is(err, lockimpl.ErrLostReply):
		// A reply cannot be lost before the command is sent: nothing was
		// sent, which the lock learns as a failed send (still unknown to it).
		err = fmt.Errorf("send failed: %w", err)
	}
	return setErr(err, cmds...)
}

func setErr(err error, cmds ...redis.Cmder) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

// connSetup are the commands go-redis sends on its own when it opens a
// connection: they are not the lock's steps, so they have no points.
var connSetup = map[string]bool{"hello": true, "auth": true, "select": true, "client": true, "readonly": true}

// points returns the command's before and after point names, built once per
// distinct command so that a hit allocates nothing; nil for go-redis's own
// connection set-up.
func (h *cmdHook) points(cmd redis.Cmder) *[2]string {
	name := cmd.Name()
	if connSetup[name] {
		return nil
	}
	arg := ""
	if args := cmd.Args(); len(args) > 1 && isScript(name) {
		arg, _ = args[1].(string)
	}
	return h.pointsOf(name, arg)
}

func isScript(name string) bool {
	return name == "eval" || name == "evalsha" || name == "eval_ro" || name == "evalsha_ro"
}

// pointsOf is points for a command by its lower-case name and, for a
// script, its first argument (the script, or its SHA-1 under EVALSHA).
func (h *cmdHook) pointsOf(name, arg string) *[2]string {
	if connSetup[name] || name == "" {
		return nil
	}
	key := name
	if isScript(name) && arg != "" {
		key = name + "\x00" + arg
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.names[key]; p != nil {
		return p
	}
	label := strings.ToUpper(name)
	if key != name {
		sha := arg
		if !strings.HasPrefix(name, "evalsha") {
			sum := sha1.Sum([]byte(arg))
			sha = hex.EncodeToString(sum[:])
		}
		if len(sha) > 8 {
			sha = sha[:8]
		}
		label += ":" + strings.ToLower(sha)
	}
	p := &[2]string{"cmd/" + h.node + "/" + label + "/before", "cmd/" + h.node + "/" + label + "/after"}
	if h.names == nil {
		h.names = map[string]*[2]string{}
	}
	h.names[key] = p
	return p
}

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
	// crashes are capped at half the clients (half): a crashed client
	// stays dead, and the run must keep its traffic to the end. paused,
	// the pauses holding clients now, are capped the same way: a pause
	// shows something only while others run beside it (and take the lock
	// it lets expire).
	crashes, paused, half int
}

// newExplorer explores as e says, its defaults filled in by Compile.
func newExplorer(r *run, tl *timeline, e spec.Explore) *explorer {
	return &explorer{r: r, tl: tl, e: e, rngs: map[int]*rand.Rand{}, budget: map[[2]string]int{}, hits: map[string]int{},
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
	x.r.add(c, checker.Ok, checker.FStep, "", func(o *checker.Op) { o.Value = "explore " + act + " at " + point })
	switch act {
	case spec.ExploreCrash:
		return fmt.Errorf("%w %s (explore)", lockimpl.ErrCrashed, point)
	case spec.ExploreLoseReply:
		return fmt.Errorf("%w %s (explore)", lockimpl.ErrLostReply, point)
	case spec.ExploreDelay:
		return c.pause.sleep(ctx, x.e.Delay)
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
		return c.pause.wait(context.WithoutCancel(ctx))
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
