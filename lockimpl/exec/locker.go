package exec

import (
	"context"
	"errors"
	"fmt"
	"github.com/lockstorm/lockstorm/internal/clock"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Protocol is the protocol version this package speaks.
const Protocol = "1"

// startTimeout bounds a client's start-up: from its start to its hello
// reply (an interpreter loading its Redis library on a loaded machine).
const startTimeout = 60 * time.Second

// Hello is what a client process says about itself in its hello reply.
type Hello struct {
	// Name is the short name for tables ("" : derived from the command).
	Name string
	// Summary is one line for `lockstorm list`.
	Summary string
	// Nodes is how many Redis masters the client needs (default 1).
	Nodes int
	// Points are its failpoints (impl/step).
	Points []string
	// Claims are what it declares about itself, as a Go lock does in
	// lockimpl.Info.Claims; the battery derives its expectations from them.
	Claims lockimpl.Claims
	// Extend says the client answers extend requests (hello extend=true);
	// the runner sends none to a client that did not say so.
	Extend bool
	// Lost says the client tells when its library reports a lock lost
	// (hello lost=true; "lost TOKEN" lines): its leases then have a Lost
	// channel, which a careful client heeds.
	Lost bool
	// RedisKey is the key the library really uses for the harness's key,
	// with {key} standing for it (hello redis_key=mutex:{key}), for a
	// library that prefixes its keys and cannot be told otherwise; ""
	// is the key itself. The servers' observers watch that key.
	RedisKey string
}

// isClaim says whether a hello field is a claim (lockimpl.ClaimNames).
func isClaim(k string) bool {
	for _, n := range lockimpl.ClaimNames() {
		if n == k {
			return true
		}
	}
	return false
}

// setClaim sets one claim field from its hello text.
func setClaim(c *lockimpl.Claims, k, v string) error {
	flag := func() (bool, error) {
		switch v {
		case "true", "yes":
			return true, nil
		case "false", "no":
			return false, nil
		}
		return false, fmt.Errorf("want true or false, got %q", v)
	}
	var err error
	switch k {
	case "topology":
		c.Topology = lockimpl.Topology(v)
	case "expiry":
		c.Expiry = lockimpl.Expiry(v)
	case "release":
		c.Release = lockimpl.Release(v)
	case "racy_takeover":
		c.RacyTakeover, err = flag()
	case "fencing":
		c.Fencing, err = flag()
	case "renewal":
		c.Renewal, err = flag()
	case "replica_ack":
		c.ReplicaAck, err = flag()
	case "whole_seconds":
		c.WholeSeconds, err = flag()
	case "server_ttl":
		c.ServerTTL, err = flag()
	default:
		return fmt.Errorf("claim %q is not supported by this protocol version", k)
	}
	return err
}

// parseHello reads "hello 1 k=v ...".
func parseHello(m message) (Hello, error) {
	if m.verb != "hello" || len(m.args) < 1 || m.args[0] != Protocol {
		return Hello{}, fmt.Errorf("want %q, got %q", "hello "+Protocol+" ...", m.raw)
	}
	h := Hello{Nodes: 1}
	for _, kv := range m.args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Hello{}, fmt.Errorf("hello field %q: want key=value", kv)
		}
		v, err := url.PathUnescape(v)
		if err != nil {
			return Hello{}, fmt.Errorf("hello field %q: %w", kv, err)
		}
		switch {
		case k == "name":
			h.Name = v
		case k == "summary":
			h.Summary = v
		case k == "nodes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Hello{}, fmt.Errorf("hello field %q: want a positive count", kv)
			}
			h.Nodes = n
		case k == "extend":
			h.Extend = v == "true"
		case k == "lost":
			h.Lost = v == "true"
		case k == "redis_key":
			if !strings.Contains(v, "{key}") || strings.ContainsAny(v, " \t") {
				return Hello{}, fmt.Errorf("hello field %q: want a key template containing {key}, no spaces", kv)
			}
			h.RedisKey = v
		case k == "points":
			if v != "" {
				h.Points = strings.Split(v, ",")
			}
		case isClaim(k):
			if err := setClaim(&h.Claims, k, v); err != nil {
				return Hello{}, fmt.Errorf("hello field %q: %w", kv, err)
			}
		default:
			// Unknown fields are ignored: a newer client may say more.
		}
	}
	if err := h.Claims.Validate(); err != nil {
		return Hello{}, fmt.Errorf("hello: %w", err)
	}
	return h, nil
}

