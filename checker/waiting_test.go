package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// The goldens of the needless-wait and lockstep-retries findings: each
// bad history with its good twins (the same contention, handled well, or
// its wait the harness's own), in testdata, checked by TestWaitGoldens and
// timed by BenchmarkWaitGoldens.

// srvEv records one key event on node.
func srvEv(b *builder, at float64, node, ev, owner string) {
	b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, node, owner })
}

// syncsTo records an observer's syncs on node every 20 ms to end, each
// answered in 0.2 ms.
func syncsTo(b *builder, node string, end float64) {
	for at := 0.0; at < end; at += 20 {
		b.add(at+0.2, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = node, msT(at) })
	}
}

// waitHistory: c1 holds lock:0 on one node from 10 to 100 ms and releases;
// c2, whose acquire was invoked at 50 ms, is granted at grant. stall, when
// set, is a harness stall of that many ms ending at 700 ms.
func waitHistory(grant, stall float64) history.History {
	b := &builder{}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	b.op(9, 10, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
	srvEv(b, 9.5, "n1", "set", "t1")
	b.op(100, 101, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
	srvEv(b, 100.5, "n1", "del", "")
	b.op(50, grant, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
	srvEv(b, grant-0.5, "n1", "set", "t2")
	b.op(grant+5, grant+6, history.Ok, 2, 2, history.FRelease, k0, tok("t2"))
	srvEv(b, grant+5.5, "n1", "del", "")
	if stall > 0 {
		b.add(700, history.Ok, history.NemesisProcess, -1, history.FStall, "", n(msT(stall)))
	}
	syncsTo(b, "n1", grant+20)
	return b.sorted()
}

// lockstepHistory: c1 and c2 contend for lock:0 on three nodes, n3 taking
// no set; every round each wins one node and deletes it after 5 ms: a
// split. Round k of c2 starts offsets[k] ms after c1's (c1's every 500 ms
// from 10); c1 wins n1 and n2 after the rounds.
func lockstepHistory(offsets []float64) history.History {
	b := &builder{}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	last := 10.0
	for k, off := range offsets {
		at := 10 + 500*float64(k)
		srvEv(b, at, "n1", "set", "a1")
		srvEv(b, at+5, "n1", "del", "")
		srvEv(b, at+off+1, "n2", "set", "a2")
		srvEv(b, at+off+6, "n2", "del", "")
		last = at + 500
	}
	b.op(5, last+2, history.Ok, 1, 1, history.FAcquire, k0, tok("a1"))
	srvEv(b, last, "n1", "set", "a1")
	srvEv(b, last+1, "n2", "set", "a1")
	b.op(5, last+3, history.Fail, 2, 2, history.FAcquire, k0, errs("not acquired"))
	b.op(last+10, last+11, history.Ok, 1, 1, history.FRelease, k0, tok("a1"))
	srvEv(b, last+10.5, "n1", "del", "")
	srvEv(b, last+10.6, "n2", "del", "")
	for _, node := range []string{"n1", "n2", "n3"} {
		syncsTo(b, node, last+20)
	}
	return b.sorted()
}

// lockstepStrayHistory is lockstepHistory with a third token's key on n3
// from between the first two rounds to after the last (a holder's release
// not yet landed there, drawn out): the last three rounds' contenders do
// not split the nodes among themselves.
func lockstepStrayHistory(offsets []float64) history.History {
	b := &builder{}
	b.h = append(b.h, lockstepHistory(offsets)...)
	srvEv(b, 300, "n3", "set", "x3")
	srvEv(b, 10+500*float64(len(offsets))-1, "n3", "del", "")
	return b.sorted()
}

var (
	waitOpts     = history.Options{WaitBound: 500 * time.Millisecond}
	lockstepOpts = history.Options{Quorum: true, LockstepWithin: 20 * time.Millisecond, LockstepRounds: 3}
)

var waitGoldens = []golden{
	{name: "needless-wait", opts: waitOpts, hist: func() history.History { return waitHistory(1050, 0) }, check: func(t *testing.T, r Result) {
		f := r.Finding(history.KindNeedlessWait)
		if f == nil {
			t.Fatalf("no needless-wait finding: %+v", r.Findings)
		}
		expect(t, f.Count, 1, "count")
		expect(t, f.FirstNs, msT(100.5), "first: the key's del")
		for _, s := range []string{"c2's acquire on lock:0", "100.5 ms to 1049.5 ms", "949.0 ms net", "bound 500.0 ms"} {
			if !strings.Contains(f.Witness, s) {
				t.Errorf("witness lacks %q: %s", s, f.Witness)
			}
		}
		expect(t, r.Verdict, Safe, "verdict: a wait past the bound is a finding, not the verdict")
	}},
	{name: "needless-wait-polling", opts: waitOpts, hist: func() history.History { return waitHistory(130, 0) }, check: func(t *testing.T, r Result) {
		expect(t, r.Finding(history.KindNeedlessWait), (*Finding)(nil), "finding")
	}},
	{name: "needless-wait-stalled", opts: waitOpts, hist: func() history.History { return waitHistory(1050, 600) }, check: func(t *testing.T, r Result) {
		expect(t, r.Finding(history.KindNeedlessWait), (*Finding)(nil), "finding: 349 ms net of the stall")
	}},
	// A latency fault on c2's links from 60 to 700 ms: its tries may all
	// have timed out on the fault without a key event, so that time is not
	// counted (349 ms net); the same wait with the fault healed at 110 ms
	// is still a finding (939.5 ms net).
	{name: "needless-wait-faulted", opts: waitOpts, hist: func() history.History { return withFault(waitHistory(1050, 0), 2, 60, 700) }, check: func(t *testing.T, r Result) {
		expect(t, r.Finding(history.KindNeedlessWait), (*Finding)(nil), "finding: 349 ms net of the fault on c2's links")
	}},
	{name: "needless-wait-fault-healed", opts: waitOpts, hist: func() history.History { return withFault(waitHistory(1050, 0), 2, 60, 110) }, check: func(t *testing.T, r Result) {
		if r.Finding(history.KindNeedlessWait) == nil {
			t.Fatalf("no needless-wait finding: %+v", r.Findings)
		}
	}},
	{name: "lockstep", opts: lockstepOpts, hist: func() history.History { return lockstepHistory([]float64{1, 2, 1, 3}) }, check: func(t *testing.T, r Result) {
		f := r.Finding(history.KindLockstepRetries)
		if f == nil {
			t.Fatalf("no lockstep-retries finding: %+v", r.Findings)
		}
		expect(t, f.Count, 1, "count")
		expect(t, f.FirstNs, msT(10), "first")
		for _, s := range []string{"2 contenders' tries on lock:0", "3 nodes", "4 rounds in a row", "from 10.0 ms to 1510.0 ms", "within 4.0 ms"} {
			if !strings.Contains(f.Witness, s) {
				t.Errorf("witness lacks %q: %s", s, f.Witness)
			}
		}
		expect(t, r.Verdict, Safe, "verdict")
	}},
	{name: "lockstep-stray", opts: lockstepOpts, hist: func() history.History { return lockstepStrayHistory([]float64{1, 2, 1, 3}) }, check: func(t *testing.T, r Result) {
		expect(t, r.Finding(history.KindLockstepRetries), (*Finding)(nil), "finding: x3's key on n3 splits every round")
	}},
	{name: "lockstep-jittered", opts: lockstepOpts, hist: func() history.History { return lockstepHistory([]float64{1, 120, 2, 200}) }, check: func(t *testing.T, r Result) {
		expect(t, r.Finding(history.KindLockstepRetries), (*Finding)(nil), "finding")
	}},
}

func init() { goldens = append(goldens, waitGoldens...) }

// withFault is h with a latency fault (id 1) on client's links from from
// to to ms.
func withFault(h history.History, client int, from, to float64) history.History {
	b := &builder{}
	b.h = append(b.h, h...)
	tg := &history.FaultTargets{Links: []string{"h2>n1"}, Clients: []int{client}}
	b.add(from, history.Ok, history.NemesisProcess, -1, history.FStart, "", func(o *history.Op) { o.Value, o.N, o.Targets = "latency hosts=[h2]", 1, tg })
	b.add(to, history.Ok, history.NemesisProcess, -1, history.FStop, "", func(o *history.Op) { o.Value, o.N = "latency hosts=[h2]", 1 })
	return b.sorted()
}

// withoutKeyEvents is h with its key events on another key than its
// operations': a lock whose key the observers do not see.
func withoutKeyEvents(h history.History) history.History {
	out := append(history.History(nil), h...)
	for i := range out {
		if out[i].F == history.FServer {
			out[i].Key = "lock:9"
		}
	}
	return out
}

// TestWaitBoundsOff: the same histories without the scenario's bounds are
// not judged.
func TestWaitBoundsOff(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    history.History
		opts history.Options
	}{
		{"needless wait, no wait bound", waitHistory(1050, 0), history.Options{}},
		{"needless wait, no key events", withoutKeyEvents(waitHistory(1050, 0)), waitOpts},
		{"lockstep, no window", lockstepHistory([]float64{1, 2, 1, 3}), history.Options{Quorum: true, LockstepRounds: 3}},
		{"lockstep, single instance", lockstepHistory([]float64{1, 2, 1, 3}), history.Options{LockstepWithin: 20 * time.Millisecond, LockstepRounds: 3}},
		{"lockstep, more rounds than shown", lockstepHistory([]float64{1, 2, 1, 3}), history.Options{Quorum: true, LockstepWithin: 20 * time.Millisecond, LockstepRounds: 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Check(tc.h, tc.opts)
			for _, k := range []history.Kind{history.KindNeedlessWait, history.KindLockstepRetries} {
				if f := r.Finding(k); f != nil {
					t.Errorf("%s: %s", k, f.Witness)
				}
			}
		})
	}
}
