// Package planted is a battery's own test: locks with bugs planted in them,
// each a small variation of a correct lock written next to it, put on trial
// through lockstorm's public API as any user would (no lockstorm internals,
// no failpoints of lockstorm's own locks). Each planted lock declares the
// claims of its correct original, as its author, who believes it correct,
// would; no shipped scenario names any of them. planted_test.go runs the
// shipped battery against every lock and asserts that each planted one is
// flagged with its class (unsafe or deadlock) and each correct one is not.
//
// The bugs are spread over the parts of a lock: acquire, expiry, token,
// release, renewal, quorum counting, validity and the server-side script;
// two more are client programs in Python (examples/clients/planted_lock.py)
// speaking the --exec protocol.
package planted

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// singleClaims are what the author of every single-instance lock here
// believes: one master, the TTL set with the lock, a release that deletes
// only its own token, and a grant whose reply came back after nearly the
// TTL given back (Acquire: timed from before the try's command on the
// monotonic clock): grant_checked and grant_monotonic.
var singleClaims = lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry,
	Release: lockimpl.OwnerCheckedRelease, GrantChecked: true, GrantMonotonic: true}

// Bugs of the single-instance lock. The zero value is the correct lock.
type singleBug string

const (
	bugNone singleBug = ""
	// acquire: SETNX, then PEXPIRE: a crash between them leaves a key that
	// never expires.
	bugSetnxThenPexpire singleBug = "setnx-then-pexpire"
	// expiry: the TTL passed to PX in microseconds: a thousand times too
	// long, so a dead holder's lock outlives every waiter.
	bugTTLMicros singleBug = "ttl-micros"
	// token: the owner is the process id, the same for every client of one
	// process (a pool of workers in one service).
	bugPIDToken singleBug = "pid-token"
	// release: GET, compare in the client, then DEL: the lock can change
	// hands between the GET and the DEL.
	bugGetThenDel singleBug = "get-then-del"
	// release: DEL whoever holds the key.
	bugPlainDel singleBug = "plain-del"
	// server-side script: the compare-and-delete compares with ~= instead
	// of ==, so it deletes the key when it is someone else's.
	bugScriptNeq singleBug = "script-neq"
	// renewal: the watchdog's script sets the new TTL with PEXPIRE given
	// seconds (the unit of EXPIRE): a sub-second TTL becomes 0 ms and the
	// first renewal deletes the lock it meant to keep.
	bugRenewSeconds singleBug = "renew-seconds"
	// release: reports ok whatever the compare-and-delete returned, as
	// go-redsync v4.0.3 did (its PR #61): a late release on an expired or
	// re-taken key says it freed it.
	bugLyingRelease singleBug = "lying-release"
	// extend: PEXPIRE without the owner check, ok whenever the key exists:
	// an extend after the key changed hands renews the next holder's.
	bugBareExtend singleBug = "bare-extend"
	// release: the script deletes ARGV[1] (the token) where it meant
	// KEYS[1]: it deletes nothing and says it did.
	bugDelToken singleBug = "del-token"
	// acquire: any error from SET is read as "not acquired", a lost reply
	// included: the SET may have landed, and the key stays to its TTL
	// while its client believes it failed.
	bugErrIsNo singleBug = "err-is-no"

	// The catalogue's (shared/catalogue.md) watchdog bugs of libraries not
	// reachable here, each a variation of planted-single-wd.

	// renewal (catalogue 11, Redisson #597, fixed by e76d28a76 in 2.6.0):
	// the watchdog renews with a bare PEXPIRE, so after its holder's key
	// expired and another client took it, it prolongs the other's lock.
	bugRenewBare singleBug = "renew-bare"
	// release (catalogue 12, Redisson #1602, fixed by f5e3618b3 in
	// 2.13.1/3.8.1; the same pattern as catalogue 23's analysis of Spring's
	// stopRenew): the watchdog is cancelled only after the release
	// answered, so a release that failed on the network leaves it renewing
	// a lock nobody holds, for as long as the client lives.
	bugRenewAfterFailedRelease singleBug = "renew-after-failed-release"
	// renewal (catalogue 20, python-redis-lock #85/#91): the renewal
	// thread ends at the first error of any kind (a connection blip
	// included) and tells nobody: the holder holds on while its key
	// expires.
	bugRenewDiesOnError singleBug = "renew-dies-on-error"
	// renewal (catalogue 13, Redisson #2515, fixed by PR #2518 in 3.12.1):
	// a renewal that failed on the network ends the watchdog but leaves its
	// entry in the table of renewed names, and the next acquire of that
	// name finds the entry and starts no watchdog (putIfAbsent): later
	// locks of the name expire while held.
	bugRenewStaleEntry singleBug = "renew-stale-entry"
	// renewal (catalogue 25, RedLock.net 25777fa in 1.7.1, issues #48,
	// #68, #116): the extend script SETs the key when it is missing, so a
	// renewal after a gap re-takes the lock silently.
	bugRenewRecreate singleBug = "renew-recreate"
	// acquire (catalogue 15, Redisson #7272, fix proposed in PR #7277): the
	// try's reply completes it in a callback of its own; an acquire that
	// stopped waiting for it cancels a renewal not yet scheduled, and the
	// late grant's callback then schedules one for a lock nobody holds:
	// its key's TTL keeps jumping back up.
	bugRenewAfterAbandon singleBug = "renew-after-abandon"
)

