package shrink

import (
	"slices"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// hist builds a history in time order; times are in milliseconds.
type hist struct{ h history.History }

func ms(t float64) int64 { return int64(t * float64(time.Millisecond)) }

func (b *hist) add(o history.Op) { o.Index = len(b.h); b.h = append(b.h, o) }

func (b *hist) step(c int, t float64, point string) {
	b.add(history.Op{Type: history.Ok, Process: c, Client: c, F: history.FStep, Value: point, Time: ms(t)})
}

func (b *hist) op(c int, t float64, typ history.Type, f, value string) {
	b.add(history.Op{Type: typ, Process: c, Client: c, F: f, Key: "lock:0", Value: value, Time: ms(t)})
}

func (b *hist) server(t float64, ev, owner string) {
	b.add(history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer, Key: "lock:0", Value: ev, Owner: owner, Node: "n1", Time: ms(t)})
}

// poll is a waiting client's turns of its loop: SETNX refused, GET.
func (b *hist) poll(c int, from, to float64) {
	for t := from; t < to; t += 5 {
		b.step(c, t, "l/before-setnx")
		b.step(c, t+0.5, "cmd/n1/SETNX/before")
		b.step(c, t+1, "cmd/n1/SETNX/after")
		b.step(c, t+1.5, "cmd/n1/GET/before")
		b.step(c, t+2, "cmd/n1/GET/after")
		b.step(c, t+2.1, "l/after-get")
	}
}

// sorted is the history in time order, as a recorder writes it.
func (b *hist) sorted() history.History {
	h := slices.Clone(b.h)
	slices.SortStableFunc(h, func(x, y history.Op) int { return int(x.Time - y.Time) })
	for i := range h {
		h[i].Index = i
	}
	return h
}

// witnessOf is the overlap of a's and b's holds, as the checker names it.
func witnessOf(t *testing.T, h history.History, a, b int) *checker.Witness {
	t.Helper()
	var ha, hb *checker.Hold
	for _, hd := range checker.Holds(h) {
		switch hd.Client {
		case a:
			ha = &hd
		case b:
			hb = &hd
		}
	}
	if ha == nil || hb == nil {
		t.Fatalf("holds of c%d and c%d not found in %+v", a, b, checker.Holds(h))
	}
	return &checker.Witness{Key: "lock:0", A: *ha, B: *hb, FromNs: max(ha.From, hb.From), ToNs: min(ha.To, hb.To)}
}

func wait(client int, point string, skip int, waitFor string, waitClient int) spec.FailpointSpec {
	a := lockimpl.Action{Skip: skip, Times: 1, WaitFor: waitFor, WaitClient: waitClient}
	return spec.FailpointSpec{Client: client, Point: point, Action: a}
}

