package checker

import (
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// syncAll ends every node's stream in b with a sync: PING sent at sent ms,
// its reply received at at ms.
func syncAll(b *builder, sent, at float64) {
	seen := map[string]bool{}
	for _, op := range b.h {
		if op.Process == history.ServerProcess && !seen[op.Node] {
			seen[op.Node] = true
			b.add(at, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = op.Node, msT(sent) })
		}
	}
}

func TestFalseSuccess(t *testing.T) {
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	for _, tc := range []struct {
		name string
		hist func(b *builder)
		want int
		text string
		// noSync leaves the observers without a sync after the releases
		// (every other case ends with one per node, as a run does).
		noSync   bool
		unjudged int
		opts     history.Options
	}{
		{
			name: "release ok after the key expired and was re-taken",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 320, "expired", "")
				b.op(325, 330, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
				srv(b, 330.2, "set", "t2")
				b.op(340.1, 341, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 341.5, "del", "")
				b.op(400, 401, history.Ok, 2, 2, history.FRelease, k0, tok("t2")) // c1's DEL freed it: false too
			},
			want: 2,
			text: "false success: c1's release of lock:0 at 340.1 ms reported ok, but lock:0 had expired at 320.0 ms (n1) and been set by c2 at 330.2 ms",
		},
		{
			// Seen on del-race-random × getset: two clients stamped the same
			// millisecond; c1's DEL is received before c2's own set event
			// (the observer lags the client), and the earlier set with the
			// same value is c1's, not c2's.
			name: "the same value granted twice says nothing about whose the key is",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("1795"))
				srv(b, 1.5, "set", "1795")
				b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0, tok("1795"))
				srv(b, 2.4, "del", "")
				b.op(2.45, 2.5, history.Ok, 2, 2, history.FAcquire, k0, tok("1795"))
				b.op(2.6, 5.4, history.Ok, 2, 2, history.FRelease, k0, tok("1795"))
				srv(b, 2.7, "set", "1795")
				srv(b, 5.3, "del", "")
			},
			want: 0,
		},
		{
			name: "a set received before the acquire was invoked is not the releaser's",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 4, "expired", "")
				// c1 acquires again with a fresh token; its own set event is
				// received only after its release is invoked.
				b.op(5, 6, history.Ok, 1, 1, history.FAcquire, k0, tok("t9"))
				b.op(6.5, 8, history.Ok, 1, 1, history.FRelease, k0, tok("t9"))
				srv(b, 6.8, "set", "t9")
			},
			want:     0,
			unjudged: 1, // its own set arrived late: the observer was behind
		},
		{
			// Seen on contention × redsync-5: a failed try set n3 and
			// released it; the winning try (same value) set a majority,
			// whose events the observer did not tie to the value.
			name: "a multi-node lock seen on fewer than a majority proves nothing",
			hist: func(b *builder) {
				node := func(at float64, n, ev, owner string) {
					b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, n, owner })
				}
				b.op(0, 20, history.Ok, 1, 1, history.FAcquire, k0, tok("v"))
				node(1, "n3", "set", "v")
				node(2, "n3", "del", "")
				node(10, "n1", "set", "")
				node(10, "n2", "set", "")
				node(10, "n4", "set", "")
				node(11, "n5", "set", "")
				b.op(30, 31, history.Ok, 1, 1, history.FRelease, k0, tok("v"))
			},
			want:     0,
			unjudged: 1, // owners unread: maybe the releaser's
		},
		{
			name: "a release of a lock still its own is fine",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 2, "expire", "")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 10.5, "del", "")
			},
			want: 0,
		},
		{
			name: "an end received after the invoke proves nothing",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 10.2, "expired", "")
			},
			want: 0,
		},
		{
			// Whole-second stamps (seed 003): two holders in one second
			// write the same value; c2's own set reaches the observer only
			// after its release was invoked. c1's set and del say nothing
			// about c2's hold.
			name: "a repeated token's earlier set was another acquisition's",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("1700"))
				srv(b, 0.8, "set", "1700")
				b.op(5, 6, history.Ok, 1, 1, history.FRelease, k0, tok("1700"))
				srv(b, 5.5, "del", "")
				b.op(7, 8, history.Ok, 2, 2, history.FAcquire, k0, tok("1700"))
				b.op(9, 10, history.Ok, 2, 2, history.FRelease, k0, tok("1700"))
				srv(b, 9.3, "set", "1700")
				srv(b, 10.1, "del", "")
			},
			want: 0,
		},
		{
			name: "a set whose owner is unknown may be the releaser's",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 3, "del", "")
				srv(b, 5, "set", "")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
			},
			want:     0,
			unjudged: 1,
		},
		{
			// Whoever set it, the key was gone before the release began and
			// nothing set it again before the release ended.
			name: "a key gone before the release, set by an owner not read",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "")
				srv(b, 5, "expired", "")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
			},
			want: 1,
			text: "lock:0 had expired at 5.0 ms (n1)",
		},
		{
			name: "overwritten by a loser's GETSET: it took the lock from no one",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(3, 4, history.Fail, 2, 2, history.FAcquire, k0)
				srv(b, 3.5, "set", "t2")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
			},
			want: 0,
		},
		{
			name: "taken over by another holder (GETSET winner) before the release",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(3, 4, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
				srv(b, 3.5, "set", "t2")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
			},
			want: 1,
			text: "had been set by c2 at 3.5 ms (n1)",
		},
		{
			// Seen on contention × redsync-5 (issue 17): the acquire's failed
			// tries set its value on n4, n5 and n2 and the library deleted
			// them; the winning try's sets (same value) reached the harness
			// 1-4 ms after the release was invoked. The last set received
			// before the invoke was a failed try's, followed by its cleanup:
			// that proves nothing, the later sets may have come first.
			name: "a multi-node lock whose winning sets arrive after the release was invoked",
			hist: func(b *builder) {
				node := func(at float64, n, ev, owner string) {
					b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, n, owner })
				}
				b.op(3000, 3030, history.Ok, 8, 8, history.FAcquire, k0, tok("w"))
				for _, n := range []string{"n1", "n2", "n3"} {
					node(3001, n, "set", "w")
				}
				b.op(3040, 3045, history.Ok, 8, 8, history.FRelease, k0, tok("w"))
				for _, n := range []string{"n1", "n2", "n3"} {
					node(3044, n, "del", "")
				}
				b.op(3170, 3658.5, history.Ok, 0, 0, history.FAcquire, k0, tok("v"))
				node(3200, "n4", "set", "v")
				node(3201, "n4", "del", "")
				node(3206, "n5", "set", "v")
				node(3207.2, "n5", "del", "")
				node(3300, "n2", "set", "v")
				node(3301, "n2", "del", "")
				b.op(3659.2, 3661, history.Ok, 0, 0, history.FRelease, k0, tok("v"))
				node(3660.5, "n5", "set", "v")
				node(3660.7, "n4", "set", "v")
				node(3663.2, "n1", "set", "v")
				for _, n := range []string{"n1", "n4", "n5"} {
					node(3664, n, "del", "")
				}
			},
			want:     0,
			unjudged: 1,
		},
		{
			name: "an observer behind: the release is not judged",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 320, "expired", "")
				b.op(340.1, 341, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				// The only sync was sent before the release completed.
				b.add(345, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(340.5) })
			},
			noSync:   true,
			unjudged: 1,
		},
		{
			name: "a sync sent after the release bounds the window",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 320, "expired", "")
				b.op(340.1, 341, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				b.add(345, history.Ok, history.ServerProcess, -1, history.FSync, "", func(o *history.Op) { o.Node, o.N = "n1", msT(341.5) })
				// A later acquisition with the same token (a reentrant
				// lock's per-client owner) set it again after the sync.
				b.op(400, 401, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 400.5, "set", "t1")
			},
			noSync: true,
			want:   1,
			text:   "lock:0 had expired at 320.0 ms (n1)",
		},
		{
			// Seen on del-race-random × getset under load: c1's earlier
			// stamp "123" was granted; a loser computed the same stamp in
			// the same millisecond and wrote it (GETSET) after c1's new SETNX
			// of "131". The value names no writer.
			name: "stamp tokens: a loser's write of an earlier holder's stamp takes nothing",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("123"))
				srv(b, 1.2, "set", "123")
				b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0, tok("123"))
				srv(b, 2.5, "del", "")
				b.op(4, 5, history.Ok, 1, 1, history.FAcquire, k0, tok("131"))
				srv(b, 4.5, "set", "131")
				srv(b, 4.8, "set", "123") // the loser's GETSET
				b.op(9, 10, history.Ok, 1, 1, history.FRelease, k0, tok("131"))
				srv(b, 9.5, "del", "")
			},
			opts: history.Options{StampTokens: true},
			want: 0,
		},
		{
			name: "stamp tokens: the key's end still proves it",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("123"))
				srv(b, 1.2, "set", "123")
				srv(b, 3, "del", "") // someone's unconditional DEL
				b.op(4, 5, history.Ok, 2, 2, history.FAcquire, k0, tok("131"))
				srv(b, 4.5, "set", "131")
				b.op(9, 10, history.Ok, 1, 1, history.FRelease, k0, tok("123"))
			},
			opts: history.Options{StampTokens: true},
			want: 1,
			text: "lock:0 had been deleted at 3.0 ms (n1)",
		},
		{
			name: "the release's own delete after a set it met: still its own",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				b.op(2, 3, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 2.5, "del", "") // the release's own, received in its window
			},
			want: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			tc.hist(&b)
			if !tc.noSync {
				syncAll(&b, 999, 1000)
			}
			r := Check(b.sorted(), tc.opts)
			if r.FalseSuccesses != tc.want {
				t.Fatalf("false successes %d, want %d (%s)", r.FalseSuccesses, tc.want, r.FalseSuccess)
			}
			if r.FalseSuccessUnjudged != tc.unjudged {
				t.Errorf("not judged %d, want %d (%s)", r.FalseSuccessUnjudged, tc.unjudged, r.FalseSuccessUnjudgedWhy)
			}
			if tc.want > 0 {
				if f := r.Finding(history.KindReleaseFalseSuccess); f == nil || f.Count != tc.want || !strings.Contains(f.Witness, "false success") {
					t.Errorf("finding %+v, want %d release false successes", f, tc.want)
				}
				if !strings.Contains(r.FalseSuccess, tc.text) {
					t.Errorf("text %q lacks %q", r.FalseSuccess, tc.text)
				}
			}
		})
	}
}

