// Package lockimpl holds the Redis lock algorithms that lockstorm puts on
// trial. Each algorithm lives in its own file, registers itself by name, and
// names the seed document and section it comes from. Implementations are
// faithful to their documents, bugs included: lockstorm exists to show where
// they break, so a "fixed" copy would be worthless.
package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotAcquired is a definite failure to acquire: every reply was received
// and they say somebody else holds the lock (or the wait timed out on definite
// replies). Any other error from Acquire leaves the outcome unknown, because a
// command whose reply was lost may still have taken effect.
var ErrNotAcquired = errors.New("lock not acquired")

// AttemptError is a failed acquire (ErrNotAcquired, or an unknown outcome)
// that names the token its last command tried to set. A lock that returns
// it lets the history say whose a key left standing is: a key still set to
// that token after the acquire reported failure is a lost acquire, judged
// on that acquire alone (without it, on every acquire that could have sent
// the token, see checker's leak check).
type AttemptError struct {
	Token string
	Err   error
}

func (e *AttemptError) Error() string { return e.Err.Error() }

// Unwrap makes errors.Is(err, ErrNotAcquired) see through it.
func (e *AttemptError) Unwrap() error { return e.Err }

// ErrNotHeld is a definite release failure: the server answered that the
// lock is not (or no longer) this client's. Any other error from Release is an
// unknown outcome.
var ErrNotHeld = errors.New("lock not held by this client")

// ErrCrashed is returned by a failpoint whose action crashes the client: the
// implementation must stop at once, sending nothing more, as a dead process would.
var ErrCrashed = errors.New("client crashed at failpoint")

// Lease is what a successful Acquire hands to the critical section.
type Lease struct {
	// Key is the lock key as the caller named it.
	Key string
	// Token identifies this holder: the value written into Redis (a UUID-like
	// token, or the expiry timestamp for the timestamp-valued algorithms).
	Token string
	// Fence is a fencing token when the algorithm issues one (fenced), else 0.
	Fence int64
	// Lost is closed when the algorithm learns the lock is gone (a watchdog
	// that found the key missing or someone else's). Nil when nothing watches.
	Lost <-chan struct{}
	// Validity is how long the lock is promised to be valid from Acquired,
	// when the algorithm computes it (Redlock); zero otherwise.
	Validity time.Duration
	// Acquired is the client clock's reading when the lock was granted.
	Acquired time.Time

	// State is private to the implementation that issued the lease.
	State any
}

// Locker is one client's handle on one lock algorithm. A Locker is used by a
// single client goroutine; implementations may run helpers (a watchdog) of
// their own, which must go through the same Env (clock, failpoints, pause).
//
// The runner also uses these optional interfaces when a Locker has them:
//
//   - io.Closer: Close is called when the client crashes (a crash fault, or
//     a failpoint action that crashes it), right after its context is
//     cancelled and before its connections are closed, and again for every
//     client when the run ends (so it must tolerate a second call). It must
//     stop the Locker's helpers at once and send nothing more: a crashed
//     client's watchdog that kept renewing would keep its dead lock alive,
//     which is not the crash the scenario injects. A Locker with a helper
//     and no Close is not crashed faithfully.
//   - Readier: a Locker that starts something slow of its own (a client
//     process) is made ready before the run's clock starts (see Readier).
//   - ProcessReporter: its process counts are summed into the outcome.
//   - Process: the client runs as an OS process of its own; the client
//     faults (pause, crash, clock) act on that process (see Process).
//   - Extender (and ExtendSupport): it can extend a lease it holds.
type Locker interface {
	// Acquire tries to take the lock on key, retrying as the algorithm says.
	// nil error: held. ErrNotAcquired: definitely not held. Other: unknown.
	Acquire(ctx context.Context, key string) (*Lease, error)
	// Release gives the lock back. nil: released. ErrNotHeld: the server said
	// it was not ours. Other: unknown.
	Release(ctx context.Context, l *Lease) error
}

