package checker

import (
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

func TestLeaks(t *testing.T) {
	srvOn := func(node string) func(b *builder, at float64, ev, owner string) {
		return func(b *builder, at float64, ev, owner string) {
			b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, node, owner })
		}
	}
	srv := srvOn("n1")
	sync := func(b *builder, node string, sent, at float64) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = node, msT(sent) })
	}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	held := func(b *builder) { // c1 holds t1 from 1 ms
		b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
		srv(b, 1.5, "set", "t1")
	}
	for _, tc := range []struct {
		name string
		hist func(b *builder)
		opts history.Options
		want map[history.Kind]int
	}{
		{
			name: "a release acknowledged ok whose key stood across it",
			hist: func(b *builder) {
				held(b)
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				sync(b, "n1", 12, 12.5)
			},
			want: map[history.Kind]int{history.KindReleaseNotFreed: 1},
		},
		{
			name: "a release that deleted its key",
			hist: func(b *builder) {
				held(b)
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 10.6, "del", "")
				sync(b, "n1", 12, 12.5)
			},
		},
		{
			name: "no sync sent after the release completed: not judged",
			hist: func(b *builder) {
				held(b)
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				sync(b, "n1", 10.5, 11.5)
			},
		},
		{
			name: "the master freed it, a lagging replica had not yet: not judged on the replica alone",
			hist: func(b *builder) {
				held(b)
				srvOn("n2")(b, 1.7, "set", "t1")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 10.6, "del", "")
				sync(b, "n1", 12, 12.5)
				sync(b, "n2", 12, 12.4)
				srvOn("n2")(b, 12.6, "del", "")
			},
		},
		{
			// cluster-reshard in CI: the replica's set reached its observer
			// before the release's invoke, the master's only after it; the
			// master freed the key, the replica's del came after the sync.
			name: "the master's set received after the release began, a lagging replica: not judged on the replica alone",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srvOn("n2")(b, 1.5, "set", "t1")
				b.op(2, 8, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 2.3, "set", "t1")
				srv(b, 6.6, "del", "")
				sync(b, "n1", 9, 9.5)
				sync(b, "n2", 9, 9.4)
				srvOn("n2")(b, 9.6, "del", "")
			},
		},
		{
			name: "quorum: the key stood on a majority",
			opts: history.Options{Quorum: true},
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				for _, n := range []string{"n1", "n2", "n3"} {
					srvOn(n)(b, 0.5, "set", "t1")
				}
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srvOn("n1")(b, 10.5, "del", "")
				for _, n := range []string{"n1", "n2", "n3"} {
					sync(b, n, 12, 12.5)
				}
			},
			want: map[history.Kind]int{history.KindReleaseNotFreed: 1},
		},
		{
			name: "an acquire that failed while its set landed and stayed",
			hist: func(b *builder) {
				held(b)
				b.op(3, 4, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 3.5, "del", "")
				b.op(5, 8, history.Fail, 2, 2, history.FAcquire, k0)
				srv(b, 6, "set", "tX")
				sync(b, "n1", 9, 9.5)
			},
			want: map[history.Kind]int{history.KindLostAcquire: 1},
		},
		{
			name: "the same with an unknown outcome",
			hist: func(b *builder) {
				b.op(5, 8, history.Info, 2, 2, history.FAcquire, k0)
				srv(b, 6, "set", "tX")
				sync(b, "n1", 9, 9.5)
			},
			want: map[history.Kind]int{history.KindLostAcquireUnknown: 1},
		},
		{
			name: "other acquires in flight: the set is not certainly the failed one's",
			hist: func(b *builder) {
				b.op(5, 8, history.Fail, 2, 2, history.FAcquire, k0)
				b.op(4, 500, history.Fail, 3, 3, history.FAcquire, k0)
				srv(b, 6, "set", "tX")
				sync(b, "n1", 9, 9.5)
				srv(b, 300, "expired", "")
				sync(b, "n1", 600, 600.5)
			},
		},
		{
			name: "the same, when the failed acquire named the token it tried",
			hist: func(b *builder) {
				b.add(5, history.Invoke, 2, 2, history.FAcquire, k0)
				b.add(8, history.Fail, 2, 2, history.FAcquire, k0, tok("tX"))
				b.op(4, 500, history.Fail, 3, 3, history.FAcquire, k0)
				srv(b, 6, "set", "tX")
				sync(b, "n1", 9, 9.5)
				srv(b, 300, "expired", "")
				sync(b, "n1", 600, 600.5)
			},
			want: map[history.Kind]int{history.KindLostAcquire: 1},
		},
		{
			name: "a failed acquire that cleaned up its set",
			hist: func(b *builder) {
				b.op(5, 8, history.Fail, 2, 2, history.FAcquire, k0)
				srv(b, 6, "set", "tX")
				srv(b, 7, "del", "")
				sync(b, "n1", 9, 9.5)
			},
		},
		{
			name: "a set sent before the failed acquire began is not its",
			hist: func(b *builder) {
				srv(b, 4, "set", "tX")
				b.op(5, 8, history.Fail, 2, 2, history.FAcquire, k0)
				sync(b, "n1", 9, 9.5)
			},
		},
		{
			name: "a key that outlived its released holder past the bound",
			opts: history.Options{OrphanBound: 100 * time.Millisecond},
			hist: func(b *builder) {
				held(b)
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				sync(b, "n1", 12, 12.5)
				sync(b, "n1", 150, 150.5)
			},
			want: map[history.Kind]int{history.KindReleaseNotFreed: 1, history.KindOrphanedKey: 1},
		},
		{
			name: "a crashed holder's key expired within the bound",
			opts: history.Options{OrphanBound: 100 * time.Millisecond},
			hist: func(b *builder) {
				held(b)
				b.add(10, history.Ok, 1, 1, history.FCrash, "")
				sync(b, "n1", 50, 50.5)
				srv(b, 90, "expired", "")
				sync(b, "n1", 150, 150.5)
			},
		},
		{
			name: "a crashed holder's key that never expired",
			opts: history.Options{OrphanBound: 100 * time.Millisecond},
			hist: func(b *builder) {
				held(b)
				b.add(10, history.Ok, 1, 1, history.FCrash, "")
				sync(b, "n1", 150, 150.5)
			},
			want: map[history.Kind]int{history.KindOrphanedKey: 1},
		},
		{
			name: "stamp tokens name no writer: nothing judged",
			opts: history.Options{StampTokens: true, OrphanBound: 100 * time.Millisecond},
			hist: func(b *builder) {
				held(b)
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				sync(b, "n1", 150, 150.5)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &builder{}
			tc.hist(b)
			res := Check(b.sorted(), tc.opts)
			got := map[history.Kind]int{}
			for _, f := range res.Findings {
				switch f.Kind {
				case history.KindReleaseNotFreed, history.KindLostAcquire, history.KindLostAcquireUnknown, history.KindOrphanedKey:
					got[f.Kind] = f.Count
					if f.Witness == "" || f.FirstNs < 0 {
						t.Errorf("%s: no witness or time: %+v", f.Kind, f)
					}
				}
			}
			for _, k := range history.Kinds {
				if got[k] != tc.want[k] {
					t.Errorf("%s: %d, want %d (findings %+v)", k, got[k], tc.want[k], res.Findings)
				}
			}
		})
	}
}

