package redsyncadapter

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// takenPool refuses every SET NX until refuse tries have been made, and
// records when each try's SET came.
type takenPool struct {
	mu     sync.Mutex
	refuse int
	sets   []time.Time
}

func (p *takenPool) Get(ctx context.Context) (redsyncredis.Conn, error) {
	if ctx != nil && ctx.Err() != nil {
		return nil, &notSentError{ctx.Err()}
	}
	return takenConn{p}, nil
}

type takenConn struct{ p *takenPool }

func (c takenConn) SetNX(string, string, time.Duration) (bool, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.sets = append(c.p.sets, time.Now())
	return len(c.p.sets) > c.p.refuse, nil
}

func (takenConn) Get(string) (string, error)                     { return "", nil }
func (takenConn) Set(string, string) (bool, error)               { return true, nil }
func (takenConn) Eval(*redsyncredis.Script, ...any) (any, error) { return int64(0), nil }
func (takenConn) PTTL(string) (time.Duration, error)             { return 0, nil }
func (takenConn) Close() error                                   { return nil }

// TestPacing: with no retry_delay the library paces its own tries (the
// module selects v4.0.3: 500 ms whatever the try, redsync.go 27), and a
// grant's validity still runs from the try that won; with one, the
// adapter's delay in [d, 2d) between tries until the wait timeout.
func TestPacing(t *testing.T) {
	const ttl = 2 * time.Second
	for _, tc := range []struct {
		name        string
		delay       time.Duration
		refuse      int
		minGap      time.Duration
		maxGap      time.Duration // exclusive; 0: none
		minTries    int
		minValidity time.Duration // of the grant when refuse < tries
	}{
		{name: "library", refuse: 1 << 10, minGap: 500 * time.Millisecond, minTries: 2},
		{name: "spec delay", delay: 20 * time.Millisecond, refuse: 1 << 10, minGap: 20 * time.Millisecond, maxGap: 500 * time.Millisecond, minTries: 4},
		// Won on the second try, 500 ms after the first: a validity
		// measured from the first would be under 1.5 s.
		{name: "library grant", refuse: 1, minGap: 500 * time.Millisecond, minTries: 2, minValidity: ttl - ttl/100 - 200*time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &takenPool{refuse: tc.refuse}
			r := Release{Version: "v4.0.3", Pool: func(redis.UniversalClient) redsyncredis.Pool { return p }}
			env := lockimpl.Env{Nodes: []redis.UniversalClient{nil}, Clock: lockimpl.NewSkewClock(0), Rand: rand.New(rand.NewPCG(1, 2))}
			l, err := r.Info(1).New(env, lockimpl.Options{TTL: ttl, RetryDelay: tc.delay, WaitTimeout: 1200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			lease, err := l.Acquire(context.Background(), "k")
			switch {
			case tc.minValidity > 0 && err != nil:
				t.Fatalf("acquire: %v, want a grant", err)
			case tc.minValidity > 0 && lease.Validity < tc.minValidity:
				t.Errorf("validity %v, want at least %v: dated from before the winning try", lease.Validity, tc.minValidity)
			case tc.minValidity == 0 && !errors.Is(err, lockimpl.ErrNotAcquired):
				t.Errorf("acquire: %v, want a definite no", err)
			}
			if len(p.sets) < tc.minTries {
				t.Fatalf("%d tries, want at least %d", len(p.sets), tc.minTries)
			}
			for i := 1; i < len(p.sets); i++ {
				gap := p.sets[i].Sub(p.sets[i-1])
				if gap < tc.minGap || tc.maxGap > 0 && gap >= tc.maxGap {
					t.Errorf("try %d came %v after the one before, want [%v, %v)", i, gap, tc.minGap, tc.maxGap)
				}
			}
		})
	}
}
