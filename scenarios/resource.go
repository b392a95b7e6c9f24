package scenarios

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// resource is the shared state the critical section protects: seed 001's
// counter N (read N, hold, write N+1). It lives in the harness, outside the
// system under test, so faults on the lock's servers cannot corrupt the
// measurement of what the lock let happen to it.
//
// A fenced resource is Kleppmann's storage: it sees the token of every
// access, reads included, and refuses a write whose token is not strictly
// above the last accepted write's or is below the highest token it has seen.
// Checking writes alone is not enough for a read-modify-write: a paused
// holder with token 10 could read, the next holder with token 11 read the
// same value, and the old holder's write of N+1 land before the new one's.
type resource struct {
	mu     sync.Mutex
	fenced bool
	n      map[string]int64
	wrote  map[string]int64 // fence of the last accepted write
	seen   map[string]int64 // highest fence of any access
}

func newResource(fenced bool) *resource {
	return &resource{fenced: fenced, n: map[string]int64{}, wrote: map[string]int64{}, seen: map[string]int64{}}
}

func (r *resource) read(key string, fence int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced && fence > r.seen[key] {
		r.seen[key] = fence
	}
	return r.n[key]
}

// write stores v; false means the fenced resource refused a stale token.
func (r *resource) write(key string, v, fence int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fenced {
		if fence <= r.wrote[key] || fence < r.seen[key] {
			return false
		}
		r.wrote[key] = fence
		r.seen[key] = fence
	}
	r.n[key] = v
	return true
}

// redisLog routes go-redis's own log lines (dial failures to servers a
// fault killed, which are expected) to the debug level of the run's logger
// instead of stderr.
type redisLog struct{}

// debugLog is where redisLog writes; set per process by Run.
var debugLog atomic.Pointer[slog.Logger]

func (redisLog) Printf(ctx context.Context, format string, v ...any) {
	if l := debugLog.Load(); l != nil {
		l.Debug("go-redis: " + fmt.Sprintf(format, v...))
	}
}

func init() { redis.SetLogger(redisLog{}) }