// Split splits a command line into words as a shell would for simple
// cases: white space separates, single and double quotes group, a
// backslash escapes the next character outside single quotes. No
// expansion of any kind.
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	in, quote, esc := false, rune(0), false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case r == '\\' && quote != '\'':
			esc, in = true, true
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 || esc {
		return nil, fmt.Errorf("unterminated quote or escape in %q", s)
	}
	if in {
		out = append(out, cur.String())
	}
	if len(out) == 0 {
		return nil, errors.New("empty command")
	}
	return out, nil
}

// Probe starts argv once with no Redis nodes, asks hello and stops it: what
// a client declares is known before any run starts.
func Probe(ctx context.Context, argv []string) (Hello, error) {
	if len(argv) == 0 {
		return Hello{}, errors.New("empty command")
	}
	env := append(os.Environ(), "LOCKSTORM_PROTOCOL="+Protocol, "LOCKSTORM_NODES=", "LOCKSTORM_CLIENT=0",
		"LOCKSTORM_SEED=1", "PYTHONUNBUFFERED=1")
	p, err := startProc(argv, env, discard, func(p *proc, name string) { _ = p.send("go " + name) })
	if err != nil {
		return Hello{}, err
	}
	defer p.kill()
	if err := p.send("hello " + Protocol + " points=off"); err != nil {
		return Hello{}, fmt.Errorf("%s: hello: %w", strings.Join(argv, " "), err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case m := <-p.msgs:
		h, err := parseHello(m)
		if err != nil {
			return Hello{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		return h, nil
	case <-p.exited:
		select {
		case m := <-p.msgs:
			if h, err := parseHello(m); err == nil {
				return h, nil
			}
		default:
		}
		return Hello{}, fmt.Errorf("%s: no hello reply: %s", strings.Join(argv, " "), p.deathText())
	case <-ctx.Done():
		return Hello{}, fmt.Errorf("%s: no hello reply within %v", strings.Join(argv, " "), startTimeout)
	}
}

var (
	regMu      sync.Mutex
	registered = map[string]string{} // name → command line
)

// Register probes argv and registers it as an implementation under the
// name its hello gives (or exec:<script>), so scenarios, expectations and
// reports name it like any Go lock. Registering the same command twice
// returns the first registration.
func Register(ctx context.Context, argv []string) (lockimpl.Info, error) {
	info, err := Describe(ctx, argv)
	if err != nil {
		return lockimpl.Info{}, err
	}
	regMu.Lock()
	defer regMu.Unlock()
	line := strings.Join(argv, "\x00")
	if prev, ok := registered[info.Name]; ok {
		if prev != line {
			return lockimpl.Info{}, fmt.Errorf("client name %q is taken by another command", info.Name)
		}
		return lockimpl.Lookup(info.Name)
	}
	if _, err := lockimpl.Lookup(info.Name); err == nil {
		return lockimpl.Info{}, fmt.Errorf("client name %q is a built-in implementation's", info.Name)
	}
	lockimpl.Register(info)
	registered[info.Name] = line
	return info, nil
}

// Describe probes argv and describes it without registering a name: a
// spec's exec variant runs it under the variant's name. It is the
// lockimpl.Program of every binary that links this package.
func Describe(ctx context.Context, argv []string) (lockimpl.Info, error) {
	h, err := Probe(ctx, argv)
	if err != nil {
		return lockimpl.Info{}, err
	}
	return NewInfo(argv, h), nil
}

func init() { lockimpl.RegisterPrograms(Describe) }

// NewInfo describes the client program argv, as its hello h declared it.
func NewInfo(argv []string, h Hello) lockimpl.Info {
	name := h.Name
	if name == "" {
		name = DefaultName(argv)
	}
	summary := h.Summary
	if summary == "" {
		summary = "external client process"
	}
	argv = append([]string(nil), argv...)
	return lockimpl.Info{
		Name:    name,
		Program: argv,
		Source:  "client process: " + strings.Join(argv, " "),
		Summary: summary,
		Nodes: func(o lockimpl.Options) int {
			if o.Nodes > 0 {
				return o.Nodes
			}
			return h.Nodes
		},
		Points:         h.Points,
		OwnConnections: true,
		Claims:         h.Claims,
		RedisKey:       redisKey(h.RedisKey),
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			l, err := New(env, o, argv, name)
			if err != nil {
				return nil, err
			}
			l.extend, l.tellsLost = h.Extend, h.Lost
			return l, nil
		},
	}
}

// DefaultName is the name of the client program argv whose hello gives
// none: exec: and its script's (or binary's) file name.
func DefaultName(argv []string) string {
	return "exec:" + filepath.Base(argv[len(argv)-1])
}

// Locker is one client's lock, served by a client process.
type Locker struct {
	name    string
	argv    []string
	env     lockimpl.Env
	o       lockimpl.Options
	procEnv []string
	clock   *clock.File
	tmp     string
	ctx     context.Context // the Locker's life: point hits, the clock pump
	cancel  context.CancelFunc

	req sync.Mutex // one request at a time, as one client goroutine issues them

	mu      sync.Mutex // guards the fields below
	p       *proc
	helloed bool // p answered hello
	extend  bool // the client said it answers extend
	// tellsLost: the client said it sends "lost TOKEN"; lost holds the
	// Lost channel of each lease it may still send it for.
	tellsLost bool
	lost      map[string]chan struct{}
	// lostEarly are tokens told lost before their acquire's reply was
	// read (the line can follow the reply at once): closed on arrival.
	lostEarly map[string]bool
	stopped   bool
	dead      bool   // killed for good (crash): no new process
	call      string // the Locker call of the request in flight (lockimpl.CallOf), for its points
	stats     lockimpl.ProcessStats
	frozen    time.Duration // total time stopped or at a point
	frozenN   int           // > 0 while stopped or at a point
	since     time.Time     // start of the current frozen stretch
}

var discard = slogDiscard()

// New starts the client process for one client: argv, told env's node
// addresses and identity and the options o. The process starts now, so its
// interpreter loads while the run is set up.
func New(env lockimpl.Env, o lockimpl.Options, argv []string, name string) (*Locker, error) {
	if len(argv) == 0 {
		return nil, errors.New("exec: empty command")
	}
	var addrs []string
	for i, n := range env.Nodes {
		oc, ok := n.(interface{ Options() *redis.Options })
		if !ok {
			return nil, fmt.Errorf("%s: node %d: cannot tell its address (%T)", name, i, n)
		}
		addrs = append(addrs, oc.Options().Addr)
	}
	if env.Clock == nil {
		return nil, fmt.Errorf("%s: env has no clock", name)
	}
	if env.Log == nil {
		env.Log = discard
	}
	shim, err := clock.ShimPath()
	if err != nil {
		return nil, fmt.Errorf("%s: client clock: %w", name, err)
	}
	tmp, err := os.MkdirTemp("", "lockstorm-client-")
	if err != nil {
		return nil, err
	}
	cf, err := clock.Open(filepath.Join(tmp, "clock"))
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	seed := uint64(1)
	if env.Rand != nil {
		seed = env.Rand.Uint64()
	}
	b01 := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	preload := shim
	if prev := os.Getenv("LD_PRELOAD"); prev != "" {
		preload += ":" + prev
	}
	pe := append(os.Environ(),
		"LOCKSTORM_PROTOCOL="+Protocol,
		"LOCKSTORM_NODES="+strings.Join(addrs, ","),
		"LOCKSTORM_CLIENT="+strconv.Itoa(env.Client),
		"LOCKSTORM_SEED="+strconv.FormatUint(seed, 10),
		"LOCKSTORM_TTL_MS="+strconv.FormatInt(o.TTL.Milliseconds(), 10),
		"LOCKSTORM_RETRY_COUNT="+strconv.Itoa(o.RetryCount),
		"LOCKSTORM_RETRY_DELAY_MS="+strconv.FormatInt(o.RetryDelay.Milliseconds(), 10),
		"LOCKSTORM_WAIT_TIMEOUT_MS="+strconv.FormatInt(o.WaitTimeout.Milliseconds(), 10),
		"LOCKSTORM_NODE_TIMEOUT_MS="+strconv.FormatInt(o.NodeTimeout.Milliseconds(), 10),
		"LOCKSTORM_WATCHDOG="+b01(o.Watchdog),
		"LOCKSTORM_RELEASE="+o.ReleaseVariant,
		clock.FileEnv+"="+cf.Path(),
		"LD_PRELOAD="+preload,
		// Python buffers stdout when it is a pipe; a client that forgets to
		// flush would look dead.
		"PYTHONUNBUFFERED=1",
	)
	ctx, cancel := context.WithCancel(context.Background())
	l := &Locker{name: name, argv: argv, env: env, o: o, procEnv: pe, clock: cf, tmp: tmp, ctx: ctx, cancel: cancel}
	l.SyncClock()
	l.mu.Lock()
	_, err = l.spawnLocked()
	l.mu.Unlock()
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go l.pumpClock()
	return l, nil
}

// pumpClock keeps the process's offset equal to the client clock's while it
// drifts; jumps are pushed at once by SyncClock. 10 ms at a 1% drift rate is
// an error of 0.1 ms.
func (l *Locker) pumpClock() {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
			l.SyncClock()
		}
	}
}