// Readier is a Locker that starts something slow of its own (a client
// process). The runner calls Ready once per client after every client's New
// and before the run's clock starts, for all clients at once; the run
// starts when all returned, and an error aborts it. It calls Ready again
// before each acquire is recorded, so a process that died is started again
// outside the acquire (its error is left to the acquire): Ready must be
// cheap when nothing needs starting.
type Readier interface {
	Ready(ctx context.Context) error
}

// ProcessReporter is a Locker that runs in client processes and counts
// what befell them (lockimpl/exec's starts and failures). The runner reads
// ProcessStats once after the run and sums it over the clients into the
// outcome.
type ProcessReporter interface {
	ProcessStats() ProcessStats
}

// Extender is a Locker that can extend a lease it holds (redsync's Extend,
// bsm/redislock's Refresh, redis-py's Lock.extend). It is optional: the
// runner calls it only on a Locker that has it, and only when the
// scenario's workload asks (workload.extend_every: the critical section's
// hold is cut into slices of that length and Extend is called after each
// one, before the hold goes on). Extend sets the lock's expiry to ttl from
// now. nil: extended (the lease's Validity and Acquired updated when the
// algorithm computes validity); ErrNotHeld: the server said the lock is not
// (or no longer) ours; any other error: unknown. Every call is recorded in
// the history (FExtend) and judged by the servers' key events: an extend
// acknowledged on a key that was gone or someone else's is a false success.
type Extender interface {
	Extend(ctx context.Context, l *Lease, ttl time.Duration) error
}

// ExtendSupport is implemented by a Locker whose Extend works only
// sometimes (a client process says in its hello whether it can extend);
// the runner asks it before calling Extend.
type ExtendSupport interface {
	CanExtend() bool
}

// CanExtend says whether the runner may call l's Extend.
func CanExtend(l Locker) bool {
	if _, ok := l.(Extender); !ok {
		return false
	}
	if s, ok := l.(ExtendSupport); ok {
		return s.CanExtend()
	}
	return true
}

// Env is everything a Locker may touch: its own connections, its own clock,
// its own failpoints. Nothing else, so a scenario controls all of it.
type Env struct {
	// Client is the client's number in the run (0-based).
	Client int
	// Nodes are this client's connections to the Redis masters, in node order;
	// each goes through the client's own proxy for that node.
	Nodes []redis.UniversalClient
	// Clock is the client's clock (offset and drift are scenario settings).
	Clock Clock
	// FP are the client's failpoints.
	FP *Failpoints
	// Rand is the client's deterministic random source (seeded by the run).
	Rand Rand
	// Log is the run's logger.
	Log *slog.Logger
	// Sleep waits d on the client's behalf; it honours client pauses.
	// Nil means a plain context-aware sleep.
	Sleep func(ctx context.Context, d time.Duration) error
	// Renewal, when set, is called by a watchdog before each renewal of
	// key held with token; it returns the function to call with the
	// renewal's outcome (nil: renewed; ErrNotHeld: the server said the
	// lock is not ours; other: unknown). The runner records renewals with
	// it, as it records the workload's extends.
	Renewal func(key, token string) (done func(err error))
	// RoundTrip is the network's nominal round trip between the client and
	// a node (the scenario's steady latency plus jitter, both ways): what a
	// deployment knows of its network, for locks whose timeouts must
	// exceed it (redlock's per-node timeout). Zero when unknown. Faults add
	// to it; a lock is not told about them.
	RoundTrip time.Duration
	// CommandTimeout is how long the harness's own connections wait for a
	// reply (the scenario's client_timeout): a lock whose process dials
	// its nodes itself is told it, so that a reply the schedule makes late
	// but not lost is read there as it is by a Go lock's connection.
	CommandTimeout time.Duration
}

// Rand is the subset of math/rand/v2 the algorithms need.
type Rand interface {
	Int64N(n int64) int64
	Uint64() uint64
}

