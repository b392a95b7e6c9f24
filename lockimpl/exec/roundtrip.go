package exec

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

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
// starts (so a runtime's start-up is not counted as the lock's latency),
// and again before each acquire, to start a process that died outside it.
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
// Validity and Acquired updated when the client tells a validity);
// ErrNotHeld: definitely not ours.
func (l *Locker) Extend(ctx context.Context, lease *lockimpl.Lease, ttl time.Duration) error {
	p, m, err := l.request(ctx, fmt.Sprintf("extend %s %s %d", lease.Key, lease.Token, ttl.Milliseconds()), slack)
	if err != nil {
		return err
	}
	if m.verb == "ok" {
		told := lockimpl.Lease{Fence: lease.Fence}
		if err := attrs(m.args, &told); err != nil {
			return l.broken(p, fmt.Sprintf("malformed reply %q: %v", m.raw, err))
		}
		lease.Fence = told.Fence
		if told.Validity > 0 {
			// A validity is what is left as the client answers, an
			// extend's as an acquire's: measured from the acquire, a
			// careful holder would give its extended lease up early.
			lease.Validity, lease.Acquired = told.Validity, l.env.Clock.Now()
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