// SyncClock implements lockimpl.Process.
func (l *Locker) SyncClock() {
	// The pump is the harness's, not a thread of the stopped client: it
	// reads the clock without waiting out a pause (a SIGSTOP stops the
	// process itself).
	l.clock.Set(lockimpl.Outside(l.env.Clock).Now().Sub(time.Now()))
}

// spawnLocked starts a fresh process (l.mu held).
func (l *Locker) spawnLocked() (*proc, error) {
	p, err := startProc(l.argv, l.procEnv, l.env.Log, l.point)
	if err != nil {
		return nil, err
	}
	p.lost = l.lostToken
	l.stats.Starts++
	l.p, l.helloed = p, false
	if l.stopped {
		_ = p.signal(syscall.SIGSTOP)
	}
	return p, nil
}

// PID is the current client process's id (0 when none runs).
func (l *Locker) PID() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == nil || !l.p.alive() {
		return 0
	}
	return l.p.pid
}

// ProcessStats returns the process counts so far.
func (l *Locker) ProcessStats() lockimpl.ProcessStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

func (l *Locker) freeze() {
	l.mu.Lock()
	if l.frozenN == 0 {
		l.since = time.Now()
	}
	l.frozenN++
	l.mu.Unlock()
}

func (l *Locker) thaw() {
	l.mu.Lock()
	l.frozenN--
	if l.frozenN == 0 {
		l.frozen += time.Since(l.since)
	}
	l.mu.Unlock()
}