// Options are the lock settings a scenario may set. Zero values mean the
// algorithm's documented default.
type Options struct {
	TTL            time.Duration `yaml:"ttl"`
	RetryCount     int           `yaml:"retry_count"`
	RetryDelay     time.Duration `yaml:"retry_delay"`
	RandomDelay    bool          `yaml:"random_delay"`
	WaitTimeout    time.Duration `yaml:"wait_timeout"`
	Watchdog       bool          `yaml:"watchdog"`
	Reentrant      bool          `yaml:"reentrant"`
	Nodes          int           `yaml:"nodes"`
	ReleaseVariant string        `yaml:"release"`
	NodeTimeout    time.Duration `yaml:"node_timeout"`
	// WaitReplicas, when > 0, makes set-nx-px send WAIT WaitReplicas
	// ReplicaTimeout after its SET and trust the lock only if that many
	// replicas acknowledged it (the replication guard some libraries add).
	WaitReplicas int `yaml:"wait_replicas"`
	// ReplicaTimeout is WAIT's timeout (default 100 ms); keep it below the
	// client's command timeout, since WAIT blocks the connection that long.
	ReplicaTimeout time.Duration `yaml:"replica_timeout"`
	// Extra carries settings lockstorm does not know, for a user's lock:
	// a spec writes them under lock.extra (values are text: quote numbers),
	// a variant's extra entries override the spec's, and the lock's New
	// reads and parses what it needs.
	//
	//	lock: {ttl: 500ms, extra: {tries: "32", drift_factor: "0.01"}}
	Extra map[string]string `yaml:"extra"`
}

// Info describes a registered implementation.
type Info struct {
	// Name is short and stable: it appears in specs, tables and gates.
	Name string
	// Source is the seed file and section the algorithm comes from.
	Source string
	// Summary is one line for `lockstorm list`.
	Summary string
	// Nodes is how many independent masters the algorithm needs by default.
	Nodes func(o Options) int
	// New builds one client's Locker.
	New func(env Env, o Options) (Locker, error)
	// Points are the failpoints (impl/step) the implementation calls, so a
	// spec naming a point that does not exist is refused at load.
	Points []string
	// OwnConnections says the lock dials the addresses of Env.Nodes with a
	// client of its own (a client process in another language, another
	// Redis library) instead of sending through Env.Nodes: its commands
	// never pass lockstorm's go-redis hooks, so when a scenario explores
	// or names command points the runner relays its connections through
	// proxies that read the RESP stream and pass the same points.
	OwnConnections bool
	// RedisKey, when set, is the Redis key the lock really uses for the
	// harness's key: a library that prefixes every key (redis-semaphore's
	// "mutex:") and cannot be told otherwise. The servers' observers watch
	// that key and record its events under the harness's; nil: the key
	// itself.
	RedisKey func(key string) string
	// Validate, when set, checks the options the algorithm reads against a
	// topology of nodes masters before anything starts (New checks them
	// again). Its errors should be *OptionError so a spec can name the field.
	Validate func(o Options, nodes int) error
	// Claims is what the lock says about itself; a scenario that does not
	// list the lock derives its expectation from them. The zero value
	// declares nothing, and such a lock gets no expectation.
	Claims Claims
	// ClaimsFor, when set, gives the claims under particular options (a
	// release variant, a watchdog switched on); nil means Claims whatever
	// the options.
	ClaimsFor func(o Options) Claims
	// Program is the command line of a client program that serves each
	// client as a process (lockimpl/exec); nil for a lock in Go. A plan
	// names it: a run starts it.
	Program []string
}

// ClaimsUnder returns the claims the lock makes when run with o.
func (i Info) ClaimsUnder(o Options) Claims {
	if i.ClaimsFor != nil {
		return i.ClaimsFor(o)
	}
	return i.Claims
}

// NodesUnder is how many independent masters the lock needs with o (1 when
// Info.Nodes is nil).
func (i Info) NodesUnder(o Options) int {
	if i.Nodes == nil {
		return 1
	}
	return i.Nodes(o)
}

