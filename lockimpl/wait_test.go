package lockimpl_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestSetNXPXWaitReplicas: with WaitReplicas the lock is trusted only when a
// replica acknowledged the SET; a lone master gets no acknowledgement, so
// the acquire fails and the key is given back.
func TestSetNXPXWaitReplicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		replicas int
		want     error
		// How long WAIT and the whole acquire may take: short where no
		// acknowledgement can come, generous where one must (a replica on
		// a loaded CI machine can take well over 50 ms to acknowledge).
		replicaTimeout, waitTimeout time.Duration
	}{
		{"no replica: not trusted", 0, lockimpl.ErrNotAcquired, 50 * time.Millisecond, 200 * time.Millisecond},
		{"one replica acknowledges", 1, nil, time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i := 0; i < tc.replicas; i++ {
				rep, err := r.s.AddReplica(ctx, r.s.Nodes()[0].Addr)
				if err != nil {
					t.Fatal(err)
				}
				if err := rep.WaitOnline(ctx, r.s.Nodes()[0].Addr); err != nil {
					t.Fatal(err)
				}
			}
			l, _ := r.locker(0, "set-nx-px", lockimpl.Options{TTL: 5 * time.Second, WaitReplicas: 1,
				ReplicaTimeout: tc.replicaTimeout, RetryDelay: 10 * time.Millisecond, WaitTimeout: tc.waitTimeout})
			lease, err := l.Acquire(ctx, "k")
			if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Acquire: %v, want %v", err, tc.want)
			}
			n, err := r.conn(0).Exists(ctx, "k").Result()
			if err != nil {
				t.Fatal(err)
			}
			if held := tc.want == nil; (n == 1) != held {
				t.Fatalf("key exists = %d after Acquire (%v): an untrusted lock must be given back", n, err)
			}
			if lease != nil {
				if err := l.Release(ctx, lease); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