// frozenTotal is the time spent stopped or at a point, up to now.
func (l *Locker) frozenTotal() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.frozenN > 0 {
		return l.frozen + time.Since(l.since)
	}
	return l.frozen
}

// Stop implements lockimpl.Process: SIGSTOP of the client's process group.
func (l *Locker) Stop() error {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.stopped = true
	p := l.p
	l.mu.Unlock()
	l.freeze()
	if p != nil {
		return p.signal(syscall.SIGSTOP)
	}
	return nil
}

// Cont implements lockimpl.Process: SIGCONT.
func (l *Locker) Cont() error {
	l.mu.Lock()
	if !l.stopped {
		l.mu.Unlock()
		return nil
	}
	l.stopped = false
	p := l.p
	l.mu.Unlock()
	var err error
	if p != nil {
		err = p.signal(syscall.SIGCONT)
	}
	l.thaw()
	return err
}

// Kill implements lockimpl.Process: SIGKILL, and no process is started for
// this client again (a crashed client stays dead).
func (l *Locker) Kill() error {
	l.mu.Lock()
	l.dead = true
	p := l.p
	l.mu.Unlock()
	if p != nil {
		p.kill()
	}
	return nil
}

// Close kills the process and removes its clock file. The runner calls it
// (io.Closer) at the end of a run and when it crashes the client.
func (l *Locker) Close() error {
	l.cancel()
	_ = l.Kill()
	_ = l.clock.Close()
	return os.RemoveAll(l.tmp)
}

