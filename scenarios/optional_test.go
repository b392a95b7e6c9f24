package scenarios

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// eventLog is the order in which the runner called a lock's methods.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (e *eventLog) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf(format, args...))
}

func (e *eventLog) index(ev string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.events {
		if x == ev {
			return i
		}
	}
	return -1
}

// spyLocker is set-nx-px with the optional interfaces the runner uses,
// logging each call.
type spyLocker struct {
	lockimpl.Locker
	client int
	log    *eventLog
}

func (s *spyLocker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	l, err := s.Locker.Acquire(ctx, key)
	if err == nil {
		s.log.add("acquired %d", s.client)
	}
	return l, err
}

func (s *spyLocker) Ready(context.Context) error { s.log.add("ready %d", s.client); return nil }

func (s *spyLocker) Close() error { s.log.add("close %d", s.client); return nil }

// wrapSetNXPX is set-nx-px under another name, each client's Locker
// wrapped by wrap: a test's lock with the optional interfaces it needs.
func wrapSetNXPX(t *testing.T, name string, wrap func(lockimpl.Env, lockimpl.Locker) lockimpl.Locker) lockimpl.Info {
	t.Helper()
	base, err := lockimpl.Lookup("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	info := base
	info.Name = name
	info.New = func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		l, err := base.New(env, o)
		if err != nil {
			return nil, err
		}
		return wrap(env, l), nil
	}
	return info
}

// TestOptionalInterfaces: the runner calls Ready on every client before any
// acquires, and Close on a crashed client's Locker when it crashes (the
// other client acquires after that Close, so it is not the end-of-run one),
// as lockimpl.Locker documents.
func TestOptionalInterfaces(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("optional.yaml", []byte(`name: optional
clients: 2
keys: 1
duration: 1500ms
lock: {ttl: 300ms, retry_delay: 5ms, wait_timeout: 2s}
failpoints:
  - {client: 1, point: cycle/before-acquire, times: 1, wait_for: cs/hold, wait_client: 0}
  - {client: 0, point: cs/hold, times: 1, fault: {kind: crash, clients: [0]}}
impls: [set-nx-px]
`))
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	info := wrapSetNXPX(t, "spy", func(env lockimpl.Env, l lockimpl.Locker) lockimpl.Locker {
		return &spyLocker{Locker: l, client: env.Client, log: log}
	})
	out, err := Run(context.Background(), spec, Config{Info: &info, Backend: cluster.RedisServer})
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Verdict != checker.Safe {
		t.Errorf("verdict %s: %s", out.Result.Verdict, out.Result.Reason)
	}
	first := func(ev string) int {
		i := log.index(ev)
		if i < 0 {
			t.Fatalf("no %q in %v", ev, log.events)
		}
		return i
	}
	acq0 := first("acquired 0")
	if r0, r1 := first("ready 0"), first("ready 1"); r0 > acq0 || r1 > acq0 {
		t.Errorf("Ready after an acquisition: %v", log.events)
	}
	closed := first("close 0")
	if closed < acq0 {
		t.Errorf("client 0 closed before it acquired: %v", log.events)
	}
	after := false
	for _, ev := range log.events[closed:] {
		after = after || ev == "acquired 1"
	}
	if !after {
		t.Errorf("no acquisition by client 1 after client 0's Close: Close was not called at the crash: %v", log.events)
	}
}
