package lockimpl_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// acquireBoth runs two acquires at once and returns their results.
func acquireBoth(ctx context.Context, a, b lockimpl.Locker, key string) (la, lb *lockimpl.Lease, ea, eb error) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); la, ea = a.Acquire(ctx, key) }()
	go func() { defer wg.Done(); lb, eb = b.Acquire(ctx, key) }()
	wg.Wait()
	return
}

// Seed 000: the unlock script deletes only an already-expired key, so a
// released live lock stays and the next client waits out the TTL.
func TestLuaGetsetUnlockLeavesLiveLock(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: time.Second, RetryDelay: 20 * time.Millisecond}
	c1, _ := r.locker(1, "lua-getset", o)
	c2, _ := r.locker(2, "lua-getset", o)
	raw := r.conn(0)

	l := mustAcquire(t, ctx, c1, "k")
	if ttl := raw.TTL(ctx, "k").Val(); ttl != 2*time.Second {
		t.Errorf("TTL = %v, want LOCK_EXPIRE+1 = 2s", ttl)
	}
	if err := c1.Release(ctx, l); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := raw.Exists(ctx, "k").Val(); n != 1 {
		t.Fatalf("key gone after unlock of a live lock; want it left in place")
	}
	if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("after unlock: err = %v, want ErrNotAcquired", err)
	}
}

// Seed 001 §五: unlock() DELs without checking, so a holder whose lock
// expired and was taken over frees the new holder's lock (java). Seed 003's
// release checks its own timeout first and leaves it (python).
func TestGetsetReleaseAfterExpiry(t *testing.T) {
	for _, variant := range []string{"java", "python"} {
		t.Run(variant, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 1)
			ctx := testCtx(t)
			o := lockimpl.Options{TTL: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond, WaitTimeout: 100 * time.Millisecond, ReleaseVariant: variant}
			c1, _ := r.locker(1, "getset", o)
			c2, _ := r.locker(2, "getset", o)
			c3, _ := r.locker(3, "getset", o)
			raw := r.conn(0)

			l1 := mustAcquire(t, ctx, c1, "k")
			time.Sleep(250 * time.Millisecond) // c1 overruns its lock
			l2 := mustAcquire(t, ctx, c2, "k")
			err := c1.Release(ctx, l1)
			if variant == "java" {
				if err != nil {
					t.Fatalf("java release: %v, want nil (the DEL succeeded)", err)
				}
				if raw.Exists(ctx, "k").Val() != 0 {
					t.Fatal("java release left the key; want c2's lock deleted")
				}
				// c2 still believes it holds the lock, and c3 takes it too.
				mustAcquire(t, ctx, c3, "k")
				return
			}
			if !errors.Is(err, lockimpl.ErrNotHeld) {
				t.Fatalf("python release: err = %v, want ErrNotHeld", err)
			}
			if v := raw.Get(ctx, "k").Val(); v != l2.Token {
				t.Fatalf("key = %q, want c2's %q untouched", v, l2.Token)
			}
			if _, err := c3.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("c3: err = %v, want ErrNotAcquired", err)
			}
		})
	}
}

// Seed 001 §六 Q1: a crash between SETNX and EXPIRE leaves a key without a
// TTL: the lock never expires.
func TestSetnxExpireCrashLeavesNoTTL(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond, WaitTimeout: 100 * time.Millisecond}
	c1, env1 := r.locker(1, "setnx-expire", o)
	c2, _ := r.locker(2, "setnx-expire", o)
	raw := r.conn(0)

	env1.FP.Attach("setnx-expire/between-setnx-and-expire", lockimpl.Action{Crash: true})
	if _, err := c1.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrCrashed) {
		t.Fatalf("err = %v, want ErrCrashed", err)
	}
	if ttl, err := raw.Do(ctx, "TTL", "k").Int64(); err != nil || ttl != -1 {
		t.Fatalf("TTL = %d (%v), want -1 (key without expiry)", ttl, err)
	}
	time.Sleep(300 * time.Millisecond)
	if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("after the TTL: err = %v, want ErrNotAcquired (deadlock)", err)
	}
}