// point runs the scenario's actions at a point the client announced, then
// lets it go; a crash action kills the process right there.
func (l *Locker) point(p *proc, name string) {
	l.mu.Lock()
	ctx := l.ctx
	if l.call != "" {
		ctx = lockimpl.WithCall(ctx, l.call)
	}
	l.mu.Unlock()
	l.freeze()
	err := l.env.FP.Hit(ctx, name)
	l.thaw()
	switch {
	case errors.Is(err, lockimpl.ErrCrashed):
		p.mu.Lock()
		p.crashErr = err
		p.mu.Unlock()
		l.mu.Lock()
		l.dead = true
		l.mu.Unlock()
		p.kill()
	case err != nil:
		// The run is over or the client is gone: nobody waits for go.
	default:
		_ = p.send("go " + name)
	}
}

// errUnknown is the class of every outcome the client process left unknown.
type errUnknown struct{ msg string }

func (e *errUnknown) Error() string { return e.msg }

// discardLocked kills p and forgets it, so the next request starts afresh.
func (l *Locker) discardLocked(p *proc) {
	if l.p == p {
		l.p = nil
	}
	go p.kill()
}

// broken counts a protocol breach by p and discards it.
func (l *Locker) broken(p *proc, what string) error {
	l.mu.Lock()
	l.stats.Malformed++
	l.discardLocked(p)
	l.mu.Unlock()
	return &errUnknown{fmt.Sprintf("%s: %s (process %d killed; outcome unknown)", l.name, what, p.pid)}
}

// ready returns a live process that has answered hello.
func (l *Locker) ready(ctx context.Context) (*proc, error) {
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return nil, fmt.Errorf("%s: client process killed: %w", l.name, lockimpl.ErrCrashed)
	}
	p := l.p
	if p != nil && !p.alive() {
		p = nil
	}
	if p == nil {
		var err error
		if p, err = l.spawnLocked(); err != nil {
			l.mu.Unlock()
			return nil, &errUnknown{fmt.Sprintf("%s: %v", l.name, err)}
		}
	}
	helloed := l.helloed
	l.mu.Unlock()
	// A line nobody asked for means the client and the harness disagree
	// about which reply answers which request: start over.
	select {
	case m := <-p.msgs:
		_ = l.broken(p, fmt.Sprintf("unsolicited line %q", m.raw))
		return l.ready(ctx)
	default:
	}
	if helloed {
		return p, nil
	}
	points := "off"
	if l.env.FP.Armed() {
		points = "on"
	}
	m, err := l.roundTrip(ctx, p, "hello "+Protocol+" points="+points, startTimeout)
	if err != nil {
		return nil, err
	}
	if _, err := parseHello(m); err != nil {
		return nil, l.broken(p, err.Error())
	}
	l.mu.Lock()
	if l.p == p {
		l.helloed = true
	}
	l.mu.Unlock()
	return p, nil
}

