package cluster

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"time"
)

// ServerControl injects server faults. Both backends implement it (*Servers
// and *Minis), so a nemesis can type-assert a Cluster to it whichever backend
// runs. Node indexes i follow Cluster.Nodes(); replicas are reached through
// their *Process.
type ServerControl interface {
	// Kill stops node i abruptly, as a crash: its connections drop and its
	// address refuses new ones. Killing a dead node is a no-op.
	Kill(i int) error
	// Restart brings node i back on the same address with an empty dataset
	// (no persistence, as after a crash), killing it first if it runs, and
	// returns once it answers.
	Restart(i int) error
	// Pause freezes node i: connections stay open but no command is
	// answered until Resume, as when a server stalls (GC-like pause, VM
	// freeze, SIGSTOP).
	Pause(i int) error
	// Resume ends a Pause; the queued commands then run.
	Resume(i int) error
	// SetClockOffset sets node i's wall clock d ahead of real time (behind
	// when negative), which is what key expiry is measured against.
	SetClockOffset(i int, d time.Duration) error
	// ClockOffset is node i's current clock offset.
	ClockOffset(i int) time.Duration
}

// Both backends must keep implementing ServerControl.
var (
	_ ServerControl = (*Servers)(nil)
	_ ServerControl = (*Minis)(nil)
)

// ErrNoServerClock is returned by clock faults on a redis-server cluster
// started without Options.ServerClock.
var ErrNoServerClock = fmt.Errorf("server clock faults need Options.ServerClock (the LD_PRELOAD clock shim): %w", errors.ErrUnsupported)

// restartTimeout bounds how long Restart waits for PONG: a redis-server with
// no data to load answers within milliseconds.
const restartTimeout = 10 * time.Second

func (s *Servers) proc(i int) (*Process, error) {
	if i < 0 || i >= len(s.procs) {
		return nil, fmt.Errorf("node index %d out of range [0,%d)", i, len(s.procs))
	}
	return s.procs[i], nil
}

// Kill implements ServerControl: SIGKILL, then wait for the exit.
func (s *Servers) Kill(i int) error {
	p, err := s.proc(i)
	if err != nil {
		return err
	}
	return p.Stop()
}

// Restart implements ServerControl: SIGKILL if running, then a fresh
// redis-server on the same port with no data.
func (s *Servers) Restart(i int) error {
	p, err := s.proc(i)
	if err != nil {
		return err
	}
	if err := p.Stop(); err != nil {
		return err
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return fmt.Errorf("restart %s: cluster closed", p.Name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), restartTimeout)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		return err
	}
	s.log.Debug("redis-server restarted", "node", p.Name, "addr", p.Addr, "pid", p.Pid())
	return nil
}

// Pause implements ServerControl with SIGSTOP: the kernel still completes
// TCP handshakes and buffers requests, but nothing is answered.
func (s *Servers) Pause(i int) error {
	p, err := s.proc(i)
	if err != nil {
		return err
	}
	return p.Signal(syscall.SIGSTOP)
}

// Resume implements ServerControl with SIGCONT.
func (s *Servers) Resume(i int) error {
	p, err := s.proc(i)
	if err != nil {
		return err
	}
	return p.Signal(syscall.SIGCONT)
}

// SetClockOffset implements ServerControl; it needs Options.ServerClock.
func (s *Servers) SetClockOffset(i int, d time.Duration) error {
	p, err := s.proc(i)
	if err != nil {
		return err
	}
	return p.SetClockOffset(d)
}

// ClockOffset implements ServerControl (0 for an index out of range).
func (s *Servers) ClockOffset(i int) time.Duration {
	p, err := s.proc(i)
	if err != nil {
		return 0
	}
	return p.ClockOffset()
}
