package checker

import (
	"strings"
	"testing"
)

func TestFalseSuccess(t *testing.T) {
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, Ok, ServerProcess, -1, FServer, k0, func(o *Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	tok := func(s string) func(*Op) { return func(o *Op) { o.Value = s } }
	for _, tc := range []struct {
		name string
		hist func(b *builder)
		want int
		text string
	}{
		{
			name: "release ok after the key expired and was re-taken",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 320, "expired", "")
				b.op(325, 330, Ok, 2, 2, FAcquire, k0, tok("t2"))
				srv(b, 330.2, "set", "t2")
				b.op(340.1, 341, Ok, 1, 1, FRelease, k0, tok("t1"))
				srv(b, 341.5, "del", "")
				b.op(400, 401, Ok, 2, 2, FRelease, k0, tok("t2")) // c1's DEL freed it: false too
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
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("1795"))
				srv(b, 1.5, "set", "1795")
				b.op(2, 3, Ok, 1, 1, FRelease, k0, tok("1795"))
				srv(b, 2.4, "del", "")
				b.op(2.45, 2.5, Ok, 2, 2, FAcquire, k0, tok("1795"))
				b.op(2.6, 5.4, Ok, 2, 2, FRelease, k0, tok("1795"))
				srv(b, 2.7, "set", "1795")
				srv(b, 5.3, "del", "")
			},
			want: 0,
		},
		{
			name: "a set received before the acquire was invoked is not the releaser's",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 4, "expired", "")
				// c1 acquires again with a fresh token; its own set event is
				// received only after its release is invoked.
				b.op(5, 6, Ok, 1, 1, FAcquire, k0, tok("t9"))
				b.op(6.5, 8, Ok, 1, 1, FRelease, k0, tok("t9"))
				srv(b, 6.8, "set", "t9")
			},
			want: 0,
		},
		{
			// Seen on contention × redsync-5: a failed try set n3 and
			// released it; the winning try (same value) set a majority,
			// whose events the observer did not tie to the value.
			name: "a multi-node lock seen on fewer than a majority proves nothing",
			hist: func(b *builder) {
				node := func(at float64, n, ev, owner string) {
					b.add(at, Ok, ServerProcess, -1, FServer, k0, func(o *Op) { o.Value, o.Node, o.Owner = ev, n, owner })
				}
				b.op(0, 20, Ok, 1, 1, FAcquire, k0, tok("v"))
				node(1, "n3", "set", "v")
				node(2, "n3", "del", "")
				node(10, "n1", "set", "")
				node(10, "n2", "set", "")
				node(10, "n4", "set", "")
				node(11, "n5", "set", "")
				b.op(30, 31, Ok, 1, 1, FRelease, k0, tok("v"))
			},
			want: 0,
		},
		{
			name: "a release of a lock still its own is fine",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				srv(b, 2, "expire", "")
				b.op(10, 11, Ok, 1, 1, FRelease, k0, tok("t1"))
				srv(b, 10.5, "del", "")
			},
			want: 0,
		},
		{
			name: "an end received after the invoke proves nothing",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(10, 11, Ok, 1, 1, FRelease, k0, tok("t1"))
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
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("1700"))
				srv(b, 0.8, "set", "1700")
				b.op(5, 6, Ok, 1, 1, FRelease, k0, tok("1700"))
				srv(b, 5.5, "del", "")
				b.op(7, 8, Ok, 2, 2, FAcquire, k0, tok("1700"))
				b.op(9, 10, Ok, 2, 2, FRelease, k0, tok("1700"))
				srv(b, 9.3, "set", "1700")
				srv(b, 10.1, "del", "")
			},
			want: 0,
		},
		{
			name: "a set whose owner is unknown is never used",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "")
				srv(b, 5, "expired", "")
				b.op(10, 11, Ok, 1, 1, FRelease, k0, tok("t1"))
			},
			want: 0,
		},
		{
			name: "overwritten by a loser's GETSET: it took the lock from no one",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(3, 4, Fail, 2, 2, FAcquire, k0)
				srv(b, 3.5, "set", "t2")
				b.op(10, 11, Ok, 1, 1, FRelease, k0, tok("t1"))
			},
			want: 0,
		},
		{
			name: "taken over by another holder (GETSET winner) before the release",
			hist: func(b *builder) {
				b.op(0, 1, Ok, 1, 1, FAcquire, k0, tok("t1"))
				srv(b, 1.5, "set", "t1")
				b.op(3, 4, Ok, 2, 2, FAcquire, k0, tok("t2"))
				srv(b, 3.5, "set", "t2")
				b.op(10, 11, Ok, 1, 1, FRelease, k0, tok("t1"))
			},
			want: 1,
			text: "had been set by c2 at 3.5 ms (n1)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			tc.hist(&b)
			r := Check(b.sorted(), Options{})
			if r.FalseSuccesses != tc.want {
				t.Fatalf("false successes %d, want %d (%s)", r.FalseSuccesses, tc.want, r.FalseSuccess)
			}
			if tc.want > 0 {
				if r.Verdict != Unsafe || !strings.Contains(r.Reason, "false success") {
					t.Errorf("verdict %s: %s", r.Verdict, r.Reason)
				}
				if !strings.Contains(r.FalseSuccess, tc.text) {
					t.Errorf("text %q lacks %q", r.FalseSuccess, tc.text)
				}
			}
		})
	}
}
