package lockimpl

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redlock is the RedLock of seed 002 (RedLock方案, five steps) as the Redis
// distlock page specifies it: on N independent masters (5 by default, "5个
// redis master节点是比较合理的RedLock最小配置"), read the time, SET key token
// NX PX ttl on every node in parallel, each with a fail-fast timeout much
// smaller than the TTL ("申请资源需要有一个快速失败时间"), and hold the lock
// when a majority (N/2+1) accepted and the validity
//
//	validity = TTL − elapsed − drift,  drift = 0.01·TTL + 2 ms
//
// is positive; otherwise release on every node and retry after a random
// delay. What the documents say breaks it: a pause past the validity, and a
// node whose clock jumps forward expiring its key early (seed 002 缺陷).
//
// Node timeout default: max(TTL/50, 10·RTT, 5 ms), RTT being the network's
// nominal round trip (Env.RoundTrip). distlock and seed 002 ask for a
// timeout small compared with the TTL (5–50 ms for a 10 s TTL) that still
// exceeds the network's latency, so that a dead node costs little validity
// and a live one is not counted as failed. TTL/50 (200 ms for 10 s) bounds
// what a dead node eats at 2% of a long TTL; ten round trips keep a live
// node's reply inside the timeout through jitter past its nominal bound and
// the scheduling delays of a loaded machine (with the battery's 1 ms ± 1 ms
// links: 40 ms); 5 ms is the floor when the round trip is unknown. With the
// battery's short TTLs (150 ms to 2 s) the latency term dominates: a timeout
// near the latency would make almost every attempt end unknown, which
// exercises nothing. A node that answers late is counted as failed,
// outcome unknown; the lock stops waiting for it, but its command is not
// cancelled and ends under the client's own timeout, so the connection
// stays usable (withTimeout).
//
// Clock: elapsed is measured on the client's monotonic clock
// (Env.Clock.Mono), as distlock prescribes, so a jump of the client's wall
// clock cannot stretch the validity; drift of that clock still shows, which
// is what the drift term is for. Expiry itself is each server's PX.
//
// Outcome of a failed Acquire: ErrNotAcquired unless some attempt could
// have left this client's key on a majority (SET or its release had an
// unknown outcome there); a node that refused the connection counts as a
// definite "no".
//
// Failpoints: redlock/before-attempt, redlock/before-node (once per node, in
// node order, before its SET is launched), redlock/after-nodes (all replies
// in, before the validity is computed), redlock/after-quorum (won),
// redlock/before-unwind (failed attempt, before releasing every node),
// redlock/before-release.
//
// Retry: distlock retries a failed attempt "after a random delay in order to
// try to desynchronize multiple clients trying to acquire the lock for the
// same resource at the same time (this may result in a split brain condition
// where nobody wins)": a delay uniform in [0, RetryDelay), as the document
// says. Many clients on one key split the vote again and again; that is the
// algorithm's liveness under contention, reported as such, not hidden by a
// back-off the document does not have.
//
// Options: Nodes (default 5; must equal len(env.Nodes) when set), TTL
// (default 10 s, distlock's example), NodeTimeout (max(TTL/50, 10·RTT, 5 ms)),
// RetryCount (attempts, default 3), RetryDelay (200 ms: each wait is uniform in
// [0, RetryDelay), distlock's random delay).
type redlock struct {
	*base
	nodes []redis.UniversalClient
	// broken are deliberate bugs (lock.extra, never by default), so a
	// quorum scenario can show that it catches the Redlock that has them:
	// "quorum: half" counts N/2 as a majority; "validity: unchecked" does
	// not subtract the time the nodes took (validity = TTL − drift, on
	// acquire and on extend: redsync's Extend before v4.4.0), so a lock
	// whose replies came back after its keys expired is still trusted.
	halfQuorum, skipValidity bool
}

func init() {
	Register(Info{
		Name:   "redlock",
		Points: points("redlock", "before-attempt", "before-node", "after-nodes", "after-quorum", "before-unwind", "before-release"),
		Validate: func(o Options, nodes int) error {
			if o.Nodes != 0 && o.Nodes != nodes {
				return &OptionError{"nodes", fmt.Sprintf("redlock asks for %d nodes but the scenario's topology has %d (nodes: %d)", o.Nodes, nodes, nodes)}
			}
			return nil
		},
		Source:  "seed 002 RedLock方案; redis.io distlock",
		Summary: "SET NX PX on N independent masters in parallel, quorum N/2+1, validity = TTL − elapsed − drift",
		// distlock: a majority of independent masters, SET NX PX on each,
		// compare-and-delete on each to release; the lease's validity runs
		// from each try's start, an extend's from its own (Extend, below:
		// the page's "within the validity time"). Its Extend
		// (compareAndPexpire) refreshes a key only where it still holds
		// the token, as redsync's default touch script: a node that lost
		// the key keeps it lost, so no extend_recreates.
		Claims: Claims{Topology: Quorum, Expiry: ServerExpiry, Release: OwnerCheckedRelease, ExtendChecked: true},
		Nodes: func(o Options) int {
			if o.Nodes > 0 {
				return o.Nodes
			}
			return 5
		},
		New: func(env Env, o Options) (Locker, error) {
			ttl := o.TTL
			if ttl == 0 {
				ttl = 10 * time.Second
			}
			b, err := newBase("redlock", env, o, Options{TTL: ttl, RetryCount: 3, RetryDelay: 200 * time.Millisecond,
				NodeTimeout: redlockNodeTimeout(ttl, env.RoundTrip)})
			if err != nil {
				return nil, err
			}
			if o.Nodes != 0 && o.Nodes != len(env.Nodes) {
				return nil, fmt.Errorf("redlock: options ask for %d nodes, env has %d", o.Nodes, len(env.Nodes))
			}
			return &redlock{base: b, nodes: env.Nodes, halfQuorum: o.Extra["quorum"] == "half",
				skipValidity: o.Extra["validity"] == "unchecked"}, nil
		},
	})
}