// Seed 001 §四 / seed 003: C0 holds and dies; C1 and C2 both see its
// timestamp expired; C1 DEL, C1 SETNX → 1, C2 DEL, C2 SETNX → 1: two holders.
func TestSetnxDelRace(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond}
	c0, _ := r.locker(0, "setnx-del", o)
	c1, env1 := r.locker(1, "setnx-del", o)
	c2, env2 := r.locker(2, "setnx-del", o)
	raw := r.conn(0)

	mustAcquire(t, ctx, c0, "k") // C0 dies holding it
	time.Sleep(250 * time.Millisecond)
	// C1 deletes only after C2 has read the expired value; C2 deletes only
	// after C1's second SETNX (the one after its DEL).
	env1.FP.Attach("setnx-del/before-del", lockimpl.Action{WaitFor: "setnx-del/after-get", WaitClient: 2})
	env2.FP.Attach("setnx-del/before-del", lockimpl.Action{WaitFor: "setnx-del/after-setnx", WaitClient: 1, WaitCount: 2})

	l1, l2, e1, e2 := acquireBoth(ctx, c1, c2, "k")
	if e1 != nil || e2 != nil {
		t.Fatalf("acquire: c1 %v, c2 %v; want both to win", e1, e2)
	}
	if v := raw.Get(ctx, "k").Val(); v != l2.Token {
		t.Errorf("key = %q, want c2's %q (c1's %q was deleted)", v, l2.Token, l1.Token)
	}
	if r.hub.Hits(1, "setnx-del/after-del") != 1 || r.hub.Hits(2, "setnx-del/after-del") != 1 {
		t.Errorf("want one DEL from each client")
	}
}

// Seed 001 §四 §六 Q2: C1 and C2 both GET C0's expired value; C1's GETSET
// wins; C2's GETSET loses but overwrites C1's expiry with its own.
func TestGetsetOverwrite(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	c0, _ := r.locker(0, "getset", lockimpl.Options{TTL: 200 * time.Millisecond})
	o := lockimpl.Options{TTL: 5 * time.Second, RetryDelay: 20 * time.Millisecond, WaitTimeout: 200 * time.Millisecond}
	c1, env1 := r.locker(1, "getset", o)
	o.TTL = 6 * time.Second // so the overwrite shows even within one millisecond
	c2, env2 := r.locker(2, "getset", o)
	raw := r.conn(0)

	mustAcquire(t, ctx, c0, "k")
	time.Sleep(250 * time.Millisecond)
	env1.FP.Attach("getset/before-getset", lockimpl.Action{WaitFor: "getset/after-get", WaitClient: 2})
	env2.FP.Attach("getset/before-getset", lockimpl.Action{WaitFor: "getset/after-getset", WaitClient: 1})

	l1, _, e1, e2 := acquireBoth(ctx, c1, c2, "k")
	if e1 != nil {
		t.Fatalf("c1: %v, want the lock", e1)
	}
	if !errors.Is(e2, lockimpl.ErrNotAcquired) {
		t.Fatalf("c2: %v, want ErrNotAcquired", e2)
	}
	v := raw.Get(ctx, "k").Val()
	if v == l1.Token {
		t.Fatalf("key still holds the winner's expiry %s; want the loser's", v)
	}
	mine, _ := strconv.ParseInt(l1.Token, 10, 64)
	theirs, _ := strconv.ParseInt(v, 10, 64)
	if theirs <= mine {
		t.Fatalf("key = %d, winner wrote %d: want the loser's later value", theirs, mine)
	}
	if r.hub.Hits(2, "getset/after-getset") != 1 {
		t.Fatalf("c2 GETSET %d times, want 1", r.hub.Hits(2, "getset/after-getset"))
	}
}