// TestScheduleFromHistory: a failing run's history becomes the schedule
// that forces its interleaving. Each case says, from what the history
// shows, which waits and pinned faults the schedule must hold (it may
// hold more).
func TestScheduleFromHistory(t *testing.T) {
	base := &spec.Spec{Name: "x-random", Mode: "random", Clients: 8, Keys: 2, Duration: 2 * time.Second,
		Lock:       lockimpl.Options{TTL: 150 * time.Millisecond},
		Failpoints: []spec.FailpointSpec{{Client: -1, Point: "cs/hold", Action: lockimpl.Action{Prob: 0.1, Crash: true}}}}
	for _, tc := range []struct {
		name    string
		history func(b *hist)
		a, b    int   // the witness's holders
		keep    []int // in the history
		clients int
		// must are failpoints the schedule must have, in replay numbers:
		// one of each entry's alternatives (an order can be forced at
		// more than one pair of points).
		must [][]spec.FailpointSpec
	}{
		{
			// c3 holds; a pause of 400 ms stops it in its critical
			// section; c5, polling since before, takes the expired lock.
			name: "pause past the TTL",
			history: func(b *hist) {
				b.step(5, 0.5, "cycle/before-acquire")
				b.op(5, 0.6, history.Invoke, history.FAcquire, "")
				b.step(3, 1, "cycle/before-acquire")
				b.op(3, 1.1, history.Invoke, history.FAcquire, "")
				b.step(3, 1.2, "cmd/n1/SET/before")
				b.step(3, 2, "cmd/n1/SET/after")
				b.op(3, 2.1, history.Ok, history.FAcquire, "t3")
				b.step(3, 3, "cs/hold")
				b.add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStart, Value: "pause pick=holder",
					N: 1, Time: ms(5), Targets: &history.FaultTargets{Clients: []int{3}}})
				for t := 3.0; t < 250; t += 5 {
					b.step(5, t, "cmd/n1/SET/before")
					b.step(5, t+1, "cmd/n1/SET/after")
				}
				b.op(5, 252, history.Ok, history.FAcquire, "t5")
				b.step(5, 252.1, "cs/hold")
				b.op(5, 300, history.Invoke, history.FRelease, "t5")
				b.add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStop, Value: "pause pick=holder", N: 1, Time: ms(405)})
				b.op(3, 406, history.Invoke, history.FRelease, "t3")
			},
			a: 3, b: 5, keep: []int{3, 5}, clients: 2,
			must: [][]spec.FailpointSpec{
				{wait(1, "cycle/before-acquire", 0, "cs/hold", 0)},
				{{Client: 0, Point: "cs/hold", Action: lockimpl.Action{Times: 1},
					Fault: &nemesis.Spec{Kind: "pause", Clients: []int{0}, For: 400 * time.Millisecond}}},
			},
		},
		{
			// c5 holds first; c3 polls until c5 releases, takes the lock,
			// extends it twice (every 10 ms of its hold) and is paused
			// for 400 ms; c5, back for the lock, takes it once it
			// expired. c3's extends repeat their points inside its hold:
			// they are not the acquire's polling loop, and the pause is
			// pinned to c3's hold, not to the start of its cycle.
			name: "pause after extends",
			history: func(b *hist) {
				extend := func(c int, t float64, n int64, tok string) {
					b.add(history.Op{Type: history.Invoke, Process: c, Client: c, F: history.FExtend, Key: "lock:0", Value: tok, N: n, Time: ms(t)})
					b.step(c, t+0.1, "cmd/n1/EVALSHA:1/before")
					b.server(t+0.3, "expire", tok)
					b.step(c, t+0.5, "cmd/n1/EVALSHA:1/after")
					b.add(history.Op{Type: history.Ok, Process: c, Client: c, F: history.FExtend, Key: "lock:0", N: n, Time: ms(t + 0.6)})
				}
				b.step(5, 0.5, "cycle/before-acquire")
				b.op(5, 0.55, history.Invoke, history.FAcquire, "")
				b.step(5, 0.6, "cmd/n1/SET/before")
				b.server(0.8, "set", "t5a")
				b.step(5, 1.0, "cmd/n1/SET/after")
				b.op(5, 1.1, history.Ok, history.FAcquire, "t5a")
				b.step(5, 2, "cs/hold")
				extend(5, 12, 1, "t5a")
				extend(5, 22, 2, "t5a")
				b.op(5, 29, history.Invoke, history.FRelease, "t5a")
				b.step(5, 29.05, "cycle/before-release")
				b.step(5, 29.1, "cmd/n1/EVALSHA:2/before")
				b.server(29.3, "del", "")
				b.step(5, 29.6, "cmd/n1/EVALSHA:2/after")
				b.op(5, 29.7, history.Ok, history.FRelease, "t5a")
				b.step(5, 29.8, "cycle/before-acquire")
				b.op(5, 29.85, history.Invoke, history.FAcquire, "")
				b.step(3, 1, "cycle/before-acquire")
				b.op(3, 1.05, history.Invoke, history.FAcquire, "")
				for t := 1.2; t < 29; t += 5 {
					b.step(3, t, "cmd/n1/SET/before")
					b.step(3, t+1, "cmd/n1/SET/after")
				}
				b.step(3, 29.4, "cmd/n1/SET/before")
				b.server(29.7, "set", "t3")
				b.step(3, 30.0, "cmd/n1/SET/after")
				b.op(3, 30.1, history.Ok, history.FAcquire, "t3")
				b.step(3, 30.2, "cs/hold")
				extend(3, 40, 1, "t3")
				extend(3, 50, 2, "t3")
				b.add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStart, Value: "pause pick=holder",
					N: 1, Time: ms(55), Targets: &history.FaultTargets{Clients: []int{3}}})
				for t := 30.0; t < 250; t += 5 {
					b.step(5, t, "cmd/n1/SET/before")
					b.step(5, t+1, "cmd/n1/SET/after")
				}
				b.server(250.5, "expired", "")
				b.step(5, 251, "cmd/n1/SET/before")
				b.server(251.3, "set", "t5b")
				b.step(5, 251.6, "cmd/n1/SET/after")
				b.op(5, 252, history.Ok, history.FAcquire, "t5b")
				b.step(5, 252.1, "cs/hold")
				b.op(5, 300, history.Invoke, history.FRelease, "t5b")
				b.add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStop, Value: "pause pick=holder", N: 1, Time: ms(455)})
				b.op(3, 456, history.Invoke, history.FRelease, "t3")
			},
			a: 3, b: 5, keep: []int{3, 5}, clients: 2,
			must: [][]spec.FailpointSpec{
				{{Client: 1, Point: "cs/hold", Action: lockimpl.Action{Times: 1},
					Fault: &nemesis.Spec{Kind: "pause", Clients: []int{1}, For: 400 * time.Millisecond}}},
			},
		},
		{
			// The DEL race: c2 crashed holding; c0 and c1 both read its
			// expired stamp; c0 deletes it and takes the lock; c1's DEL,
			// which the server ran after c0's SETNX, removes c0's lock
			// and c1's SETNX wins. c1's DEL reply comes back first.
			name: "DEL race after a crash",
			history: func(b *hist) {
				b.step(0, 0.5, "cycle/before-acquire")
				b.op(0, 0.55, history.Invoke, history.FAcquire, "")
				b.step(1, 0.6, "cycle/before-acquire")
				b.op(1, 0.65, history.Invoke, history.FAcquire, "")
				b.step(2, 1, "cycle/before-acquire")
				b.op(2, 1.1, history.Invoke, history.FAcquire, "")
				b.step(2, 1.2, "l/before-setnx")
				b.step(2, 1.3, "cmd/n1/SETNX/before")
				b.server(1.8, "set", "s2")
				b.step(2, 2, "cmd/n1/SETNX/after")
				b.op(2, 2.1, history.Ok, history.FAcquire, "s2")
				b.step(2, 3, "cs/hold")
				b.op(2, 3.1, history.Ok, history.FCrash, "")
				b.poll(0, 0.7, 155)
				b.poll(1, 1.7, 155)
				// Both read the expired stamp, then go their ways.
				b.step(0, 160, "l/before-setnx")
				b.step(0, 160.1, "cmd/n1/SETNX/before")
				b.step(0, 160.5, "cmd/n1/SETNX/after")
				b.step(0, 160.6, "cmd/n1/GET/before")
				b.step(0, 161, "cmd/n1/GET/after")
				b.step(0, 161.1, "l/after-get")
				b.step(1, 160.2, "l/before-setnx")
				b.step(1, 160.3, "cmd/n1/SETNX/before")
				b.step(1, 160.7, "cmd/n1/SETNX/after")
				b.step(1, 160.8, "cmd/n1/GET/before")
				b.step(1, 161.2, "cmd/n1/GET/after")
				b.step(1, 161.3, "l/after-get")
				b.step(0, 161.4, "l/before-del")
				b.step(0, 161.5, "cmd/n1/DEL/before")
				b.server(162, "del", "")
				b.step(0, 162.2, "cmd/n1/DEL/after")
				b.step(0, 162.3, "l/after-del")
				b.step(0, 162.4, "cmd/n1/SETNX/before")
				b.step(1, 162.5, "l/before-del")
				b.step(1, 162.6, "cmd/n1/DEL/before")
				b.server(162.9, "set", "s0")
				b.server(163.5, "del", "")
				b.step(1, 163.6, "cmd/n1/DEL/after") // back before c0's SETNX reply
				b.step(1, 163.7, "l/after-del")
				b.step(1, 163.8, "cmd/n1/SETNX/before")
				b.step(0, 164, "cmd/n1/SETNX/after")
				b.op(0, 164.1, history.Ok, history.FAcquire, "s0")
				b.step(0, 164.2, "cs/hold")
				b.server(164.3, "set", "s1")
				b.step(1, 164.6, "cmd/n1/SETNX/after")
				b.op(1, 164.7, history.Ok, history.FAcquire, "s1")
				b.step(1, 164.8, "cs/hold")
				b.op(0, 166, history.Invoke, history.FRelease, "s0")
				b.op(1, 167, history.Invoke, history.FRelease, "s1")
			},
			a: 0, b: 1, keep: []int{2, 0, 1}, clients: 3,
			must: [][]spec.FailpointSpec{
				// c2 (replayed first) crashes where it did.
				{{Client: 0, Point: "cs/hold", Action: lockimpl.Action{Times: 1, Crash: true}}},
				// c1's DEL is sent only once c0 holds (the server ran it
				// after c0's SETNX, whatever the replies said).
				{wait(2, "cmd/n1/DEL/before", 0, "cs/hold", 1), wait(2, "l/before-del", 0, "cs/hold", 1)},
				// c0's SETNX (or its whole cycle) waits until c1 read the
				// expired stamp and went for its DEL.
				{wait(1, "cmd/n1/SETNX/before", 0, "l/before-del", 2), wait(1, "cmd/n1/SETNX/before", 0, "cmd/n1/DEL/before", 2),
					wait(1, "cycle/before-acquire", 0, "l/before-del", 2), wait(1, "cycle/before-acquire", 0, "cmd/n1/DEL/before", 2)},
				// c0 is still inside its critical section when c1 holds.
				{wait(1, "cs/hold", 0, "cs/hold", 2)},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b hist
			tc.history(&b)
			h := b.sorted()
			w := witnessOf(t, h, tc.a, tc.b)
			s, err := Schedule(base, h, w, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			y, _ := s.YAML()
			if s.Mode != "scheduled" || s.Clients != tc.clients || s.Keys != 1 || len(s.Faults) != 0 {
				t.Errorf("mode %s, %d clients, %d keys, %d faults: want scheduled, %d, 1, 0\n%s", s.Mode, s.Clients, s.Keys, len(s.Faults), tc.clients, y)
			}
			for _, alts := range tc.must {
				if !slices.ContainsFunc(alts, func(want spec.FailpointSpec) bool {
					return slices.ContainsFunc(s.Failpoints, func(fp spec.FailpointSpec) bool { return sameFailpoint(fp, want) })
				}) {
					t.Errorf("none of %+v in\n%s", alts, y)
				}
			}
			for _, fp := range s.Failpoints {
				if fp.Prob != 0 || fp.Client < 0 {
					t.Errorf("a random failpoint is left: %+v", fp)
				}
			}
		})
	}
}