// redlockNodeTimeout is the default per-node timeout (see redlock).
func redlockNodeTimeout(ttl, rtt time.Duration) time.Duration {
	return max(ttl/50, 10*rtt, 5*time.Millisecond)
}

// nodeResult is one node's answer to one command.
type nodeResult int

const (
	nodeNo      nodeResult = iota // definite: key not set / not deleted (or never sent)
	nodeYes                       // definite: SET took / DEL deleted
	nodeUnknown                   // timeout, reset: may or may not have happened
	// nodeGone: a release that timed out, sent again, found no key of ours:
	// the key is gone, but whether the first send deleted it is unknown.
	nodeGone
)

// classifyNode turns a reply (with its error) into a nodeResult.
func classifyNode(yes bool, err error) nodeResult {
	switch {
	case err == nil && yes:
		return nodeYes
	case Replied(err) || NotSent(err):
		return nodeNo
	}
	return nodeUnknown
}

// quorum is N/2+1 (N/2 when deliberately broken).
func (l *redlock) quorum() int {
	if l.halfQuorum {
		return len(l.nodes) / 2
	}
	return len(l.nodes)/2 + 1
}

// Acquire implements Locker.
func (l *redlock) Acquire(ctx context.Context, key string) (*Lease, error) {
	maybeHeld := false
	for n := 1; n <= l.o.RetryCount; n++ {
		if err := l.hit(ctx, "before-attempt"); err != nil {
			return nil, err
		}
		tok := l.token()
		acquired := l.env.Clock.Now()
		start := l.env.Clock.Mono() // step 1: the local time
		// Step 2: SET NX PX on every node, fail-fast.
		res := make([]nodeResult, len(l.nodes))
		var wg sync.WaitGroup
		for i, c := range l.nodes {
			if err := l.hit(ctx, "before-node"); err != nil {
				return nil, err // crashed mid-launch: the nodes already asked keep their keys
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := withTimeout(ctx, l.o.NodeTimeout, func(ctx context.Context) error {
					return c.Do(ctx, "SET", key, tok, "NX", "PX", l.o.TTL.Milliseconds()).Err()
				})
				res[i] = classifyNode(true, err)
			}()
		}
		wg.Wait()
		if err := l.hit(ctx, "after-nodes"); err != nil {
			return nil, err
		}
		// Step 3–4: quorum and validity.
		elapsed := l.env.Clock.Mono() - start
		drift := l.o.TTL/100 + 2*time.Millisecond
		validity := l.o.TTL - elapsed - drift
		if l.skipValidity {
			validity = l.o.TTL - drift
		}
		yes := count(res, nodeYes)
		if yes >= l.quorum() && validity > 0 {
			if err := l.hit(ctx, "after-quorum"); err != nil {
				return nil, err
			}
			return &Lease{Key: key, Token: tok, Validity: validity, Acquired: acquired}, nil
		}
		// Step 5: release every node, even those that said no.
		if err := l.hit(ctx, "before-unwind"); err != nil {
			return nil, err
		}
		del := l.releaseAll(ctx, key, tok)
		left := 0
		for i := range res {
			if res[i] != nodeNo && del[i] != nodeYes && del[i] != nodeNo && del[i] != nodeGone {
				left++ // set (or maybe set) and not surely cleaned up
			}
		}
		if left >= l.quorum() {
			maybeHeld = true
		}
		if n < l.o.RetryCount {
			if err := l.env.sleep(ctx, time.Duration(l.env.Rand.Int64N(int64(l.o.RetryDelay)))); err != nil {
				return nil, err
			}
		}
	}
	if maybeHeld {
		return nil, fmt.Errorf("redlock: no quorum in %d attempts, but an attempt may still hold a majority: outcome unknown", l.o.RetryCount)
	}
	return nil, fmt.Errorf("redlock: %w: no quorum of %d/%d in %d attempts", ErrNotAcquired, l.quorum(), len(l.nodes), l.o.RetryCount)
}

// releaseRounds is how many times releaseAll sends the compare-and-delete
// to a node whose answer stayed unknown.
const releaseRounds = 3

