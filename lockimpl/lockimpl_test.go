package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// basic describes how each implementation is exercised by the common tests.
type basic struct {
	name string
	// o is used for the mutual-exclusion test (long TTL, short waits).
	o lockimpl.Options
	// ttl is the short TTL of the expiry test.
	ttl time.Duration
	// releaseFrees: after Release another client can take the lock at once.
	releaseFrees bool
	// expires: a holder that never releases loses the lock after the TTL.
	expires bool
	// expiryWait is how long after acquiring the expiry test waits.
	expiryWait time.Duration
}

var basics = []basic{
	{name: "setnx-naive", ttl: 200 * time.Millisecond, releaseFrees: true, expires: false, expiryWait: 400 * time.Millisecond},
	{name: "setnx-expire", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "setnx-del", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "getset", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "getset", o: lockimpl.Options{ReleaseVariant: "python"}, ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	// The PHP unlock never deletes a live lock; the key lives LOCK_EXPIRE+1 s.
	{name: "lua-getset", ttl: time.Second, releaseFrees: false, expires: true, expiryWait: 2100 * time.Millisecond},
	{name: "set-nx-px", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "set-nx-px", o: lockimpl.Options{Reentrant: true}, ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "redisson-hash", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "redlock", o: lockimpl.Options{NodeTimeout: 50 * time.Millisecond}, ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
	{name: "fenced", ttl: 200 * time.Millisecond, releaseFrees: true, expires: true, expiryWait: 300 * time.Millisecond},
}

// withShortWaits keeps a losing Acquire short: a few fast retries.
func withShortWaits(o lockimpl.Options) lockimpl.Options {
	o.RetryDelay = 20 * time.Millisecond
	o.WaitTimeout = 100 * time.Millisecond
	o.RetryCount = 2
	return o
}

func (b basic) label() string {
	if b.o.ReleaseVariant != "" {
		return b.name + "/" + b.o.ReleaseVariant
	}
	if b.o.Reentrant {
		return b.name + "/reentrant"
	}
	return b.name
}

func TestEveryImplementationIsCovered(t *testing.T) {
	seen := map[string]bool{}
	for _, b := range basics {
		seen[b.name] = true
	}
	for _, n := range lockimpl.Names() {
		if !seen[n] {
			t.Errorf("implementation %s has no row in basics", n)
		}
		info, _ := lockimpl.Lookup(n)
		if info.Source == "" || info.Summary == "" {
			t.Errorf("%s: Source and Summary must be set", n)
		}
	}
}

func TestMutualExclusion(t *testing.T) {
	for _, b := range basics {
		t.Run(b.label(), func(t *testing.T) {
			t.Parallel()
			info, _ := lockimpl.Lookup(b.name)
			r := newRig(t, info.Nodes(b.o))
			ctx := testCtx(t)
			o := withShortWaits(b.o)
			o.TTL = 5 * time.Second
			c1, _ := r.locker(1, b.name, o)
			c2, _ := r.locker(2, b.name, o)

			l1 := mustAcquire(t, ctx, c1, "k")
			if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("second client while held: err = %v, want ErrNotAcquired", err)
			}
			if err := c1.Release(ctx, l1); err != nil {
				t.Fatalf("release: %v", err)
			}
			l2, err := c2.Acquire(ctx, "k")
			if b.releaseFrees {
				if err != nil {
					t.Fatalf("second client after release: %v", err)
				}
				if err := c2.Release(ctx, l2); err != nil {
					t.Fatalf("second release: %v", err)
				}
			} else if !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("second client after release: err = %v, want ErrNotAcquired (release leaves the lock)", err)
			}
		})
	}
}

func TestExpiry(t *testing.T) {
	for _, b := range basics {
		t.Run(b.label(), func(t *testing.T) {
			t.Parallel()
			info, _ := lockimpl.Lookup(b.name)
			r := newRig(t, info.Nodes(b.o))
			ctx := testCtx(t)
			o := withShortWaits(b.o)
			o.TTL = b.ttl
			c1, _ := r.locker(1, b.name, o)
			c2, _ := r.locker(2, b.name, o)

			mustAcquire(t, ctx, c1, "k") // and never released: a crashed holder
			if _, err := c2.Acquire(ctx, "k"); !errors.Is(err, lockimpl.ErrNotAcquired) {
				t.Fatalf("before expiry: err = %v, want ErrNotAcquired", err)
			}
			time.Sleep(b.expiryWait)
			_, err := c2.Acquire(ctx, "k")
			switch {
			case b.expires && err != nil:
				t.Fatalf("after %v: %v, want the lock", b.expiryWait, err)
			case !b.expires && !errors.Is(err, lockimpl.ErrNotAcquired):
				t.Fatalf("after %v: err = %v, want ErrNotAcquired (no expiry)", b.expiryWait, err)
			}
		})
	}
}

func TestOptionValidation(t *testing.T) {
	r := newRig(t, 1)
	env := r.env(0)
	for _, n := range lockimpl.Names() {
		info, _ := lockimpl.Lookup(n)
		if _, err := info.New(env, lockimpl.Options{TTL: -time.Second}); err == nil {
			t.Errorf("%s: negative TTL accepted", n)
		}
	}
	info, _ := lockimpl.Lookup("getset")
	if _, err := info.New(env, lockimpl.Options{ReleaseVariant: "perl"}); err == nil {
		t.Error("getset: unknown release variant accepted")
	}
	info, _ = lockimpl.Lookup("redlock")
	if _, err := info.New(env, lockimpl.Options{Nodes: 5}); err == nil {
		t.Error("redlock: 5 nodes asked, 1 given, accepted")
	}
}

func TestUnreachableServerIsUnknown(t *testing.T) {
	r := newRig(t, 1)
	ctx := testCtx(t)
	l, _ := r.locker(1, "set-nx-px", lockimpl.Options{TTL: time.Second})
	if err := r.s.Procs()[0].Stop(); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, "k")
	if err == nil || errors.Is(err, lockimpl.ErrNotAcquired) {
		t.Fatalf("err = %v, want an unknown outcome (not ErrNotAcquired)", err)
	}
}

// benchFP measures a failpoint hit on a hub in the given state.
func benchFP(b *testing.B, arm bool) {
	hub := lockimpl.NewHub()
	fp := lockimpl.NewFailpoints(hub, 0)
	if arm {
		lockimpl.NewFailpoints(hub, 1).Attach("other/point", lockimpl.Action{Sleep: time.Second})
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := fp.Hit(ctx, "getset/after-get"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFailpointUnattached(b *testing.B) { benchFP(b, false) }

func BenchmarkFailpointArmedNoAction(b *testing.B) { benchFP(b, true) }