// TestPermit: a kind the permissions do not name is not permitted; no
// permissions at all judge nothing per kind.
func TestPermit(t *testing.T) {
	r := Result{Findings: []Finding{{Kind: history.KindTwoHolders, Count: 1}, {Kind: history.KindReleaseFalseSuccess, Count: 2}}}
	r.Permit([]history.Permission{{Kind: history.KindTwoHolders, Permitted: true, Why: "expected"}})
	if u := r.Unpermitted(); len(u) != 1 || u[0].Kind != history.KindReleaseFalseSuccess {
		t.Errorf("unpermitted %+v, want the false success alone", u)
	}
	r.Permit(nil)
	if u := r.Unpermitted(); len(u) != 0 {
		t.Errorf("without permissions: unpermitted %+v, want none", u)
	}
}

// TestLateReleaseOrderedByItsCall: a release whose invoke (the end of the
// critical section) came before the key expired, but whose call the runner
// held at its failpoint until after another client took the key, is judged
// from when its call began (the completion's N): a release acknowledged ok
// then is a false success. Judged from its invoke, the expiry could not be
// ordered before it and nothing was found.
func TestLateReleaseOrderedByItsCall(t *testing.T) {
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	for _, began := range []float64{0, 900} {
		b := &builder{}
		b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
		srv(b, 1.5, "set", "t1")
		b.add(100, history.Invoke, 1, 1, history.FRelease, k0, tok("t1"))
		srv(b, 300, "expired", "")
		b.op(500, 501, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
		srv(b, 500.5, "set", "t2")
		b.add(905, history.Ok, 1, 1, history.FRelease, k0, func(o *history.Op) { o.N = msT(began) })
		srv(b, 904, "del", "")
		b.add(910, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(906) })
		res := Check(b.sorted(), history.Options{})
		found := res.Finding(history.KindReleaseFalseSuccess) != nil
		if want := began > 0; found != want {
			t.Errorf("call began at %v ms: false success found %v, want %v (%+v)", began, found, want, res.Findings)
		}
	}
}
