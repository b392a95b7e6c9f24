package spec

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// CmdPoint says whether point is a command point (cmd/NODE/COMMAND/before|after).
func CmdPoint(point string) bool { return strings.HasPrefix(point, "cmd/") }

// Explore is exploration: faults at points nobody named. Every point a
// lock hits in the run (its declared failpoints and every command point,
// discovered as they are hit) is a candidate; each hit of a candidate gets a
// fault with probability Rate (or 1/n on the point's n-th hit when that is
// higher, so a rare point is tried on its first hits), the action drawn
// from Actions among those that still have budget at that point (PerPoint
// faults per point and action in a run, so a hot point such as a retried SET NX does not take
// the whole budget and kill every client before the rarer steps are
// reached). Crashes are capped at half the clients (a crashed client stays
// dead), and so are the clients paused at once (a pause shows something
// only while others run beside it). A pause stops the thread at the point until the pause ends, as a
// stop-the-world pause does. Draws come from the run's seed, one stream per
// client.
type Explore struct {
	// Actions are drawn from: crash, pause, delay, lose-reply.
	Actions []string `yaml:"actions" json:"actions"`
	// Rate is the probability that a hit of a candidate gets a fault.
	Rate float64 `yaml:"rate" json:"rate"`
	// PerPoint bounds the faults per point and action (0: 1).
	PerPoint int `yaml:"per_point" json:"per_point,omitempty"`
	// Delay is how long a delay holds the client at the point (0: 50 ms).
	Delay time.Duration `yaml:"delay" json:"delay,omitempty"`
	// Pause is how long a pause stops the whole client (0: twice the lock
	// TTL, or 1 s without one): long enough for its lease to run out.
	Pause time.Duration `yaml:"pause" json:"pause,omitempty"`
	// Points, when set, restrict the candidates to those matching one of
	// these patterns (path.Match syntax).
	Points []string `yaml:"points" json:"points,omitempty"`
	// During, when set, restricts the candidates to hits made inside these
	// Locker calls: acquire, release, extend (the runner tags the context
	// it hands each call). A lock's own helpers (a watchdog) are in none.
	// A pause past the TTL means something else in each: inside a release
	// it is a late release, which a lock that deletes only its own token
	// survives; inside an acquire it is a late grant, which only a lock
	// that checks its validity survives; anywhere else it is a holder
	// paused past its lease, which no lock without fencing survives.
	During []string `yaml:"during" json:"during,omitempty"`
}

// Exploration actions.
const (
	ExploreCrash     = "crash"
	ExplorePause     = "pause"
	ExploreDelay     = "delay"
	ExploreLoseReply = "lose-reply"
)

// checkExplore checks the exploration block: its actions, rate, calls and
// point patterns.
func (v *validation) checkExplore(e *Explore) error {
	if len(e.Actions) == 0 {
		return v.bad("explore.actions", "missing: want some of crash, pause, delay, lose-reply")
	}
	for i, a := range e.Actions {
		switch a {
		case ExploreCrash, ExplorePause, ExploreDelay, ExploreLoseReply:
		default:
			return v.bad(fmt.Sprintf("explore.actions.%d", i), "want crash, pause, delay or lose-reply, got %q", a)
		}
	}
	if e.Rate <= 0 || e.Rate > 1 {
		return v.bad("explore.rate", "want a probability in (0, 1], got %v", e.Rate)
	}
	if e.PerPoint < 0 || e.Delay < 0 || e.Pause < 0 {
		return v.bad("explore.per_point", "per_point, delay and pause must not be negative")
	}
	for i, c := range e.During {
		switch c {
		case "acquire", "release", "extend":
		default:
			return v.bad(fmt.Sprintf("explore.during.%d", i), "want acquire, release or extend, got %q", c)
		}
	}
	for i, p := range e.Points {
		if _, err := path.Match(p, ""); err != nil {
			return v.bad(fmt.Sprintf("explore.points.%d", i), "bad pattern %q: %v", p, err)
		}
	}
	return nil
}