// The scripts of the correct lock (the Redis distlock page's), and the
// planted script with its one changed operator.
var (
	compareAndDelete = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	compareAndDelNeq = redis.NewScript(`if redis.call("get", KEYS[1]) ~= ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`)
	compareAndExpire = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
	compareAndDelArg = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then redis.call("del", ARGV[1]) return 1 else return 0 end`)
	// RedLock.net's extend script (25777fa): a missing key is set again.
	expireOrRecreate = redis.NewScript(`local v = redis.call("get", KEYS[1])
if v == false then if redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[2]) then return 1 end return 0
elseif v == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`)
)

// single is SET key token NX PX ttl, compare-and-delete release, and with
// watchdog a renewal every TTL/3 by compare-and-pexpire, stopped before the
// release. A grant whose reply took nearly the TTL is given back: on a busy
// machine a client can read its SET's reply after the key expired.
type single struct {
	env      lockimpl.Env
	o        lockimpl.Options
	c        redis.UniversalClient
	bug      singleBug
	watchdog bool
	await    bool // a try is awaited no longer than the wait timeout
	seq      int
	mu       sync.Mutex // dogs: Close comes from the runner's goroutine
	dogs     map[string]*dog
	renewed  map[string]string // key → token of its live watchdog's lease
}

func singleInfo(name, summary string, bug singleBug, watchdog bool) lockimpl.Info {
	return singleInfoAwait(name, summary, bug, watchdog, false)
}

// singleInfoAwait is singleInfo for a lock whose acquire, with await,
// stops waiting for a try's reply at the wait timeout (tryAwait).
func singleInfoAwait(name, summary string, bug singleBug, watchdog, await bool) lockimpl.Info {
	claims := singleClaims
	claims.Renewal = watchdog
	return lockimpl.Info{
		Name:    name,
		Summary: summary,
		Claims:  claims,
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			if o.TTL <= 0 || o.WaitTimeout <= 0 || len(env.Nodes) == 0 {
				return nil, fmt.Errorf("%s: need lock.ttl, lock.wait_timeout and a node", name)
			}
			return &single{env: env, o: o, c: env.Nodes[0], bug: bug, watchdog: watchdog, await: await,
				dogs: map[string]*dog{}, renewed: map[string]string{}}, nil
		},
	}
}

// token is this holder's owner value.
func (l *single) token() string {
	l.seq++
	if l.bug == bugPIDToken {
		return fmt.Sprintf("pid-%d", os.Getpid()) // planted: one owner per process
	}
	return fmt.Sprintf("c%d-%d-%x", l.env.Client, l.seq, l.env.Rand.Uint64())
}

// Acquire tries until the wait timeout; a command without a reply is an
// unknown outcome.
func (l *single) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	tok := l.token()
	start := l.env.Clock.Mono()
	var gaveBack error // a give-back whose outcome is unknown: the key may still be ours
	for {
		try := l.env.Clock.Mono()
		var ok bool
		var err error
		if l.await {
			ok, err = l.tryAwait(ctx, key, tok, l.o.WaitTimeout)
		} else {
			ok, err = l.set(ctx, key, tok)
		}
		if err != nil && l.bug == bugErrIsNo {
			// planted: an error read as a no
			return nil, &lockimpl.AttemptError{Token: tok, Err: lockimpl.ErrNotAcquired}
		}
		if err != nil {
			return nil, &lockimpl.AttemptError{Token: tok, Err: fmt.Errorf("planted %s: acquire: outcome unknown: %w", l.bug, err)}
		}
		if ok && l.env.Clock.Mono()-try >= l.o.TTL-l.o.TTL/10 {
			// The reply came so late that the key has (nearly) expired:
			// not a lock to trust. Give it back and try again.
			if err := compareAndDelete.Run(context.WithoutCancel(ctx), l.c, []string{key}, tok).Err(); err != nil && !errors.Is(err, redis.Nil) {
				gaveBack = err
			}
			ok = false
		}
		if ok {
			lease := &lockimpl.Lease{Key: key, Token: tok, Acquired: l.env.Clock.Now()}
			if l.watchdog {
				l.startDog(key, tok)
			}
			return lease, nil
		}
		if l.env.Clock.Mono()-start >= l.o.WaitTimeout {
			if gaveBack != nil {
				// Not a definite no: the key we tried to give back may
				// still hold our token until its TTL.
				return nil, &lockimpl.AttemptError{Token: tok, Err: fmt.Errorf("planted %s: acquire: give-back failed, outcome unknown: %w", l.bug, gaveBack)}
			}
			return nil, &lockimpl.AttemptError{Token: tok, Err: lockimpl.ErrNotAcquired}
		}
		if err := sleep(ctx, l.env, max(l.o.RetryDelay, time.Millisecond)); err != nil {
			return nil, err
		}
	}
}

// errAbandoned is a try whose reply the acquire stopped waiting for.
var errAbandoned = errors.New("stopped waiting for the try's reply at the wait timeout")

// tryAwait is one try whose reply is awaited no longer than wait, the
// acquire's wait timeout, as a caller interrupts a lock call that takes
// longer than it will wait (Redisson's lockInterruptibly, in issue 7272's
// report). Not the wait time left: a last try begun with a millisecond to
// spare would end unknown on a healthy link every time. Its reply completes
// the try in a goroutine of its own, the future's callback; a try the
// acquire stopped waiting for is an unknown outcome (its SET may land),
// and its grant, when the reply comes, is given back, as nobody holds it.
// With bugRenewAfterAbandon the callback starts the watchdog instead: the
// acquire, giving up, had no renewal yet to cancel.
func (l *single) tryAwait(ctx context.Context, key, tok string, wait time.Duration) (bool, error) {
	type reply struct {
		ok  bool
		err error
	}
	var mu sync.Mutex
	abandoned := false
	replies := make(chan reply, 1)
	go func() {
		ok, err := l.set(context.WithoutCancel(ctx), key, tok)
		mu.Lock()
		gone := abandoned
		if !gone {
			replies <- reply{ok, err}
		}
		mu.Unlock()
		switch {
		case !gone || !ok:
		case l.bug == bugRenewAfterAbandon && l.watchdog:
			l.startDog(key, tok) // planted: renewal for a try nobody waits for
		default:
			_ = compareAndDelete.Run(context.WithoutCancel(ctx), l.c, []string{key}, tok).Err()
		}
	}()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	timeUp := make(chan struct{})
	go func() {
		_ = sleep(wctx, l.env, wait)
		close(timeUp)
	}()
	select {
	case r := <-replies:
		return r.ok, r.err
	case <-timeUp:
	}
	mu.Lock()
	defer mu.Unlock()
	select {
	case r := <-replies: // the reply came as the time ran out
		return r.ok, r.err
	default:
		abandoned = true
		return false, errAbandoned
	}
}

// set takes the key if free.
func (l *single) set(ctx context.Context, key, tok string) (bool, error) {
	switch l.bug {
	case bugSetnxThenPexpire: // planted: two commands
		ok, err := l.c.SetNX(ctx, key, tok, 0).Result()
		if err != nil || !ok {
			return false, err
		}
		return true, l.c.PExpire(ctx, key, l.o.TTL).Err()
	case bugTTLMicros: // planted: µs where PX wants ms
		err := l.c.Do(ctx, "SET", key, tok, "NX", "PX", l.o.TTL.Microseconds()).Err()
		return err == nil, nilIsNo(err)
	}
	err := l.c.Do(ctx, "SET", key, tok, "NX", "PX", l.o.TTL.Milliseconds()).Err()
	return err == nil, nilIsNo(err)
}

func nilIsNo(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// Release stops the watchdog, then deletes the key if it is still ours.
func (l *single) Release(ctx context.Context, lease *lockimpl.Lease) error {
	if l.bug != bugRenewAfterFailedRelease {
		l.stopDog(lease)
	}
	var n int64
	var err error
	switch l.bug {
	case bugGetThenDel: // planted: check and delete are two commands
		var v string
		if v, err = l.c.Get(ctx, lease.Key).Result(); err == nil && v == lease.Token {
			n, err = l.c.Del(ctx, lease.Key).Result()
		}
		err = nilIsNo(err)
	case bugPlainDel: // planted: no owner check
		n, err = l.c.Del(ctx, lease.Key).Result()
	case bugScriptNeq: // planted: ~= in the script
		n, err = compareAndDelNeq.Run(ctx, l.c, []string{lease.Key}, lease.Token).Int64()
	case bugDelToken: // planted: DEL ARGV[1] for KEYS[1]
		n, err = compareAndDelArg.Run(ctx, l.c, []string{lease.Key}, lease.Token).Int64()
	default:
		n, err = compareAndDelete.Run(ctx, l.c, []string{lease.Key}, lease.Token).Int64()
	}
	if l.bug == bugRenewAfterFailedRelease && err == nil {
		l.stopDog(lease) // planted: only once the release answered
	}
	switch {
	case err != nil:
		return fmt.Errorf("planted %s: release: outcome unknown: %w", l.bug, err)
	case n == 0 && l.bug != bugLyingRelease: // planted: a 0 is ok too
		return lockimpl.ErrNotHeld
	}
	return nil
}

// Extend sets the key's TTL to ttl if it still holds the lease's token
// (compare-and-pexpire).
func (l *single) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	var n int64
	var err error
	if l.bug == bugBareExtend { // planted: no owner check
		var ok bool
		ok, err = l.c.PExpire(ctx, lease.Key, ttl).Result()
		if ok {
			n = 1
		}
	} else {
		n, err = compareAndExpire.Run(ctx, l.c, []string{lease.Key}, lease.Token, ttl.Milliseconds()).Int64()
	}
	switch {
	case err != nil:
		return fmt.Errorf("planted %s: extend: outcome unknown: %w", l.bug, err)
	case n == 0:
		return lockimpl.ErrNotHeld
	}
	return nil
}

// Close stops every watchdog: a crashed client renews nothing.
func (l *single) Close() error {
	l.mu.Lock()
	dogs := l.dogs
	l.dogs = map[string]*dog{}
	l.renewed = map[string]string{}
	l.mu.Unlock()
	for _, d := range dogs {
		d.stop()
	}
	return nil
}

// dog is a running watchdog.
type dog struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (d *dog) stop() {
	d.cancel()
	<-d.done
}

// startDog starts tok's watchdog on key, recording it as key's renewal
// entry; with bugRenewStaleEntry an entry already there (a dead watchdog's
// included) means none is started.
func (l *single) startDog(key, tok string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.renewed[key]; ok && l.bug == bugRenewStaleEntry {
		return // planted: the stale entry stands for a watchdog
	}
	l.renewed[key] = tok
	l.dogs[tok] = l.watch(key, tok)
}

// stopDog stops lease's watchdog, if it has one.
func (l *single) stopDog(lease *lockimpl.Lease) {
	l.mu.Lock()
	d := l.dogs[lease.Token]
	delete(l.dogs, lease.Token)
	l.mu.Unlock()
	if d != nil {
		d.stop()
	}
}

// endDog removes key's renewal entry when it is tok's.
func (l *single) endDog(key, tok string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.renewed[key] == tok {
		delete(l.renewed, key)
	}
}

// watch renews key every TTL/3 while it holds tok, through the client's
// sleeper (a paused client's watchdog is paused too); it stops at the first
// renewal that finds the key gone or someone else's, and goes on past
// renewals that failed on the network.
func (l *single) watch(key, tok string) *dog {
	ctx, cancel := context.WithCancel(context.Background())
	d := &dog{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(d.done)
		for sleep(ctx, l.env, l.o.TTL/3) == nil {
			var done func(error)
			if l.env.Renewal != nil {
				done = l.env.Renewal(key, tok)
			}
			err := l.renew(ctx, key, tok)
			if done != nil {
				done(err)
			}
			switch {
			case err != nil && l.bug == bugRenewDiesOnError:
				return // planted: any error ends the renewal, silently
			case err != nil && !errors.Is(err, lockimpl.ErrNotHeld) && l.bug == bugRenewStaleEntry && ctx.Err() == nil:
				return // planted: the error path leaves the entry
			case errors.Is(err, lockimpl.ErrNotHeld) || ctx.Err() != nil:
				l.endDog(key, tok)
				return
			}
		}
		l.endDog(key, tok)
	}()
	return d
}

// renew sets key's TTL again if it holds tok: nil, ErrNotHeld, or an
// unknown outcome.
func (l *single) renew(ctx context.Context, key, tok string) error {
	ttl := l.o.TTL.Milliseconds()
	var n int64
	var err error
	switch l.bug {
	case bugRenewSeconds:
		ttl = int64(l.o.TTL.Seconds()) // planted: seconds where PEXPIRE wants ms
		n, err = compareAndExpire.Run(ctx, l.c, []string{key}, tok, ttl).Int64()
	case bugRenewBare: // planted: no owner check
		var ok bool
		ok, err = l.c.PExpire(ctx, key, l.o.TTL).Result()
		if ok {
			n = 1
		}
	case bugRenewRecreate: // planted: a missing key is set again
		n, err = expireOrRecreate.Run(ctx, l.c, []string{key}, tok, ttl).Int64()
	default:
		n, err = compareAndExpire.Run(ctx, l.c, []string{key}, tok, ttl).Int64()
	}
	if err == nil && n == 0 {
		err = lockimpl.ErrNotHeld
	}
	return err
}

// The single-instance locks: the two correct originals and their planted
// variations.
var (
	Single           = singleInfo("planted-single", "correct: SET NX PX, compare-and-delete", bugNone, false)
	SingleWatchdog   = singleInfo("planted-single-wd", "correct: SET NX PX, compare-and-delete, watchdog renewal", bugNone, true)
	SetnxThenPexpire = singleInfo("planted-setnx-then-pexpire", "acquire: SETNX then PEXPIRE", bugSetnxThenPexpire, false)
	TTLMicros        = singleInfo("planted-ttl-micros", "expiry: PX given microseconds", bugTTLMicros, false)
	PIDToken         = singleInfo("planted-pid-token", "token: the process id", bugPIDToken, false)
	GetThenDel       = singleInfo("planted-get-then-del", "release: GET, compare, DEL", bugGetThenDel, false)
	PlainDel         = singleInfo("planted-plain-del", "release: DEL without owner check", bugPlainDel, false)
	ScriptNeq        = singleInfo("planted-script-neq", "server-side script: ~= for ==", bugScriptNeq, false)
	RenewSeconds     = singleInfo("planted-renew-seconds", "renewal: PEXPIRE given seconds", bugRenewSeconds, true)
	LyingRelease     = singleInfo("planted-lying-release", "release: ok whatever the script returned", bugLyingRelease, false)
	BareExtend       = singleInfo("planted-bare-extend", "extend: PEXPIRE without owner check", bugBareExtend, false)
	DelToken         = singleInfo("planted-del-token", "release: the script deletes ARGV[1] for KEYS[1]", bugDelToken, false)
	ErrIsNo          = singleInfo("planted-err-is-no", "acquire: an error from SET read as not acquired", bugErrIsNo, false)

	// The catalogue's watchdog bugs (shared/catalogue.md, entry numbers in
	// the bugs' comments above).
	RenewBare               = singleInfo("planted-renew-bare", "renewal: bare PEXPIRE (Redisson #597)", bugRenewBare, true)
	RenewAfterFailedRelease = singleInfo("planted-renew-after-failed-release", "release: watchdog cancelled only on a reply (Redisson #1602)", bugRenewAfterFailedRelease, true)
	RenewDiesOnError        = singleInfo("planted-renew-dies-on-error", "renewal: ends silently at any error (python-redis-lock #85)", bugRenewDiesOnError, true)
	RenewStaleEntry         = singleInfo("planted-renew-stale-entry", "renewal: a failed renewal's entry blocks later ones (Redisson #2515)", bugRenewStaleEntry, true)
	RenewRecreate           = singleInfo("planted-renew-recreate", "renewal: the script re-sets a missing key (RedLock.net #48)", bugRenewRecreate, true)

	// A try awaited no longer than the wait timeout, as a caller
	// interrupts a lock call: the correct lock gives a late grant back;
	// catalogue 15 renews it.
	SingleWatchdogAwait = singleInfoAwait("planted-single-wd-await", "correct: SET NX PX, watchdog renewal, a try awaited within the wait timeout", bugNone, true, true)
	RenewAfterAbandon   = singleInfoAwait("planted-renew-after-abandon", "acquire: a late grant's callback starts renewal after the acquire gave up (Redisson #7272)", bugRenewAfterAbandon, true, true)
)

// sleep waits d through the client's sleeper (which honours its pauses).
func sleep(ctx context.Context, env lockimpl.Env, d time.Duration) error {
	if env.Sleep != nil {
		return env.Sleep(ctx, d)
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
