package shrink

import (
	"fmt"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// schedSpec writes the schedule as a spec: base's lock and conditions, the
// kept clients, the gates, and the crashes and faults pinned to points.
func schedSpec(base *spec.Spec, w *checker.Witness, lanes []*lane, gates []gate, h history.History) (*spec.Spec, error) {
	s := *base
	s.Mode = "scheduled"
	s.Clients = len(lanes)
	s.Hosts = 0
	s.Keys = 1
	s.Ops = 0
	s.Faults, s.Explore, s.Failpoints = nil, nil, nil
	var who []string
	renum := map[int]int{}
	for _, l := range lanes {
		renum[l.client] = l.replay
		who = append(who, fmt.Sprintf("c%d as c%d", l.client, l.replay))
	}
	s.Description = fmt.Sprintf("%s as a schedule: the order in which %s passed their points up to the overlap on %s, forced with gates",
		base.Name, strings.Join(who, ", "), w.Key)
	s.ClockOffsets = nil
	for c, d := range base.ClockOffsets {
		if n, ok := renum[c]; ok {
			if s.ClockOffsets == nil {
				s.ClockOffsets = map[int]time.Duration{}
			}
			s.ClockOffsets[n] = d
		}
	}
	for _, gt := range gates {
		d, c := lanes[gt.d], lanes[gt.c]
		at, x := d.landmarks[gt.g], c.landmarks[gt.x]
		a := lockimpl.Action{WaitFor: x.point, WaitClient: c.replay} // a loop's point: every pass
		if at.once {
			a.Skip, a.Times = at.n-1, 1
		}
		if x.n > 1 {
			a.WaitCount = x.n
		}
		s.Failpoints = append(s.Failpoints, spec.FailpointSpec{Client: d.replay, Point: at.point, Action: a})
	}
	for _, l := range lanes {
		s.Failpoints = append(s.Failpoints, pinned(base, l, h, renum, w.ToNs)...)
	}
	return &s, nil
}

// pinned are the crash and the faults that met lane l's client in its
// window (up to end, the overlap's), each at the landmark the client had passed last when it came.
// A crash a failpoint caused is at the step that fired it; any other
// crash and every fault naming the client (a pause, the timeline's crash)
// at the last landmark before it began (the first, for one that began
// before the window).
func pinned(base *spec.Spec, l *lane, h history.History, renum map[int]int, end int64) []spec.FailpointSpec {
	if len(l.landmarks) == 0 {
		return nil
	}
	start := l.landmarks[0].t
	var out []spec.FailpointSpec
	// A random failpoint's fault (a sleep, a lost reply, a fault placed at
	// a step) that fired at one of the lane's landmarks: there, once.
	for _, e := range l.landmarks {
		for _, i := range e.fired {
			if !e.once || i < 0 || i >= len(base.Failpoints) {
				continue
			}
			fp := base.Failpoints[i]
			a := fp.Action
			if a.Prob == 0 && fp.Client >= 0 || a.Sleep == 0 && !a.LoseReply && fp.Fault == nil {
				continue // a schedule's own step, or a crash (pinned below)
			}
			p := spec.FailpointSpec{Client: l.replay, Point: e.point,
				Action: lockimpl.Action{Skip: e.n - 1, Times: 1, Sleep: a.Sleep, LoseReply: a.LoseReply}}
			if fp.Fault != nil {
				f := *fp.Fault
				f.Clients = []int{l.replay}
				p.Fault = &f
			}
			out = append(out, p)
		}
	}
	at := func(t int64) event {
		p := l.landmarks[0]
		for _, e := range l.landmarks {
			if e.once && e.t <= t {
				p = e
			}
		}
		return p
	}
	stops := map[int64]int64{}
	for _, o := range h {
		if o.F == history.FStop && o.Process == history.NemesisProcess {
			stops[o.N] = o.Time
		}
	}
	for _, o := range h {
		switch {
		case o.F == history.FCrash && o.Client == l.client && o.Process >= 0 && o.Time >= start && o.Time <= end:
			e := at(o.Time)
			out = append(out, spec.FailpointSpec{Client: l.replay, Point: e.point, Action: lockimpl.Action{Skip: e.n - 1, Times: 1, Crash: true}})
		case o.F == history.FStart && o.Type == history.Ok && o.Targets != nil && firstKept(o.Targets.Clients, renum) == l.client:
			stop, ok := stops[o.N]
			if !ok {
				stop = end
			}
			if stop < start || o.Time > end {
				continue
			}
			kind, _, _ := strings.Cut(o.Value, " ")
			f := nemesis.Spec{Kind: kind, Clients: []int{l.replay}, For: time.Duration(stop - o.Time).Round(granularity)}
			if kind == "crash" {
				f.For = 0
			}
			for _, c := range o.Targets.Clients {
				if n, ok := renum[c]; ok && c != l.client {
					f.Clients = append(f.Clients, n)
				}
			}
			e := at(o.Time)
			out = append(out, spec.FailpointSpec{Client: l.replay, Point: e.point, Action: lockimpl.Action{Skip: e.n - 1, Times: 1}, Fault: &f})
		}
	}
	return out
}

// firstKept is the first of clients that is kept (-1: none): a fault that
// met several kept clients is pinned once, in that one's window.
func firstKept(clients []int, renum map[int]int) int {
	for _, c := range clients {
		if _, ok := renum[c]; ok {
			return c
		}
	}
	return -1
}