// Seed 002 (Redisson): the hash counts re-entries, and an unlock PUBLISH
// wakes a subscribed waiter long before the PTTL it was told to wait.
func TestRedissonReentrantAndWake(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	r.hub.Arm()
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 10 * time.Second, WaitTimeout: 5 * time.Second}
	c1, _ := r.locker(1, "redisson-hash", o)
	c2, _ := r.locker(2, "redisson-hash", o)
	raw := r.conn(0)

	a := mustAcquire(t, ctx, c1, "k")
	b := mustAcquire(t, ctx, c1, "k")
	if n := raw.HGet(ctx, "k", a.Token).Val(); n != "2" {
		t.Fatalf("hold count %q, want 2", n)
	}
	if err := c1.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if n := raw.HGet(ctx, "k", a.Token).Val(); n != "1" {
		t.Fatalf("hold count %q after one release, want 1", n)
	}

	var (
		got     *lockimpl.Lease
		err     error
		granted time.Time
		done    = make(chan struct{})
	)
	go func() {
		got, err = c2.Acquire(ctx, "k")
		granted = time.Now()
		close(done)
	}()
	time.Sleep(100 * time.Millisecond)
	if r.hub.Hits(2, "redisson-hash/before-wait") == 0 {
		t.Fatal("c2 is not waiting on the channel")
	}
	released := time.Now()
	if err := c1.Release(ctx, a); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if d := granted.Sub(released); d > time.Second {
		t.Fatalf("waiter took %v after the unlock, want well under the ~10s PTTL", d)
	}
	if polls := r.hub.Hits(2, "redisson-hash/before-lock"); polls > 3 {
		t.Errorf("waiter tried %d times; want subscribe-and-wait, not polling", polls)
	}
	if err := c2.Release(ctx, got); err != nil {
		t.Fatal(err)
	}
}

// Redlock holds with a majority of nodes and fails without one. A dead node
// that refuses connections is a definite "no" (ErrNotAcquired); one that
// only times out may have taken the SET, so the failure is an unknown outcome.
func TestRedlockQuorum(t *testing.T) {
	t.Parallel()
	r := newRig(t, 5)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 2 * time.Second, NodeTimeout: 50 * time.Millisecond, RetryDelay: 20 * time.Millisecond}
	slow, _ := r.locker(1, "redlock", o) // go-redis default: 5 dial attempts, longer than the node timeout
	r.dialOnce = true
	fast, _ := r.locker(2, "redlock", o)

	procs := r.s.Procs()
	for _, p := range procs[:2] {
		p.Stop()
	}
	for _, c := range []lockimpl.Locker{slow, fast} {
		l := mustAcquire(t, ctx, c, "k")
		if l.Validity <= 0 || l.Validity > o.TTL {
			t.Fatalf("validity %v, want in (0, %v]", l.Validity, o.TTL)
		}
		if err := c.Release(ctx, l); err != nil {
			t.Fatalf("release with 3 of 5 nodes: %v", err)
		}
	}
	procs[2].Stop()
	if _, err := fast.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("2 of 5 nodes, refused: err = %v, want ErrNotAcquired", err)
	}
	l, err := slow.Acquire(ctx, "k")
	if l != nil || err == nil || errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("2 of 5 nodes, timing out: lease %v, err = %v; want no lease and an unknown outcome", l, err)
	}
}

// A Redlock attempt whose every node answered and refused (the key is
// another client's everywhere) is a definite failure, not an unknown
// outcome: nothing of this client's can be left on any node.
func TestRedlockRefusedEverywhereIsDefinite(t *testing.T) {
	t.Parallel()
	r := newRig(t, 5)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 2 * time.Second, RetryCount: 2, RetryDelay: 5 * time.Millisecond}
	holder, _ := r.locker(1, "redlock", o)
	other, _ := r.locker(2, "redlock", o)
	l := mustAcquire(t, ctx, holder, "k")
	if _, err := other.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("5 of 5 nodes refused: err = %v, want ErrNotAcquired", err)
	}
	if err := holder.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
}

