package lockimpl

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Claims is what a lock declares about its own design: where its safety
// rests (one master or a quorum), how a lock ends when its holder dies, what
// a release deletes, whether it issues fencing tokens or renews itself. A
// scenario that does not name the lock in its expectations derives one from
// these claims and its own fault (a pause past the TTL breaks any lock that
// expires and issues no fencing token, say), with the reason written in the
// scenario. Declare what the design does, weaknesses included, as its
// documents describe it; a lock that declares nothing (the zero Claims) gets
// no expectation: its verdicts are reported, never counted as a difference.
type Claims struct {
	// Topology is where the lock lives: one master (SingleInstance) or a
	// majority of independent masters (Quorum). Setting it declares the
	// claims; the other fields must then be set too.
	Topology Topology `yaml:"topology" json:"topology,omitempty"`
	// Expiry is how a lock whose holder vanished ends.
	Expiry Expiry `yaml:"expiry" json:"expiry,omitempty"`
	// RacyTakeover says that taking over an expired lock is not one atomic
	// step (seed 001 §四: DEL then SETNX), so two clients that saw the same
	// expired lock can both win. Meaningful with ClientClockExpiry.
	RacyTakeover bool `yaml:"racy_takeover" json:"racy_takeover,omitempty"`
	// Release is what a release deletes.
	Release Release `yaml:"release" json:"release,omitempty"`
	// AbsentReleaseOK says a release reports ok when the key is already
	// gone (seed 002's Redisson unlock script returns 1 when the key does
	// not exist, as go-redsync v4.0.3 did): a release that comes after
	// its lock expired says it freed it. Meaningful with an owner-checked
	// release, whose other false successes stay forbidden.
	AbsentReleaseOK bool `yaml:"absent_release_ok" json:"absent_release_ok,omitempty"`
	// Reentrant says an acquire by the lock's own holder re-enters it: a
	// count on the server goes up, and only as many releases free the key
	// (seed 002's Redisson hash, HINCRBY). An acquire retried after a lost
	// reply re-enters a lock that is already its own, and one release then
	// leaves the key held until its TTL (Redisson issues 4822 and 7367).
	Reentrant bool `yaml:"reentrant" json:"reentrant,omitempty"`
	// Fencing says each holder gets a token that increases with every
	// acquisition (Lease.Fence) and the resource refuses older tokens.
	Fencing bool `yaml:"fencing" json:"fencing,omitempty"`
	// Renewal says the lock extends itself while held (a watchdog).
	Renewal bool `yaml:"renewal" json:"renewal,omitempty"`
	// RenewalEvery is how often a Renewal lock renews, as a share of its
	// TTL (redis-semaphore: refreshInterval = lockTimeout * 0.8, lib/Lock.js
	// 45, 48). 0 is not said, and reads as a third (DefaultRenewalEvery):
	// Redisson's watchdog renews every lockWatchdogTimeout / 3. A lock that
	// renews every half of its TTL or later loses its key when one renewal
	// is lost, before the next is sent. Rules compare it (numeric claims).
	RenewalEvery float64 `yaml:"renewal_every" json:"renewal_every,omitempty"`
	// ReplicaAck says the lock trusts an acquire only once a replica
	// acknowledged it (WAIT after the SET).
	ReplicaAck bool `yaml:"replica_ack" json:"replica_ack,omitempty"`
	// WholeSeconds says the lock's expiry times are whole seconds (PHP
	// time(), Python int(time.time()): seeds 000 and 003): the TTL is
	// rounded up to a second and the stamp adds one more, so a lock taken
	// with a sub-second TTL stays live for more than a second (until the
	// stamp's second comes round by the takers' clocks).
	WholeSeconds bool `yaml:"whole_seconds" json:"whole_seconds,omitempty"`
	// ServerTTL says a lock whose Expiry is ClientClockExpiry also has the
	// server expire its key (seed 000's script sends EXPIRE after SETNX or
	// GETSET): whichever comes first ends it, so a server clock jump can
	// end it before its stamp passes.
	ServerTTL bool `yaml:"server_ttl" json:"server_ttl,omitempty"`
	// GrantChecked says a single-instance lock, once the command that took
	// it has answered, checks that the lease it dated from before sending
	// that command has not run out, and gives the lock back instead of
	// granting it when it has (Symfony Lock: RedisStore::save's
	// checkNotExpired, Lock::acquire's isExpired): a grant that comes back
	// after the TTL is refused, as a quorum lock's validity check refuses
	// it. A pause after the check is still a holder paused past its lease.
	// A quorum lock has that check by its algorithm and need not declare
	// it; declared with GrantMonotonic false, it says which clock the
	// check reads (below).
	GrantChecked bool `yaml:"grant_checked" json:"grant_checked,omitempty"`
	// GrantMonotonic says a GrantChecked lock measures its acquire by a
	// monotonic clock (rueidislock: a timer armed for the lease as the try
	// starts, lock.go try), so no step of the wall clock misleads the
	// check; without it the check reads the wall clock (Symfony Lock:
	// microtime(true)), which a step during the acquire can move. A quorum
	// lock that declares neither is taken to measure its try by a monotonic
	// clock (the Redlock page's elapsed time; redsync's now.Sub(start)); one
	// that declares GrantChecked alone dates its try by the wall clock
	// (npm redlock 4.2.0: start = Date.now(), then `lock.expiration >
	// Date.now()`, redlock.js 397 and 419), which a step misleads too.
	GrantMonotonic bool `yaml:"grant_monotonic" json:"grant_monotonic,omitempty"`
	// GrantConfirmed says a single-instance lock's acquire, once the
	// command that took the key has answered, confirms the grant with a
	// second, owner-checked command on the server (Symfony Lock:
	// Lock::acquire is save then refresh, whose putOffExpiration throws
	// LockConflictedException once the token is gone): a take whose key
	// expired while its reply was late is refused by the server, whatever
	// the client's clocks say.
	GrantConfirmed bool `yaml:"grant_confirmed" json:"grant_confirmed,omitempty"`
	// ExtendChecked says the lock tells its holder how long its lease is
	// valid (Lease.Validity; an exec client's validity=MS), dated from
	// before the command that took the key, and dates an extended lease
	// from before the extend's own command, refusing an extend whose yes
	// came back with no validity left: the distlock page's extension
	// ("only consider the lock re-acquired if it was able to extend the
	// lock into the majority of instances, and within the validity time",
	// the algorithm "very similar to the one used when acquiring"),
	// redsync's ExtendContext from v4.4 (mutex.go 112-128 at v4.4.1: start
	// before the touch, until = now + expiry - elapsed - drift,
	// ErrExtendFailed when it is past). A careful holder then never trusts
	// a key past its expiry because a yes came late. A lock that tells a
	// validity dated so and cannot extend declares it too; one that tells
	// none, or dates an extended lease from the yes, does not.
	ExtendChecked bool `yaml:"extend_checked" json:"extend_checked,omitempty"`
	// NotifiedWait says a client that finds the lock taken does not poll:
	// it waits for the release's message (the unlock script PUBLISHes on
	// the lock's channel, seed 002's Redisson) or for the TTL it read,
	// whichever comes first, then tries again. A key that vanishes without
	// a release (a failover that lost it, a server clock that jumped past
	// its TTL) sends no message, so waiters that parked before keep
	// sleeping until the TTL they read: during a hold, only a client that
	// arrives, or whose wait happens to end, finds the lock free.
	NotifiedWait bool `yaml:"notified_wait" json:"notified_wait,omitempty"`
	// ExtendRecreates says an extend sets the holder's key again (SET NX
	// PX) on a node where it is missing, not only on those where it still
	// holds the holder's token (go-redsync's WithSetNXOnExtend at v4.18.1:
	// redsync.go 93-100, mutex.go 257-260, scripts.go 16-24): a node that
	// restarted empty gets the key back at the holder's next extend, so
	// restarts between extends do not erode a quorum lock's majority
	// (redsync PRs 147/149). The same script re-takes a key that lapsed
	// everywhere and reports it extended (RedLock.net issue 48, catalogue
	// 25): that stays a false success on extend, as for any owner-checked
	// lock.
	ExtendRecreates bool `yaml:"extend_recreates" json:"extend_recreates,omitempty"`
	// FixedRetryDelay says the lock's documents give it the same delay
	// after every failed try, drawn from nothing: contenders whose tries
	// split a quorum's nodes at once unwind and retry at once, and may
	// split them again round after round. Without it a lock's retries are
	// taken to be randomized, as the Redlock page asks ("retry after a
	// random delay in order to try to desynchronize multiple clients"),
	// so contenders in lockstep are a finding wherever a scenario sets
	// the lockstep bounds (go-redsync implements that page, README line 5,
	// yet v4.0.3 waits 500 ms whatever the try: redsync.go 27).
	FixedRetryDelay bool `yaml:"fixed_retry_delay" json:"fixed_retry_delay,omitempty"`
	// BackoffGrowth says the lock's documents pace a waiter's tries
	// within one acquire by a delay that grows by this factor from one
	// try to the next, from a floor it may hold for a few tries, until
	// BackoffCap (bsm/redislock's ExponentialBackoff: 2 << n ms between
	// its min and max, retry.go). 0 is not said: the cadence is not
	// judged. Rules compare it (numeric claims).
	BackoffGrowth float64 `yaml:"backoff_growth" json:"backoff_growth,omitempty"`
	// BackoffCap is the largest delay of a BackoffGrowth lock, as a share
	// of its TTL (the lock derives its max from the TTL it is given).
	BackoffCap float64 `yaml:"backoff_cap" json:"backoff_cap,omitempty"`
	// ExtendRetries says an extend whose try got no definite answer (an
	// error, a timeout: not the server's "not yours") tries again, as
	// the retry strategy its caller hands it allows, while its context
	// has room (bsm/redislock's Refresh takes Options whose
	// RetryStrategy "allows to customise the lock retry strategy").
	ExtendRetries bool `yaml:"extend_retries" json:"extend_retries,omitempty"`
	// WaitsOut says an acquire refuses only once its wait timeout
	// (lock.wait_timeout) has passed: a waiter that finds the key taken,
	// woken by a release or not, tries again while it has time left
	// (python-redis-lock's acquire(timeout=...), Spring's
	// tryLock(time, unit) since PR #3702 fixed GH-3700, in which a
	// PUB_SUB_LOCK waiter that lost the race after an unlock notification
	// gave up early).
	WaitsOut bool `yaml:"waits_out" json:"waits_out,omitempty"`
}

