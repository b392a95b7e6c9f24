package checker

import (
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// ext records one extend (or renewal) of client c, numbered id, from t1 to
// t2, as the runner does: invoke and completion share N; it need not be the
// process's operation in flight (a watchdog renews beside it).
func ext(b *builder, t1, t2 float64, typ history.Type, c int, id int64, token string) {
	b.add(t1, history.Invoke, c, c, history.FExtend, k0, func(o *history.Op) { o.Value, o.N = token, id })
	b.add(t2, typ, c, c, history.FExtend, k0, func(o *history.Op) { o.N = id })
}

func TestExtendFalseSuccess(t *testing.T) {
	srv := func(b *builder, at float64, ev, owner string) {
		b.add(at, history.Ok, history.ServerProcess, -1, history.FServer, k0, func(o *history.Op) { o.Value, o.Node, o.Owner = ev, "n1", owner })
	}
	tok := func(s string) func(*history.Op) { return func(o *history.Op) { o.Value = s } }
	for _, tc := range []struct {
		name          string
		hist          func(b *builder)
		want, foreign int
		text          string
		extends, ok   int
	}{
		{
			name: "an extend of a lock still its own is fine",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				ext(b, 5, 6, history.Ok, 1, 1, "t1")
				srv(b, 5.5, "expire", "")
				b.op(10, 11, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 10.5, "del", "")
			},
			extends: 1, ok: 1,
		},
		{
			name: "an extend ok after the key expired: a false success on extend",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				ext(b, 310, 311, history.Ok, 1, 1, "t1")
			},
			want: 1, extends: 1, ok: 1,
			text: "false success: c1's extend of lock:0 at 310.0 ms reported ok, but lock:0 had expired at 300.0 ms (n1)",
		},
		{
			// Redisson #597: the watchdog renewed a lock that had expired
			// and been taken by another client.
			name: "a renewal ok on another holder's key: a foreign renewal",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				b.op(301, 302, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
				srv(b, 301.5, "set", "t2")
				ext(b, 310, 311, history.Ok, 1, 1, "t1")
				srv(b, 310.5, "expire", "") // the renewal's PEXPIRE, on c2's key
			},
			want: 1, foreign: 1, extends: 1, ok: 1,
			text: "foreign renewal: c1's extend of lock:0 at 310.0 ms reported ok, but throughout it lock:0 was c2's (set at 301.5 ms on n1)",
		},
		{
			name: "a key another's at the start but gone inside the window: false, not foreign",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				b.op(301, 302, history.Ok, 2, 2, history.FAcquire, k0, tok("t2"))
				srv(b, 301.5, "set", "t2")
				ext(b, 310, 315, history.Ok, 1, 1, "t1")
				srv(b, 312, "del", "")
			},
			want: 1, extends: 1, ok: 1,
			text: "false success: c1's extend",
		},
		{
			// RedLock.net (catalogue 25): the extend script SETs a missing
			// key, so a renewal after the lease lapsed re-takes the lock
			// and reports ok; its own set lies inside its window.
			name: "an extend that re-created its lapsed key: a false success on extend",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				ext(b, 310, 311, history.Ok, 1, 1, "t1")
				srv(b, 310.5, "set", "t1")
			},
			want: 1, extends: 1, ok: 1,
			text: "false success: c1's extend of lock:0 at 310.0 ms reported ok, but lock:0 had expired at 300.0 ms (n1)",
		},
		{
			// The same set, when the key's last state before the extend
			// was set by someone the observer could not read: maybe the
			// extender's, so nothing certain lapsed.
			name: "a re-set after an unread set: not judged",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				srv(b, 305, "set", "")
				ext(b, 310, 311, history.Ok, 1, 1, "t1")
				srv(b, 310.5, "set", "t1")
			},
			extends: 1, ok: 1,
		},
		{
			name: "a refused extend is no false success",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				srv(b, 300, "expired", "")
				ext(b, 310, 311, history.Fail, 1, 1, "t1")
				ext(b, 320, 321, history.Info, 1, 2, "t1")
			},
			extends: 2,
		},
		{
			// A watchdog's renewal runs while its client writes: the two
			// operations overlap in one process, and neither is malformed.
			name: "a renewal beside the client's own operation",
			hist: func(b *builder) {
				b.op(0, 1, history.Ok, 1, 1, history.FAcquire, k0, tok("t1"))
				srv(b, 0.5, "set", "t1")
				b.add(2, history.Invoke, 1, 1, history.FWrite, k0, n(1))
				ext(b, 2.2, 2.6, history.Ok, 1, 7, "t1")
				srv(b, 2.4, "expire", "")
				b.add(3, history.Ok, 1, 1, history.FWrite, k0, n(1))
				b.op(4, 5, history.Ok, 1, 1, history.FRelease, k0, tok("t1"))
				srv(b, 4.5, "del", "")
			},
			extends: 1, ok: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b builder
			tc.hist(&b)
			syncAll(&b, 999, 1000)
			r := Check(b.sorted(), history.Options{})
			if r.Malformed != 0 {
				t.Fatalf("malformed %d: %v", r.Malformed, r.Problems)
			}
			if r.FalseSuccesses != tc.want || r.ExtendFalseSuccesses != tc.want || r.ForeignRenewals != tc.foreign {
				t.Fatalf("false successes %d (extends %d), foreign %d; want %d, %d (%s)",
					r.FalseSuccesses, r.ExtendFalseSuccesses, r.ForeignRenewals, tc.want, tc.foreign, r.FalseSuccess)
			}
			if r.Extends != tc.extends || r.ExtendsOK != tc.ok {
				t.Errorf("extends %d ok %d, want %d %d", r.Extends, r.ExtendsOK, tc.extends, tc.ok)
			}
			if tc.want > 0 {
				if n := findingCount(r, history.KindExtendFalseSuccess); n != tc.want {
					t.Errorf("extend false success findings %d, want %d (%+v)", n, tc.want, r.Findings)
				}
				if !strings.Contains(r.FalseSuccess, tc.text) {
					t.Errorf("text %q lacks %q", r.FalseSuccess, tc.text)
				}
			}
		})
	}
}