// The default per-node timeout is small against a long TTL and above the
// network's round trip with room to spare (distlock, seed 002).
func TestRedlockNodeTimeout(t *testing.T) {
	for _, tc := range []struct{ ttl, rtt, want time.Duration }{
		{10 * time.Second, 0, 200 * time.Millisecond},
		{150 * time.Millisecond, 0, 5 * time.Millisecond},
		{150 * time.Millisecond, 4 * time.Millisecond, 40 * time.Millisecond},
		{2 * time.Second, 4 * time.Millisecond, 40 * time.Millisecond},
		{20 * time.Second, 4 * time.Millisecond, 400 * time.Millisecond},
	} {
		if got := lockimpl.RedlockNodeTimeout(tc.ttl, tc.rtt); got != tc.want {
			t.Errorf("TTL %v, RTT %v: %v, want %v", tc.ttl, tc.rtt, got, tc.want)
		}
	}
}

// Fencing tokens strictly increase across holders, through release and
// through expiry.
func TestFencedTokensIncrease(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 200 * time.Millisecond, RetryDelay: 20 * time.Millisecond, WaitTimeout: time.Second}
	c1, _ := r.locker(1, "fenced", o)
	c2, _ := r.locker(2, "fenced", o)
	info, _ := lockimpl.Lookup("fenced")
	if !info.Claims.Fencing {
		t.Fatal("fenced is not marked Fenced")
	}

	var last int64
	check := func(l *lockimpl.Lease) {
		t.Helper()
		if l.Fence <= last {
			t.Fatalf("fence %d after %d, want strictly greater", l.Fence, last)
		}
		last = l.Fence
	}
	l := mustAcquire(t, ctx, c1, "k")
	check(l)
	if err := c1.Release(ctx, l); err != nil {
		t.Fatal(err)
	}
	l = mustAcquire(t, ctx, c2, "k")
	check(l) // and never released: expires
	l = mustAcquire(t, ctx, c1, "k")
	check(l)
}

// Seed 002's renewal keeps the lock past its TTL; when the key disappears
// behind its back the watchdog reports the loss.
func TestSetNXPXWatchdog(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 300 * time.Millisecond, Watchdog: true, RetryDelay: 20 * time.Millisecond, WaitTimeout: 100 * time.Millisecond}
	c1, _ := r.locker(1, "set-nx-px", o)
	c2, _ := r.locker(2, "set-nx-px", o)
	raw := r.conn(0)

	l := mustAcquire(t, ctx, c1, "k")
	if l.Lost == nil {
		t.Fatal("watchdog lease has no Lost channel")
	}
	time.Sleep(900 * time.Millisecond) // three TTLs
	if v := raw.Get(ctx, "k").Val(); v != l.Token {
		t.Fatalf("after 3 TTLs key = %q, want renewed %q", v, l.Token)
	}
	if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("c2 during renewal: %v, want ErrNotAcquired", err)
	}
	select {
	case <-l.Lost:
		t.Fatal("Lost closed while the lock was held")
	default:
	}
	raw.Del(ctx, "k")
	select {
	case <-l.Lost:
	case <-time.After(time.Second):
		t.Fatal("watchdog did not report the deleted lock")
	}
	if err := c1.Release(ctx, l); !errors.Is(err, lockimpl.ErrNotHeld) {
		t.Fatalf("release of a lost lock: %v, want ErrNotHeld", err)
	}
}

// Seed 002 常规方案缺陷: the renewal thread stops in a stop-the-world pause
// too, so the lock expires under a holder that still believes in it; the
// watchdog only notices when the pause ends.
func TestSetNXPXWatchdogPausedWithClient(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 300 * time.Millisecond, Watchdog: true, RetryDelay: 20 * time.Millisecond, WaitTimeout: time.Second}
	var p pauser
	env := r.env(1)
	env.Sleep = p.sleep
	c1 := r.lockerWith(env, "set-nx-px", o)
	c2, _ := r.locker(2, "set-nx-px", o)

	l1 := mustAcquire(t, ctx, c1, "k")
	p.pause()
	mustAcquire(t, ctx, c2, "k") // two holders: c1 never learned
	select {
	case <-l1.Lost:
		t.Fatal("Lost closed during the pause: the watchdog should be paused too")
	default:
	}
	p.resume()
	select {
	case <-l1.Lost:
	case <-time.After(time.Second):
		t.Fatal("watchdog did not report the loss after the pause")
	}
}

