package planted

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Bugs of the quorum lock. The zero value is the correct lock.
type quorumBug string

const (
	// quorum counting: half the nodes is taken for a majority, so two
	// clients with two of five nodes each both hold.
	bugHalfQuorum quorumBug = "half-quorum"
	// validity: the time the acquire took is not subtracted from the TTL,
	// so a lock granted after its keys expired is trusted.
	bugNoValidity quorumBug = "no-validity"
	// release (catalogue 10, Redisson #542, fixed in 2.2.18): the
	// RedLock's unlock force-deletes the key on every node whoever holds
	// it, so a late unlock frees the next holder's majority.
	bugForceUnlock quorumBug = "force-unlock"
	// validity (catalogue 24, RedLock.net cb50082, fixed in 1.7.0): the
	// try's time is read on the wall clock, so a wall-clock step back
	// during a slow try makes an expired lock look valid.
	bugWallElapsed quorumBug = "wall-elapsed"
	// acquire (catalogue 14, Redisson #2172, fixed by d7b029327 in
	// 3.11.1): RedissonMultiLock.tryLock(waitTime, leaseTime) gives each
	// node's lock the lease waitTime × 2 whenever a leaseTime is set, and
	// waitTime is -1 for "do not wait": the lease is -2 ms, and the lock
	// script's PEXPIRE -2 deletes the hash it just wrote, on every node.
	// Every contender then holds the lock. Only on the hash locks.
	bugLeaseFromWait quorumBug = "lease-from-wait"
	// validity (catalogue 21, pottery PR 644, AIORedlock.locked() in
	// aioredlock.py at d9658be): the holder learns how long it holds as
	// pottery's user does, from locked() after acquire() said yes (acquire
	// returns a bool, locked() is the only validity the library tells):
	// the PTTLs of the masters still holding its token, sorted, at index
	// n//2 - (n even) with n the number of masters. That is the TTL a
	// majority outlives only when every master answered with one; when a
	// bare majority holds, it is a larger one (for n=5 and 3 TTLs, the
	// largest), and the holder trusts keys the others' expiry already
	// freed.
	bugLockedIndex quorumBug = "locked-index"
)

// noWait is Redisson's waitTime for a tryLock that does not wait (-1): the
// hash locks try once per call, the spec's retry loop calling again.
const noWait = -1

// Redisson's lock and unlock scripts (RedissonLock.tryLockInnerAsync and
// unlockInnerAsync, 3.11.0), without the unlock's PUBLISH (nobody here
// subscribes): a hash of owner → hold count, its TTL set by PEXPIRE.
var (
	hashLock = redis.NewScript(`if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0`)
	hashUnlock = redis.NewScript(`if redis.call('hexists', KEYS[1], ARGV[1]) == 0 then return 0 end
local counter = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if counter > 0 then redis.call('pexpire', KEYS[1], ARGV[2]) return 0 end
redis.call('del', KEYS[1])
return 1`)
)

// quorumNodes is how many independent masters the quorum lock uses.
const quorumNodes = 5

// quorum is the Redlock algorithm of the Redis distlock page: SET NX PX on
// every master at once, each bounded by a node timeout; held when a
// majority said yes and the validity (TTL minus the time the try took minus
// the clock drift) is positive; otherwise every node is released and the
// next try comes after a random delay.
type quorum struct {
	env   lockimpl.Env
	o     lockimpl.Options
	nodes []redis.UniversalClient
	bug   quorumBug
	seq   int
	// hash: the node's lock is Redisson's hash (hashLock, hashUnlock), not
	// SET NX PX and compare-and-delete.
	hash bool
}

func quorumInfo(name, summary string, bug quorumBug) lockimpl.Info {
	return quorumLock(name, summary, bug, false)
}

// quorumLock is the quorum lock's Info; hash makes it Redisson's RedLock
// (reentrant by its hash's count, as its author declares).
func quorumLock(name, summary string, bug quorumBug, hash bool) lockimpl.Info {
	return lockimpl.Info{
		Name:    name,
		Summary: summary,
		Nodes:   func(lockimpl.Options) int { return quorumNodes },
		Claims: lockimpl.Claims{Topology: lockimpl.Quorum, Expiry: lockimpl.ServerExpiry,
			Release: lockimpl.OwnerCheckedRelease, Reentrant: hash},
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) < quorumNodes {
				return nil, fmt.Errorf("%s: need lock.ttl, lock.wait_timeout and %d nodes", name, quorumNodes)
			}
			return &quorum{env: env, o: o, nodes: env.Nodes[:quorumNodes], bug: bug, hash: hash}, nil
		},
	}
}