// Check says whether i can be run: a name, a constructor, valid claims.
func (i Info) Check() error {
	if i.Name == "" {
		return fmt.Errorf("lockimpl: Info has no Name")
	}
	if i.New == nil {
		return fmt.Errorf("lockimpl: %s: Info has no New", i.Name)
	}
	if err := i.Claims.Validate(); err != nil {
		return fmt.Errorf("lockimpl: %s: %w", i.Name, err)
	}
	return nil
}

// OptionError is a lock option refused by an implementation; Option is its
// YAML key (ttl, release, nodes, ...).
type OptionError struct {
	Option string
	Msg    string
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Msg }

// CheckOptions validates o for implementation i on a topology of nodes masters:
// the checks every algorithm shares (no negative values; Redis expiries are
// whole milliseconds, so a TTL under 1 ms would be refused by the server on
// every SET and leave nothing tested), then the implementation's own.
func (i Info) CheckOptions(o Options, nodes int) error {
	for _, d := range []struct {
		opt string
		v   time.Duration
	}{{"ttl", o.TTL}, {"retry_delay", o.RetryDelay}, {"wait_timeout", o.WaitTimeout}, {"node_timeout", o.NodeTimeout}} {
		if d.v < 0 {
			return &OptionError{d.opt, fmt.Sprintf("must not be negative, got %v", d.v)}
		}
	}
	if o.RetryCount < 0 {
		return &OptionError{"retry_count", fmt.Sprintf("must not be negative, got %d", o.RetryCount)}
	}
	if o.Nodes < 0 {
		return &OptionError{"nodes", fmt.Sprintf("must not be negative, got %d", o.Nodes)}
	}
	if o.TTL != 0 && o.TTL < time.Millisecond {
		return &OptionError{"ttl", fmt.Sprintf("%v is below Redis's 1 ms expiry resolution (the server would refuse every SET)", o.TTL)}
	}
	if i.Validate != nil {
		return i.Validate(o, nodes)
	}
	return nil
}

// points names an implementation's steps as failpoints (name/step).
func points(name string, steps ...string) []string {
	out := make([]string, len(steps))
	for i, s := range steps {
		out[i] = name + "/" + s
	}
	return out
}

var (
	regMu    sync.RWMutex
	registry = map[string]Info{}
)

// Register adds an implementation so specs and the CLI can name it. It
// panics on a duplicate name or an Info that fails Check: programming errors
// that any test catches. A lock need not be registered to be run: give its
// Info to scenarios.Config.Info (or to locktest.Run / locktest.Check).
func Register(i Info) {
	if err := i.Check(); err != nil {
		panic(err.Error())
	}
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[i.Name]; dup {
		panic("lockimpl: duplicate registration of " + i.Name)
	}
	if i.Nodes == nil {
		i.Nodes = func(Options) int { return 1 }
	}
	registry[i.Name] = i
}

// Lookup returns the implementation registered under name.
func Lookup(name string) (Info, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	i, ok := registry[name]
	if !ok {
		return Info{}, fmt.Errorf("unknown implementation %q (known: %v)", name, namesLocked())
	}
	return i, nil
}

// All returns every registered implementation, sorted by name.
func All() []Info {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, i := range registry {
		out = append(out, i)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Names returns the registered names, sorted.
func Names() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return namesLocked()
}

func namesLocked() []string {
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// sleep waits on the env's sleeper (which honours client pauses).
func (e Env) sleep(ctx context.Context, d time.Duration) error {
	if e.Sleep != nil {
		return e.Sleep(ctx, d)
	}
	return SleepCtx(ctx, d)
}

// SleepCtx waits d or until ctx ends, whichever comes first, and returns
// ctx's error in the second case. The one cancellable sleep of lockstorm.
func SleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// hit passes a failpoint; a nil FP is a no-op.
func (e Env) hit(ctx context.Context, name string) error {
	return e.FP.Hit(ctx, name)
}