// Seed 002's LockData count: re-entries only count; the last release deletes.
func TestSetNXPXReentrant(t *testing.T) {
	t.Parallel()
	r := newRig(t, 1)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 5 * time.Second, Reentrant: true, RetryDelay: 20 * time.Millisecond, WaitTimeout: 100 * time.Millisecond}
	c1, _ := r.locker(1, "set-nx-px", o)
	c2, _ := r.locker(2, "set-nx-px", o)
	raw := r.conn(0)

	var leases []*lockimpl.Lease
	for range 3 {
		leases = append(leases, mustAcquire(t, ctx, c1, "k"))
	}
	for i, l := range leases {
		if err := c1.Release(ctx, l); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
		held := raw.Exists(ctx, "k").Val() == 1
		if last := i == len(leases)-1; held == last {
			t.Fatalf("after release %d of 3: key present = %v", i+1, held)
		}
		if i < len(leases)-1 {
			if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("c2 while c1 holds %d: %v", len(leases)-1-i, err)
			}
		}
	}
	mustAcquire(t, ctx, c2, "k")
}

// TestWatchdogKeepsLock: every implementation with a renewal watchdog keeps
// its key alive through three TTLs and still releases it as its own.
func TestWatchdogKeepsLock(t *testing.T) {
	for _, impl := range []string{"set-nx-px", "fenced", "redisson-hash"} {
		t.Run(impl, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, 1)
			ctx := testCtx(t)
			// A 600 ms TTL renewed every 200 ms: the key survives only if
			// renewals keep coming, yet a scheduler stall of a loaded CI
			// machine (a few hundred ms) does not lose it by itself.
			c1, _ := r.locker(1, impl, lockimpl.Options{TTL: 600 * time.Millisecond, Watchdog: true})
			raw := r.conn(0)
			l := mustAcquire(t, ctx, c1, "k")
			time.Sleep(1800 * time.Millisecond)
			if n := raw.Exists(ctx, "k").Val(); n != 1 {
				t.Fatalf("after 3 TTLs the key is gone: the watchdog did not renew")
			}
			if err := c1.Release(ctx, l); err != nil {
				t.Fatalf("release: %v", err)
			}
			if n := raw.Exists(ctx, "k").Val(); n != 0 {
				t.Fatalf("key still there after release")
			}
		})
	}
}

// A release whose compare-and-delete times out on a node (the node, or
// the client, stalled past the node timeout) is sent there again: once the
// node answers, our key is gone from it instead of blocking every client
// until it expires, and the release is a success.
func TestRedlockReleaseRetriesUnknownNodes(t *testing.T) {
	t.Parallel()
	r := newRig(t, 5)
	ctx := testCtx(t)
	o := lockimpl.Options{TTL: 20 * time.Second, NodeTimeout: 150 * time.Millisecond, RetryDelay: 5 * time.Millisecond}
	c, _ := r.locker(1, "redlock", o)
	l := mustAcquire(t, ctx, c, "k")
	if err := r.s.Pause(0); err != nil {
		t.Fatal(err)
	}
	// Resumed during the second round (150-300 ms): the first times out.
	resumed := time.AfterFunc(200*time.Millisecond, func() { _ = r.s.Resume(0) })
	defer resumed.Stop()
	if err := c.Release(ctx, l); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n, err := r.conn(0).Exists(ctx, "k").Result(); err != nil || n != 0 {
		t.Fatalf("node 0 after the release: EXISTS k = %d (%v), want 0", n, err)
	}
}
