package scenarios_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// wholeSeconds is a user's lock with a common bug: it converts the TTL to
// whole seconds for SET ... EX, so a TTL under a second becomes EX 0, which
// Redis refuses with "ERR invalid expire time" on every acquire.
type wholeSeconds struct {
	env lockimpl.Env
	o   lockimpl.Options
}

func (l *wholeSeconds) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	tok := fmt.Sprintf("c%d-%d", l.env.Client, l.env.Rand.Uint64())
	err := l.env.Nodes[0].Do(ctx, "SET", key, tok, "NX", "EX", int64(l.o.TTL/time.Second)).Err()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, lockimpl.ErrNotAcquired
	case err != nil:
		return nil, fmt.Errorf("whole-seconds: SET: %w", err)
	}
	return &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}, nil
}

func (l *wholeSeconds) Release(ctx context.Context, lease *lockimpl.Lease) error {
	return l.env.Nodes[0].Del(ctx, lease.Key).Err()
}

var wholeSecondsInfo = lockimpl.Info{
	Name:    "whole-seconds",
	Summary: "a test's lock: SET NX EX with the TTL truncated to whole seconds",
	New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		return &wholeSeconds{env: env, o: o}, nil
	},
}

// TestErrorRepliesAreDefinite: on a real redis-server, a lock whose every
// acquire is refused with an error reply is recorded as definite failures
// (fail with the error, counted), never as unknown outcomes, and the run
// is inconclusive, not safe; the client backs off instead of flooding.
func TestErrorRepliesAreDefinite(t *testing.T) {
	cluster.StartForTest(t, 1)
	spec, err := spec.Parse("refused.yaml", []byte(`name: refused
clients: 3
keys: 1
duration: 600ms
lock: {ttl: 300ms, retry_delay: 5ms, wait_timeout: 100ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Info: &wholeSecondsInfo, Backend: cluster.RedisServer, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Result
	t.Logf("%s: %s (%d attempts)", r.Verdict, r.Reason, r.Attempts)
	if r.Verdict != checker.Inconclusive || !strings.Contains(r.Reason, "0 acquisitions: ") ||
		!strings.Contains(r.Reason, "error replies: whole-seconds: SET: ERR invalid expire time") {
		t.Errorf("verdict %s: %s; want inconclusive, 0 acquisitions: N error replies: ...ERR invalid expire time", r.Verdict, r.Reason)
	}
	if r.ErrorReplies != r.Attempts || r.Attempts == 0 || r.Unknown != 0 {
		t.Errorf("%d error replies, %d unknown, of %d attempts: want every attempt an error reply", r.ErrorReplies, r.Unknown, r.Attempts)
	}
	// A refused client backs off (at least 10 ms) as after a lost
	// connection: 3 clients in 600 ms make at most about 180 attempts.
	if r.Attempts > 250 {
		t.Errorf("%d attempts in 600 ms: refused clients do not back off", r.Attempts)
	}
	for _, op := range out.History {
		if op.F == history.FAcquire && op.Type != history.Invoke && (op.Type != history.Fail || !op.ErrorReply) {
			t.Fatalf("acquire completion %+v: want fail with error_reply", op)
		}
	}
}

// TestRunnerHistoryJudgesItself: a real run's history starts with its
// header and ends with the end record, validates without a problem, and a
// failpoint the schedule asks for that never fires makes the run
// inconclusive, while a step of another implementation is inert.
func TestRunnerHistoryJudgesItself(t *testing.T) {
	const base = `name: unfired
mode: scheduled
clients: 2
keys: 1
duration: 400ms
lock: {ttl: 200ms, retry_delay: 5ms, wait_timeout: 300ms}
workload: {cs_min: 1ms, cs_max: 2ms}
failpoints:
  - {client: 0, point: cs/hold, times: 1, sleep: 1ms}
`
	for _, tc := range []struct {
		name, extra, verdict, reason string
	}{
		{"every failpoint fired", "", checker.Safe, "failpoints fired: #0 cs/hold ×1"},
		{"another lock's step is inert", "  - {client: 1, point: setnx-del/before-del, times: 1, sleep: 1ms}\n", checker.Safe, "#0 cs/hold ×1"},
		{"a failpoint that never fired", "  - {client: 1, point: cs/hold, skip: 100000, times: 1, sleep: 1ms}\n",
			checker.Inconclusive, "#1 c1 at cs/hold fired 0 of 1 times"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := spec.Parse("unfired.yaml", []byte(base+tc.extra))
			if err != nil {
				t.Fatal(err)
			}
			out, err := scenarios.Run(context.Background(), spec, scenarios.Config{Impl: "set-nx-px", Backend: cluster.Embedded, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := out.History
			if h[0].F != history.FMeta || h[0].Meta == nil || h[len(h)-1].F != history.FEnd {
				t.Fatalf("first entry %+v, last %+v: want the header and the end record", h[0], h[len(h)-1])
			}
			if m := h[0].Meta; m.Impl != "set-nx-px" || m.Mode != "scheduled" || len(m.Keys) != 1 || len(m.Failpoints) != strings.Count(base+tc.extra, "point:") {
				t.Errorf("header %+v", m)
			}
			if _, problems, _ := history.Validate(history.Parsed{History: h}); len(problems) > 0 {
				t.Errorf("the runner's own history has problems: %v", problems)
			}
			r := out.Result
			if r.Verdict != tc.verdict || !strings.Contains(r.Reason, tc.reason) {
				t.Errorf("%s: %s; want %s and %q", r.Verdict, r.Reason, tc.verdict, tc.reason)
			}
		})
	}
}