// nodeTimeout bounds each node's command: the spec's node_timeout, else a
// twentieth of the TTL within [200 ms, TTL/2] (a shorter one times out on a
// busy machine and leaves a SET that lands after the try's clean-up, whose
// key then blocks every majority until its TTL).
func (l *quorum) nodeTimeout() time.Duration {
	if l.o.NodeTimeout > 0 {
		return l.o.NodeTimeout
	}
	return min(max(l.o.TTL/20, 200*time.Millisecond), l.o.TTL/2)
}

// drift is the distlock page's clock drift allowance: 1 % of the TTL
// plus 2 ms (pottery's _CLOCK_DRIFT_FACTOR and its .002 alike).
func (l *quorum) drift() time.Duration {
	return l.o.TTL/100 + 2*time.Millisecond
}

// onEvery runs f on every node in parallel, each bounded by the node
// timeout, and returns each node's reply and error.
func (l *quorum) onEvery(ctx context.Context, f func(ctx context.Context, c redis.UniversalClient) (int64, error)) ([]int64, []error) {
	n, errs := make([]int64, len(l.nodes)), make([]error, len(l.nodes))
	var wg sync.WaitGroup
	for i, c := range l.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, l.nodeTimeout())
			defer cancel()
			n[i], errs[i] = f(nctx, c)
		}()
	}
	wg.Wait()
	return n, errs
}

// Acquire tries until the wait timeout. A try that fails with a node
// unheard leaves the outcome unknown only if it was the last.
func (l *quorum) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	l.seq++
	tok := fmt.Sprintf("c%d-%d-%x", l.env.Client, l.seq, l.env.Rand.Uint64())
	drift := l.drift()
	begin := l.env.Clock.Mono()
	for {
		start, wallStart := l.env.Clock.Mono(), l.env.Clock.Now()
		yes, errs := l.onEvery(ctx, func(ctx context.Context, c redis.UniversalClient) (int64, error) {
			return l.take(ctx, c, key, tok)
		})
		votes, unheard := 0, 0
		for i := range yes {
			votes += int(yes[i])
			if errs[i] != nil {
				unheard++
			}
		}
		need := len(l.nodes)/2 + 1
		if l.bug == bugHalfQuorum {
			need = len(l.nodes) / 2 // planted: half is not a majority
		}
		validity := l.o.TTL - (l.env.Clock.Mono() - start) - drift
		switch l.bug {
		case bugNoValidity:
			validity = l.o.TTL // planted: the try's own time not subtracted
		case bugWallElapsed:
			validity = l.o.TTL - l.env.Clock.Now().Sub(wallStart) - drift // planted: wall clock
		}
		if votes >= need && validity > 0 && l.bug == bugLockedIndex {
			validity = l.locked(ctx, key, tok) // planted: pottery's locked()
		}
		if votes >= need && validity > 0 {
			return &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now(), Validity: validity}, nil
		}
		l.onEvery(context.WithoutCancel(ctx), func(ctx context.Context, c redis.UniversalClient) (int64, error) {
			return l.free(ctx, c, key, tok)
		})
		if l.env.Clock.Mono()-begin >= l.o.WaitTimeout {
			if unheard > 0 {
				return nil, fmt.Errorf("planted quorum: %d nodes unheard on the last try: outcome unknown: %w", unheard, errors.Join(errs...))
			}
			return nil, lockimpl.ErrNotAcquired
		}
		if err := sleep(ctx, l.env, l.retryDelay()); err != nil {
			return nil, err
		}
	}
}

// retryDelay is the wait before the next try: the spec's retry delay and
// as much again drawn at random, the Redlock page's random delay that
// keeps contenders from retrying in step. With none given (a spec that
// leaves pacing to the lock), the author's own 100 ms: a millisecond's
// floor would be no spread at all next to a try's round trips.
func (l *quorum) retryDelay() time.Duration {
	d := l.o.RetryDelay
	if d <= 0 {
		d = 100 * time.Millisecond
	}
	return d + time.Duration(l.env.Rand.Int64N(int64(d)))
}

// ownPTTL is pottery's _acquired_script (redlock.py): the key's PTTL
// where it holds tok, else 0.
var ownPTTL = redis.NewScript(`if redis.call('get', KEYS[1]) == ARGV[1] then
    local pttl = redis.call('pttl', KEYS[1])
    return (pttl > 0) and pttl or 0
end
return 0`)