// Topology is where a lock's state lives.
type Topology string

// Topologies.
const (
	// SingleInstance: one master; a replica promoted after a crash may not
	// have the lock (asynchronous replication).
	SingleInstance Topology = "single"
	// Quorum: N independent masters; held when a majority accepted.
	Quorum Topology = "quorum"
)

// Expiry is how a lock whose holder vanished ends.
type Expiry string

// Expiries.
const (
	// NoExpiry: the lock lives until released; a dead holder holds forever.
	NoExpiry Expiry = "none"
	// ServerExpiry: the server expires the key, and the command that takes
	// the lock sets the TTL (SET NX PX, or one script).
	ServerExpiry Expiry = "server"
	// SeparateExpiry: the server expires the key, but a second command sets
	// the TTL after the lock is taken, so a crash between them leaves a key
	// that never expires (seed 001 §六 Q1).
	SeparateExpiry Expiry = "server-separate"
	// ClientClockExpiry: the value is an expiry time that clients compare
	// with their own clocks to take over an expired lock; a client whose
	// clock runs behind writes an expiry already past for the others.
	ClientClockExpiry Expiry = "client-clock"
)

// Release is what a release deletes.
type Release string

// Releases.
const (
	// OwnerCheckedRelease deletes the key only while it holds this holder's
	// token (compare-and-delete in one script).
	OwnerCheckedRelease Release = "owner-checked"
	// UnconditionalRelease deletes the key whoever holds it (plain DEL): a
	// release that arrives after the lock expired frees the next holder's.
	UnconditionalRelease Release = "unconditional"
	// TimeCheckedRelease deletes the key only while the holder's own expiry,
	// by its own clock, has not passed (seed 003).
	TimeCheckedRelease Release = "time-checked"
	// ExpiredOnlyRelease deletes the key only when it has already expired
	// (seed 000's unlock script): a live lock is never freed, so waiters
	// wait out the TTL after every release.
	ExpiredOnlyRelease Release = "expired-only"
)