// roundTrip sends line to p and waits for its reply. Time spent stopped or
// at a point does not count against timeout.
func (l *Locker) roundTrip(ctx context.Context, p *proc, line string, timeout time.Duration) (message, error) {
	if err := p.send(line); err != nil {
		// The pipe is closed: the process is dying; its death explains it.
		<-p.exited
		return message{}, l.died(p)
	}
	t0, f0 := time.Now(), l.frozenTotal()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m := <-p.msgs:
			return m, nil
		case <-p.exited:
			select {
			case m := <-p.msgs:
				return m, nil
			default:
			}
			return message{}, l.died(p)
		case <-ctx.Done():
			// Mid-request the process's state is unknown: it must not
			// finish the request later for a client that moved on.
			l.mu.Lock()
			l.discardLocked(p)
			l.mu.Unlock()
			return message{}, fmt.Errorf("%s: %s: %w", l.name, line, ctx.Err())
		case <-timer.C:
			used := time.Since(t0) - (l.frozenTotal() - f0)
			if used < timeout {
				timer.Reset(timeout - used)
				continue
			}
			l.mu.Lock()
			l.stats.Timeouts++
			l.discardLocked(p)
			l.mu.Unlock()
			return message{}, &errUnknown{fmt.Sprintf("%s: %s: no reply within %v (process %d killed; outcome unknown)", l.name, line, timeout, p.pid)}
		}
	}
}

// died explains the death of p during a request.
func (l *Locker) died(p *proc) error {
	p.mu.Lock()
	crash, killed := p.crashErr, p.killed
	p.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.p == p {
		l.p = nil
	}
	switch {
	case crash != nil:
		return fmt.Errorf("%s: %w", l.name, crash)
	case killed && l.dead:
		return fmt.Errorf("%s: client process killed: %w", l.name, lockimpl.ErrCrashed)
	case killed:
		return &errUnknown{fmt.Sprintf("%s: client process killed mid-request (outcome unknown)", l.name)}
	}
	l.stats.Deaths++
	return &errUnknown{fmt.Sprintf("%s: %s (outcome unknown)", l.name, p.deathText())}
}

// Ready starts the client process if needed and waits for its hello: the
// runner calls it once the scenario's failpoints are attached (so the
// client knows whether to announce its points) and before the run's clock
// starts (so a runtime's start-up is not counted as the lock's latency).
func (l *Locker) Ready(ctx context.Context) error {
	l.req.Lock()
	defer l.req.Unlock()
	_, err := l.ready(ctx)
	return err
}

// request sends one request and returns the reply, or an error that is an
// unknown outcome (or a crash).
func (l *Locker) request(ctx context.Context, line string, timeout time.Duration) (*proc, message, error) {
	l.req.Lock()
	defer l.req.Unlock()
	p, err := l.ready(ctx)
	if err != nil {
		return nil, message{}, err
	}
	l.mu.Lock()
	l.call = lockimpl.CallOf(ctx)
	l.mu.Unlock()
	m, err := l.roundTrip(ctx, p, line, timeout)
	l.mu.Lock()
	l.call = ""
	l.mu.Unlock()
	return p, m, err
}

// verdict maps a fail or error reply to the error contract; ok is nil.
func (l *Locker) verdict(p *proc, m message, definite error) error {
	text := strings.Join(m.args, " ")
	switch m.verb {
	case "fail":
		return fmt.Errorf("%s: %s: %w", l.name, text, definite)
	case "error":
		return &errUnknown{fmt.Sprintf("%s: %s (outcome unknown)", l.name, text)}
	case "unknown":
		// A library whose call returns nothing (a release that resolves
		// whether or not it deleted): not a failure, and no claim either.
		return &errUnknown{fmt.Sprintf("%s: the library gives no answer%s (outcome unknown)", l.name, strings.TrimRight(" "+text, " "))}
	}
	return l.broken(p, fmt.Sprintf("malformed reply %q", m.raw))
}

func (l *Locker) acquireTimeout() time.Duration {
	w := l.o.WaitTimeout
	if w == 0 {
		w = 10 * time.Second
	}
	return w + slack
}

// slack is what a request may take beyond the lock's own wait: a release or
// an extend gets just this much. A variable so tests need not wait it out.
var slack = 5 * time.Second