// locked is pottery's AIORedlock.locked(): the holders' TTLs at the
// index n//2 - (n even), less the drift and the query's own time; 0 (a
// nanosecond here, which a careful holder gives up at once: a zero
// Validity would mean none told) when no majority answered with one.
func (l *quorum) locked(ctx context.Context, key, tok string) time.Duration {
	start := l.env.Clock.Mono()
	pttl, _ := l.onEvery(ctx, func(ctx context.Context, c redis.UniversalClient) (int64, error) {
		return ownPTTL.Run(ctx, c, []string{key}, tok).Int64()
	})
	var ttls []time.Duration
	for _, ms := range pttl {
		if ms > 0 {
			ttls = append(ttls, time.Duration(ms)*time.Millisecond)
		}
	}
	n := len(l.nodes)
	if len(ttls) <= n/2 {
		return time.Nanosecond
	}
	slices.Sort(ttls)
	index := n / 2
	if n%2 == 0 {
		index--
	}
	return max(ttls[index]-l.drift()-(l.env.Clock.Mono()-start), time.Nanosecond)
}

// take takes key on one node for tok: 1 if taken.
func (l *quorum) take(ctx context.Context, c redis.UniversalClient, key, tok string) (int64, error) {
	if l.hash {
		lease := l.o.TTL.Milliseconds() // RedissonMultiLock, 3.11.1: waitTime -1 keeps the leaseTime
		if l.bug == bugLeaseFromWait {
			lease = noWait * 2 // planted: waitTime × 2 (3.11.0)
		}
		return hashLock.Run(ctx, c, []string{key}, lease, tok).Int64()
	}
	err := c.Do(ctx, "SET", key, tok, "NX", "PX", l.o.TTL.Milliseconds()).Err()
	if err == nil {
		return 1, nil
	}
	return 0, nilIsNo(err)
}

// free gives key back on one node if it is tok's: 1 if deleted.
func (l *quorum) free(ctx context.Context, c redis.UniversalClient, key, tok string) (int64, error) {
	if l.hash {
		return hashUnlock.Run(ctx, c, []string{key}, tok, l.o.TTL.Milliseconds()).Int64()
	}
	return compareAndDelete.Run(ctx, c, []string{key}, tok).Int64()
}

// Release deletes the key on every node where it is still ours: released
// when a majority deleted it, not ours when every node answered and fewer
// did, unknown otherwise.
func (l *quorum) Release(ctx context.Context, lease *lockimpl.Lease) error {
	n, errs := l.onEvery(ctx, func(ctx context.Context, c redis.UniversalClient) (int64, error) {
		if l.bug == bugForceUnlock { // planted: forceUnlockAsync on every node
			return c.Del(ctx, lease.Key).Result()
		}
		return l.free(ctx, c, lease.Key, lease.Token)
	})
	deleted, unheard := 0, 0
	for i := range n {
		deleted += int(n[i])
		if errs[i] != nil {
			unheard++
		}
	}
	switch {
	case deleted > len(l.nodes)/2:
		return nil
	case unheard == 0:
		return lockimpl.ErrNotHeld
	}
	return fmt.Errorf("planted quorum: release: %d nodes unheard: outcome unknown", unheard)
}

// The quorum locks: the correct original and its planted variations.
var (
	Quorum     = quorumInfo("planted-quorum", "correct: Redlock on 5 masters", "")
	HalfQuorum = quorumInfo("planted-half-quorum", "quorum counting: N/2 for a majority", bugHalfQuorum)
	NoValidity = quorumInfo("planted-no-validity", "validity: the try's time not subtracted", bugNoValidity)
	// ForceUnlock is catalogue 10 (Redisson #542).
	ForceUnlock = quorumInfo("planted-force-unlock", "release: DEL on every node (Redisson #542)", bugForceUnlock)
	// WallElapsed is catalogue 24 (RedLock.net cb50082).
	WallElapsed = quorumInfo("planted-wall-elapsed", "validity: the try timed on the wall clock (RedLock.net cb50082)", bugWallElapsed)
	// HashQuorum is Redisson's RedLock (a MultiLock needing a majority)
	// over its hash lock, as 3.11.1 runs it; LeaseFromWait is catalogue 14
	// (Redisson #2172), as 3.11.0 did.
	HashQuorum    = quorumLock("planted-hash-quorum", "correct: Redisson's RedLock over its hash script on 5 masters", "", true)
	LeaseFromWait = quorumLock("planted-lease-from-wait", "acquire: the lease from waitTime × 2 = -2 ms (Redisson #2172)", bugLeaseFromWait, true)
	// LockedIndex is catalogue 21 (pottery PR 644).
	LockedIndex = quorumInfo("planted-locked-index", "validity: locked()'s TTL index n//2 - (n even) (pottery PR 644)", bugLockedIndex)
)