// releaseAll runs the compare-and-delete on every node in parallel, each
// bounded by the node timeout, and sends it again, up to releaseRounds in
// all, to the nodes whose answer was unknown. It deletes only this
// client's own token, so a repeat can harm no one; and a key left behind
// by a timed-out release blocks every client for a whole TTL. The timeouts
// that leave it are mostly transient (a node timeout of tens of
// milliseconds against a client descheduled for longer, seen: a loaded
// machine's 100-400 ms stalls turning each release and unwind into
// 'outcome unknown' and the key into a TTL-long hold of nobody), and the
// next round, sent once the client runs again, gets through.
func (l *redlock) releaseAll(ctx context.Context, key, tok string) []nodeResult {
	res := make([]nodeResult, len(l.nodes))
	todo := make([]int, len(l.nodes))
	for i := range todo {
		todo[i] = i
	}
	for round := 0; round < releaseRounds && len(todo) > 0 && ctx.Err() == nil; round++ {
		// Each round waits twice as long as the last: a release has no
		// validity to protect, only a key to clear, and a client that
		// stalled once is likely to stall again.
		l.onNodes(ctx, l.o.NodeTimeout<<round, todo, res, compareAndDelete, []string{key}, tok)
		next := todo[:0]
		for _, i := range todo {
			switch {
			case res[i] == nodeUnknown:
				next = append(next, i)
			case res[i] == nodeNo && round > 0:
				res[i] = nodeGone
			}
		}
		todo = next
	}
	return res
}

// onEveryNode runs script on every node in parallel, each bounded by the
// node timeout; a node said yes when the script returned 1.
func (l *redlock) onEveryNode(ctx context.Context, script *redis.Script, keys []string, args ...any) []nodeResult {
	res := make([]nodeResult, len(l.nodes))
	all := make([]int, len(l.nodes))
	for i := range all {
		all[i] = i
	}
	l.onNodes(ctx, l.o.NodeTimeout, all, res, script, keys, args...)
	return res
}

// onNodes runs script on the nodes numbered in idx, in parallel, each
// bounded by timeout, and writes their answers into res.
func (l *redlock) onNodes(ctx context.Context, timeout time.Duration, idx []int, res []nodeResult, script *redis.Script, keys []string, args ...any) {
	var wg sync.WaitGroup
	for _, i := range idx {
		c := l.nodes[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			err := withTimeout(ctx, timeout, func(ctx context.Context) error {
				var err error
				n, err = script.Run(ctx, c, keys, args...).Int64()
				return err
			})
			res[i] = classifyNode(err == nil && n == 1, err)
		}()
	}
	wg.Wait()
}

// count is how many of rs are r.
func count(rs []nodeResult, r nodeResult) int {
	k := 0
	for _, x := range rs {
		if x == r {
			k++
		}
	}
	return k
}

// Release implements Locker: compare-and-delete on every node. Nil when at
// least one node deleted our key and no node left the outcome unknown for a
// majority; ErrNotHeld when every node answered and none had our key (all
// expired or taken); otherwise unknown.
func (l *redlock) Release(ctx context.Context, lease *Lease) error {
	if err := l.hit(ctx, "before-release"); err != nil {
		return err
	}
	res := l.releaseAll(ctx, lease.Key, lease.Token)
	switch {
	case count(res, nodeUnknown) >= l.quorum():
		return fmt.Errorf("redlock: release on %d nodes: outcome unknown", count(res, nodeUnknown))
	case count(res, nodeYes) > 0:
		return nil
	case count(res, nodeUnknown)+count(res, nodeGone) == 0:
		return fmt.Errorf("redlock: no node held our key: %w", ErrNotHeld)
	}
	return fmt.Errorf("redlock: released nowhere, %d nodes unknown: outcome unknown", count(res, nodeUnknown)+count(res, nodeGone))
}

// Extend implements Extender as redsync's Extend does (v4.4.0 on): the
// compare-and-pexpire on every node in parallel, each bounded by the node
// timeout; extended when a majority said yes and the validity, recomputed
// from the extend's start, is positive. Unlike Release, a minority of
// yeses is not an extension: the lock holds only on a majority.
func (l *redlock) Extend(ctx context.Context, lease *Lease, ttl time.Duration) error {
	start := l.env.Clock.Mono()
	res := l.onEveryNode(ctx, compareAndPexpire, []string{lease.Key}, lease.Token, ttl.Milliseconds())
	// The validity runs from now: the keys were extended at the earliest
	// at start, so they last until start + ttl at the latest.
	validity := ttl - (l.env.Clock.Mono() - start) - (ttl/100 + 2*time.Millisecond)
	if l.skipValidity {
		validity = ttl - (ttl/100 + 2*time.Millisecond)
	}
	yes := count(res, nodeYes)
	switch {
	case yes >= l.quorum() && validity > 0:
		lease.Validity, lease.Acquired = validity, l.env.Clock.Now()
		return nil
	case yes+count(res, nodeUnknown) < l.quorum():
		return fmt.Errorf("redlock: extend on %d/%d nodes: %w", yes, len(l.nodes), ErrNotHeld)
	}
	return fmt.Errorf("redlock: extend on %d/%d nodes (%d unknown), validity %v: outcome unknown", yes, len(l.nodes), count(res, nodeUnknown), validity)
}