// sameFailpoint compares failpoints, times loop passes included ("every
// pass" has Times 0: a wait at a loop's point is as good as at its first).
func sameFailpoint(got, want spec.FailpointSpec) bool {
	if got.Fault != nil || want.Fault != nil {
		if got.Fault == nil || want.Fault == nil || got.Fault.Kind != want.Fault.Kind || got.Fault.For != want.Fault.For ||
			!slices.Equal(got.Fault.Clients, want.Fault.Clients) {
			return false
		}
	}
	g := got.Action
	if g.Times == 0 && want.Times == 1 && want.WaitFor != "" {
		g.Times = 1
	}
	return got.Client == want.Client && got.Point == want.Point && g.Skip == want.Skip && g.Times == want.Times &&
		g.WaitFor == want.WaitFor && g.WaitClient == want.WaitClient && g.Crash == want.Crash && g.Sleep == want.Sleep
}

// TestLiveFirst: schedules are built first from races between live holders,
// then from runs that needed fewer holds past their lease; overruns counts
// a hold that outlasted the TTL before the overlap (released late, or still
// open when it began) and nothing else.
func TestLiveFirst(t *testing.T) {
	const ttl = 100 * time.Millisecond
	run := func(build func(b *hist)) *scenarios.Outcome {
		var b hist
		build(&b)
		h := b.sorted()
		return &scenarios.Outcome{Spec: &spec.Spec{Lock: lockimpl.Options{TTL: ttl}}, History: h, Result: checker.Result{Exclusion: checker.Exclusion{Witness: witnessOf(t, h, 1, 2)}}}
	}
	// c0 holds 150 ms (past its TTL) and releases; c1 takes over at 120,
	// c2 acquires at 160 while c1 holds: one overrun.
	late := run(func(b *hist) {
		b.op(0, 0, history.Invoke, history.FAcquire, "")
		b.op(0, 1, history.Ok, history.FAcquire, "t0")
		b.op(1, 110, history.Invoke, history.FAcquire, "")
		b.op(1, 120, history.Ok, history.FAcquire, "t1")
		b.op(0, 150, history.Invoke, history.FRelease, "t0")
		b.op(0, 151, history.Ok, history.FRelease, "t0")
		b.op(2, 155, history.Invoke, history.FAcquire, "")
		b.op(2, 160, history.Ok, history.FAcquire, "t2")
		b.op(1, 170, history.Invoke, history.FRelease, "t1")
		b.op(2, 175, history.Invoke, history.FRelease, "t2")
	})
	// c0 crashes holding; c1 and c2 take it over 120 and 125 ms in: none.
	live := run(func(b *hist) {
		b.op(0, 0, history.Invoke, history.FAcquire, "")
		b.op(0, 1, history.Ok, history.FAcquire, "t0")
		b.op(0, 2, history.Info, history.FCrash, "")
		b.op(1, 110, history.Invoke, history.FAcquire, "")
		b.op(1, 120, history.Ok, history.FAcquire, "t1")
		b.op(2, 111, history.Invoke, history.FAcquire, "")
		b.op(2, 125, history.Ok, history.FAcquire, "t2")
		b.op(1, 170, history.Invoke, history.FRelease, "t1")
		b.op(2, 175, history.Invoke, history.FRelease, "t2")
	})
	if got := overruns(late); got != 1 {
		t.Errorf("overruns(late) = %d, want 1", got)
	}
	if got := overruns(live); got != 0 {
		t.Errorf("overruns(live) = %d, want 0", got)
	}
	wits := []witnessRun{
		{seed: 1, within: true, overruns: overruns(late)},
		{seed: 2, within: false},
		{seed: 3, within: true, overruns: overruns(live)},
	}
	var got []uint64
	for _, w := range liveFirst(wits) {
		got = append(got, w.seed)
	}
	if !slices.Equal(got, []uint64{3, 1, 2}) {
		t.Errorf("liveFirst order = %v, want [3 1 2]", got)
	}
}