// TestFalseSuccessOnlyThroughStalls: a release that met someone else's key
// only because the harness stalled in its hold proves nothing about the
// lock (as an overlap that goes away without the stalls does not): moved
// earlier by the stalls, c1's release meets its own key.
func TestFalseSuccessOnlyThroughStalls(t *testing.T) {
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	for _, tc := range []struct {
		name    string
		stall   [2]float64 // end, length (ms); zero: none
		verdict string
		without int
	}{
		{"no stall: unsafe", [2]float64{}, Unsafe, 1},
		{"a 290 ms stall in c1's hold: inconclusive", [2]float64{330, 290}, Inconclusive, 0},
		// The overlap (10 ms) goes away without the stall, the false
		// success does not: a finding on its own, the run inconclusive.
		{"a 20 ms stall: still false without it", [2]float64{60, 20}, Inconclusive, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
			srv(&b, 1.5, "set", "t1")
			srv(&b, 320, "expired", "")
			b.op(325, 330, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
			srv(&b, 330.2, "set", "t2")
			b.op(340.1, 341, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
			srv(&b, 341.5, "del", "")
			if tc.stall[1] > 0 {
				b.add(tc.stall[0], history.Ok, history.NemesisProcess, -1, history.FStall, "", func(o *history.Op) { o.N = msT(tc.stall[1]) })
			}
			syncAll(&b, 999, 1000)
			r := Check(b.sorted(), history.Options{})
			if r.FalseSuccesses != 1 || r.FalseSuccessesWithoutStalls != tc.without {
				t.Errorf("false successes %d, %d without the stalls; want 1, %d", r.FalseSuccesses, r.FalseSuccessesWithoutStalls, tc.without)
			}
			if r.Verdict != tc.verdict {
				t.Errorf("verdict %s: %s", r.Verdict, r.Reason)
			}
			if tc.verdict == Inconclusive && !strings.Contains(r.Reason, "releases acknowledged on a lock no longer theirs") {
				t.Errorf("reason %q", r.Reason)
			}
			if n := findingCount(r, history.KindReleaseFalseSuccess); n != tc.without {
				t.Errorf("release false success findings %d, want %d (those the stalls do not explain)", n, tc.without)
			}
		})
	}
}

// findingCount is the count of r's finding of kind k (0: none).
func findingCount(r Result, k history.Kind) int {
	if f := r.Finding(k); f != nil {
		return f.Count
	}
	return 0
}