// Acquire implements lockimpl.Locker.
func (l *Locker) Acquire(ctx context.Context, key string) (*lockimpl.Lease, error) {
	p, m, err := l.request(ctx, "acquire "+key, l.acquireTimeout())
	if err != nil {
		return nil, err
	}
	if m.verb != "ok" {
		return nil, l.verdict(p, m, lockimpl.ErrNotAcquired)
	}
	if len(m.args) < 1 || m.args[0] == "" || strings.Contains(m.args[0], "=") {
		return nil, l.broken(p, fmt.Sprintf("malformed reply %q: ok needs the token", m.raw))
	}
	lease := &lockimpl.Lease{Key: key, Token: m.args[0], Acquired: l.env.Clock.Now()}
	if err := attrs(m.args[1:], lease); err != nil {
		return nil, l.broken(p, fmt.Sprintf("malformed reply %q: %v", m.raw, err))
	}
	if l.tellsLost {
		ch := make(chan struct{})
		l.mu.Lock()
		if l.lostEarly[lease.Token] {
			close(ch)
			delete(l.lostEarly, lease.Token)
		} else {
			if l.lost == nil {
				l.lost = map[string]chan struct{}{}
			}
			l.lost[lease.Token] = ch
		}
		l.mu.Unlock()
		lease.Lost = ch
	}
	return lease, nil
}

// lostToken is a "lost TOKEN" line: the lease's Lost channel is closed,
// once. A token not held yet may be the acquire whose reply is still on
// its way; one already released stays among lostEarly, bounded by
// maxLostEarly.
func (l *Locker) lostToken(token string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ch, ok := l.lost[token]; ok {
		close(ch)
		delete(l.lost, token)
		return
	}
	if l.lostEarly == nil || len(l.lostEarly) >= maxLostEarly {
		l.lostEarly = map[string]bool{}
	}
	l.lostEarly[token] = true
}

// maxLostEarly bounds the tokens told lost that no lease (yet) holds.
const maxLostEarly = 64

// redisKey makes Info.RedisKey from a hello's template ("" : nil).
func redisKey(tmpl string) func(string) string {
	if tmpl == "" {
		return nil
	}
	return func(key string) string { return strings.ReplaceAll(tmpl, "{key}", key) }
}

// attrs reads fence=N and validity=MS.
func attrs(args []string, lease *lockimpl.Lease) error {
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("field %q: want key=value", a)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("field %q: want an integer", a)
		}
		switch k {
		case "fence":
			lease.Fence = n
		case "validity":
			lease.Validity = time.Duration(n) * time.Millisecond
		default:
			return fmt.Errorf("unknown field %q", k)
		}
	}
	return nil
}

// Release implements lockimpl.Locker.
func (l *Locker) Release(ctx context.Context, lease *lockimpl.Lease) error {
	l.mu.Lock()
	delete(l.lost, lease.Token) // the holder lets go: nothing to tell it any more
	l.mu.Unlock()
	p, m, err := l.request(ctx, "release "+lease.Key+" "+lease.Token, slack)
	if err != nil {
		return err
	}
	if m.verb == "ok" && len(m.args) == 0 {
		return nil
	}
	return l.verdict(p, m, lockimpl.ErrNotHeld)
}

// Extend asks the client to extend lease to ttl from now. nil: extended (its
// Validity updated when the client says); ErrNotHeld: definitely not ours.
func (l *Locker) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	p, m, err := l.request(ctx, fmt.Sprintf("extend %s %s %d", lease.Key, lease.Token, ttl.Milliseconds()), slack)
	if err != nil {
		return err
	}
	if m.verb == "ok" {
		if err := attrs(m.args, lease); err != nil {
			return l.broken(p, fmt.Sprintf("malformed reply %q: %v", m.raw, err))
		}
		return nil
	}
	return l.verdict(p, m, lockimpl.ErrNotHeld)
}

// CanExtend implements lockimpl.ExtendSupport: only a client that said
// extend=true in its hello is sent extend requests.
func (l *Locker) CanExtend() bool { return l.extend }

var (
	_ lockimpl.Extender      = (*Locker)(nil)
	_ lockimpl.ExtendSupport = (*Locker)(nil)
	_ lockimpl.Locker        = (*Locker)(nil)
	_ lockimpl.Process       = (*Locker)(nil)
)
