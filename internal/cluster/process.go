package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockstorm/lockstorm/internal/clock"
)

// Process is one spawned redis-server.
type Process struct {
	Node
	// Port is the TCP port of Addr; a restart reuses it, so clients and
	// proxies keep pointing at the same address.
	Port int
	// Dir is the process's own working directory (log, replica RDB, clock
	// file); it is removed by Servers.Close.
	Dir string
	// Args is the command line, Args[0] being the redis-server binary.
	Args []string
	// Env is added to lockstorm's environment (later entries win), e.g.
	// LD_PRELOAD for the clock shim.
	Env []string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	clock *clock.File // nil unless Options.ServerClock
	// reserved holds the port between its choice and the first start:
	// links point at it before it starts, and no other listener can be
	// given it meanwhile.
	reserved net.Listener
	// BusPort is the cluster bus port of a Redis Cluster node (0
	// otherwise), reserved like Port until the first start.
	BusPort     int
	busReserved net.Listener
}

// BusAddr is the node's own cluster bus address ("" outside a cluster).
func (p *Process) BusAddr() string {
	if p.BusPort == 0 {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.BusPort))
}

// Start launches the process and waits until it answers PING. The child is
// in its own process group (so a terminal's SIGINT reaches only lockstorm,
// which then stops it in order) and gets SIGKILL if lockstorm dies first
// (Pdeathsig), so a killed harness leaves no orphan servers.
//
// Every start begins with an empty dataset: persistence is off, and the RDB
// file a replica's full sync leaves in Dir is removed first, since
// redis-server loads it at start-up whatever --save says. Starting again
// after Stop, or after the process died by itself, is a restart on the same
// port.
func (p *Process) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return fmt.Errorf("%s: already running", p.Name)
	}
	p.cmd = nil // a process that exited by itself is reaped already
	p.release()
	for _, f := range []string{"dump.rdb", "appendonly.aof", "appendonlydir"} {
		if err := os.RemoveAll(filepath.Join(p.Dir, f)); err != nil {
			return fmt.Errorf("%s: wipe data: %w", p.Name, err)
		}
	}
	cmd := exec.Command(p.Args[0], p.Args[1:]...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := startLocked(cmd); err != nil {
		return fmt.Errorf("start redis-server %s: %w", p.Name, err)
	}
	p.cmd = cmd
	p.done = make(chan struct{})
	done := p.done
	go func() { cmd.Wait(); close(done) }()
	if err := waitPing(ctx, p.Addr, cmd.Process.Pid, done, 10*time.Second); err != nil {
		p.stopLocked()
		return fmt.Errorf("redis-server %s on %s: %w (log: %s)", p.Name, p.Addr, err, tail(filepath.Join(p.Dir, "redis.log")))
	}
	return nil
}

// Running reports whether the process has been started and has not exited
// (a paused process is running).
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Pdeathsig fires when the OS thread that forked the child exits. The Go
// runtime retires a thread only when a goroutine locked to it ends, and no
// goroutine of lockstorm locks its thread, so in practice the signal comes
// when the process dies, which is what we want.
func startLocked(cmd *exec.Cmd) error { return cmd.Start() }

// Pid is the running process id, or 0.
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stop kills the server's whole process group (SIGKILL) and waits for it,
// as a crash: the Kill fault relies on it being abrupt. The group, not the
// pid: a wrapper script standing in for redis-server may fork it as a child
// rather than exec it, and that child must not outlive the stop. Stopping a
// stopped process is a no-op.
func (p *Process) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopLocked()
}

func (p *Process) stopLocked() error {
	if p.cmd == nil {
		return nil
	}
	// Start made the server a process group leader (Setpgid), so its pid is
	// the group id. A SIGSTOPped process still dies on SIGKILL. The group
	// can outlive its leader (a wrapper's child), so it is killed even when
	// the leader has exited: the group id cannot be reused while any member
	// lives. The error is ignored: the group may be gone already;
	// waitGroupGone tells either way.
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	p.cmd = nil
	if err := waitGroupGone(pgid, 5*time.Second); err != nil {
		return fmt.Errorf("stop %s: %w", p.Name, err)
	}
	return nil
}

// waitGroupGone waits until no live process is left in group pgid (zombies
// count as gone: they run nothing and hold no port; whoever inherited them
// reaps them).
func waitGroupGone(pgid int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		left := GroupMembers(pgid)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d: processes %v still alive after SIGKILL", pgid, left)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
}

// GroupMembers lists the live (not zombie) processes of process group
// pgid, from /proc.
func GroupMembers(pgid int) []int {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and
		// parentheses, so fields are counted from the last ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(f[2]); err == nil && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// Signal sends sig (SIGSTOP/SIGCONT for a server pause).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return fmt.Errorf("%s: not running", p.Name)
	}
	return p.cmd.Process.Signal(sig)
}

// SetClockOffset makes the server's wall clock run d ahead of real time
// (behind when d is negative), effective at its next clock read: no
// restart, and the offset survives restarts. It moves what Redis computes
// key expiry from, so +d expires keys d early and -d keeps them d longer.
// It needs Options.ServerClock.
func (p *Process) SetClockOffset(d time.Duration) error {
	if p.clock == nil {
		return fmt.Errorf("%s: %w", p.Name, ErrNoServerClock)
	}
	p.clock.Set(d)
	return nil
}

// ClockOffset is the offset last set with SetClockOffset (0 without
// Options.ServerClock).
func (p *Process) ClockOffset() time.Duration {
	if p.clock == nil {
		return 0
	}
	return p.clock.Get()
}

func waitPing(ctx context.Context, addr string, pgid int, done <-chan struct{}, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := ping(addr)
		if err == nil {
			// A PONG proves only that some server has the address: another
			// run's may have taken the port between its choice and this
			// start (this one then exits, "Address already in use"), and a
			// run that took that one for its own locked and observed on a
			// stranger's data until the stranger was stopped.
			if err = ownedBy(addr, pgid); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from the started process within %v: %w", limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return errors.New("exited during start-up")
		case <-time.After(pingEvery):
		}
	}
}

// pingEvery is how often a starting server is asked for PONG: it is up
// within a few ms of its exec, so a coarser poll would be most of its
// start-up.
const pingEvery = 2 * time.Millisecond

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("unexpected reply %q", line)
	}
	return nil
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "no log"
	}
	if len(b) > 600 {
		b = b[len(b)-600:]
	}
	return string(b)
}