// DefaultRenewalEvery is RenewalEvery when a lock does not say it: a
// renewal every third of the TTL.
const DefaultRenewalEvery = 1.0 / 3

// Granularity is the unit the lock counts its expiry in: a second for a
// lock that declares WholeSeconds, else Redis's millisecond (PX, PEXPIRE).
// It is the one place a lock, Go or a client process (whole_seconds= in its
// hello), declares its timescale: the battery stretches every time of a
// scenario whose TTL is only a few such units (scenarios.Compile), so a
// whole-second lock faces the schedule the scenario was written for.
func (c Claims) Granularity() time.Duration {
	if c.WholeSeconds {
		return time.Second
	}
	return time.Millisecond
}

// Declared says the claims were stated (Topology is set).
func (c Claims) Declared() bool { return c.Topology != "" }

// Validate checks declared claims: every field set, each to a known value.
// Undeclared claims are valid (they declare nothing).
func (c Claims) Validate() error {
	if !c.Declared() {
		if c != (Claims{}) {
			return fmt.Errorf("claims: topology missing (want %s or %s) but other fields set", SingleInstance, Quorum)
		}
		return nil
	}
	if c.BackoffGrowth < 0 || c.BackoffGrowth > 0 && c.BackoffGrowth <= 1 || c.BackoffCap < 0 || (c.BackoffCap > 0) != (c.BackoffGrowth > 0) {
		return fmt.Errorf("claims: backoff_growth %v, backoff_cap %v: want a growth over 1 with a cap over 0, or neither", c.BackoffGrowth, c.BackoffCap)
	}
	if c.RenewalEvery < 0 || c.RenewalEvery > 1 {
		return fmt.Errorf("claims: renewal_every %v: want a share of the TTL, over 0 and at most 1", c.RenewalEvery)
	}
	for _, f := range claimFields {
		if f.values == nil {
			continue
		}
		v := f.get(c)
		ok := false
		for _, w := range f.values {
			ok = ok || v == w
		}
		if !ok {
			return fmt.Errorf("claims: %s %q: want one of %s", f.name, v, strings.Join(f.values, ", "))
		}
	}
	return nil
}

