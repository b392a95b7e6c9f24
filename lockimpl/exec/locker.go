package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/clock"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// The runner's optional interfaces a client process's Locker has.
var (
	_ lockimpl.Readier         = (*Locker)(nil)
	_ lockimpl.ProcessReporter = (*Locker)(nil)
	_ lockimpl.Process         = (*Locker)(nil)
)

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
		"LOCKSTORM_COMMAND_TIMEOUT_MS="+strconv.FormatInt(env.CommandTimeout.Milliseconds(), 10),
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