// ClaimField is one claim's name as specs write it (topology, expiry,
// racy_takeover, release, fencing, renewal), its value in c as text
// ("true"/"false" for the booleans), and the values it can take: nil for
// a numeric claim (renewal_every), which rules compare (CompareClaim).
func (c Claims) ClaimField(name string) (value string, values []string, ok bool) {
	for _, f := range claimFields {
		if f.name == name {
			vs := f.values
			if vs == nil && !f.numeric {
				vs = []string{"true", "false"}
			}
			return f.get(c), vs, true
		}
	}
	return "", nil, false
}

// ClaimNames are the claims' names as specs write them.
func ClaimNames() []string {
	out := make([]string, len(claimFields))
	for i, f := range claimFields {
		out[i] = f.name
	}
	return out
}

// String is the claims in one line, as specs would write them.
func (c Claims) String() string {
	if !c.Declared() {
		return "(none declared)"
	}
	var parts []string
	for _, f := range claimFields {
		parts = append(parts, f.name+"="+f.get(c))
	}
	return strings.Join(parts, " ")
}

type claimField struct {
	name    string
	values  []string // nil: boolean, or numeric
	numeric bool
	get     func(Claims) string
}

// CompareClaim says whether a numeric claim's value (ClaimField's text)
// meets cond, a comparison as rules write it: "<0.5", "<=0.5", ">0.5" or
// ">=0.5".
func CompareClaim(value, cond string) (bool, error) {
	op := strings.TrimRight(cond, "0123456789.")
	bound, err := strconv.ParseFloat(cond[len(op):], 64)
	if err != nil {
		return false, fmt.Errorf("%q: want a comparison such as <0.5 or >=0.5", cond)
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return false, fmt.Errorf("value %q is not a number", value)
	}
	switch op {
	case "<":
		return v < bound, nil
	case "<=":
		return v <= bound, nil
	case ">":
		return v > bound, nil
	case ">=":
		return v >= bound, nil
	}
	return false, fmt.Errorf("%q: want a comparison such as <0.5 or >=0.5", cond)
}

// claimFields is built from the struct's yaml tags so the names specs use
// and the fields cannot drift apart.
var claimFields = func() []claimField {
	enums := map[string][]string{
		"topology": {string(SingleInstance), string(Quorum)},
		"expiry":   {string(NoExpiry), string(ServerExpiry), string(SeparateExpiry), string(ClientClockExpiry)},
		"release":  {string(OwnerCheckedRelease), string(UnconditionalRelease), string(TimeCheckedRelease), string(ExpiredOnlyRelease)},
	}
	t := reflect.TypeOf(Claims{})
	var out []claimField
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
		idx := i
		f := claimField{name: name, values: enums[name], get: func(c Claims) string {
			return fmt.Sprint(reflect.ValueOf(c).Field(idx).Interface())
		}}
		if sf.Type.Kind() == reflect.Float64 {
			f.numeric = true
		}
		if name == "renewal_every" {
			// Not said reads as the default, in rules and in String.
			f.get = func(c Claims) string {
				if c.RenewalEvery == 0 {
					return strconv.FormatFloat(DefaultRenewalEvery, 'g', 4, 64)
				}
				return strconv.FormatFloat(c.RenewalEvery, 'g', 4, 64)
			}
		}
		out = append(out, f)
	}
	return out
}()
