package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// startOnFreePort starts p and, when another process took its port between
// FreePort's probe and the server's bind (parallel test binaries, a busy
// CI machine), moves it to a fresh port and tries again: before the first
// start nobody knows the address yet.
func (p *Process) startOnFreePort(ctx context.Context) error {
	var err error
	for try := 0; try < 4; try++ {
		if err = p.Start(ctx); err == nil || !strings.Contains(err.Error(), "Address already in use") {
			return err
		}
		port, perr := FreePort()
		if perr != nil {
			return errors.Join(err, perr)
		}
		setArg(p.Args, "--port", port)
		p.Port, p.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if p.BusPort != 0 {
			// The cluster bus port may be the one taken: it moves too.
			if p.BusPort, perr = FreePort(); perr != nil {
				return errors.Join(err, perr)
			}
			setArg(p.Args, "--cluster-port", p.BusPort)
		}
	}
	return err
}

// setArg sets the value after flag in args.
func setArg(args []string, flag string, v int) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			args[i+1] = strconv.Itoa(v)
		}
	}
}

// ownedBy checks that the server answering at addr belongs to process
// group pgid (the started process's own; a wrapper script may fork the
// server rather than exec it, and the child stays in the group).
func ownedBy(addr string, pgid int) error {
	pid, err := infoInt(addr, "server", "process_id")
	if err != nil {
		return err
	}
	if g, err := syscall.Getpgid(int(pid)); err != nil || g != pgid {
		return fmt.Errorf("%s is answered by another process (pid %d, group %d), not the one started (group %d)", addr, pid, g, pgid)
	}
	return nil
}

// release lets the reserved port go, for the server to bind it.
func (p *Process) release() {
	if p.reserved != nil {
		p.reserved.Close()
		p.reserved = nil
	}
	if p.busReserved != nil {
		p.busReserved.Close()
		p.busReserved = nil
	}
}

// handedOut holds every port this process has handed out. A port is never
// handed out twice: a stopped (crashed) node keeps its address, and a
// client that still dials it must meet a refused connection, not another
// run's server that the kernel gave the freed port to. (A parallel test
// once reached a quorum through such a stranger.)
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// portClaims is where processes of lockstorm claim the ports they hand
// out: a file per port, flocked for as long as the claiming process lives
// (the kernel drops the lock when it dies). Two test binaries run at once
// (go test runs packages in parallel), and the kernel may give one the port
// the other's stopped node still stands for; a claim held elsewhere makes
// the port unavailable here.
var portClaims = filepath.Join(os.TempDir(), fmt.Sprintf("lockstorm-ports-%d", os.Getuid()))

// claimPort takes port's claim file, or reports that another live process
// holds it. Without the folder there are no claims to respect (the
// in-process record still holds).
func claimPort(port int) bool {
	if err := os.MkdirAll(portClaims, 0o755); err != nil {
		return true
	}
	sweep.Do(sweepClaims)
	path := filepath.Join(portClaims, strconv.Itoa(port))
	for try := 0; ; try++ {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return true
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			// Held: by a live claimer, or for a moment by another
			// process's sweep removing a dead claim. Either way the port
			// is skipped, which costs nothing: another is drawn.
			f.Close()
			return !errors.Is(err, syscall.EWOULDBLOCK)
		}
		// A sweep may have removed the file between the open and the
		// lock: a lock on a removed file claims nothing, as the next
		// claimer creates a new one.
		if !isFileAt(f, path) && try < 3 {
			f.Close()
			continue
		}
		claimFiles = append(claimFiles, f) // held open: the claim lasts the process
		return true
	}
}

// sweep runs sweepClaims once per process, before its first claim.
var sweep sync.Once

// sweepClaims removes the claim files no live process holds. The kernel
// drops a dead process's lock but not its file, so every port any run
// ever used left one behind (thousands in a day's work). A file is removed
// only while this process holds its lock and only if it is still the file
// at its path; as nobody else removes a file whose lock is held, and a
// claimer checks after locking that its file is still there (claimPort),
// a removal cannot let two live processes claim one port.
func sweepClaims() {
	entries, err := os.ReadDir(portClaims)
	if err != nil {
		return
	}
	for _, e := range entries {
		path := filepath.Join(portClaims, e.Name())
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil && isFileAt(f, path) {
			_ = os.Remove(path)
		}
		f.Close()
	}
}

// isFileAt says whether the open file f is the file at path (the same
// inode), not one that replaced it or none.
func isFileAt(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}

// claimFiles keeps the claims' files open (guarded by handedOut).
var claimFiles []*os.File

// reservePort asks the kernel for a free loopback port this process has
// not handed out before, and keeps it listening until released.
func reservePort() (net.Listener, int, error) {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		// Kept open while looking further, so the kernel offers another.
		if (handedOut.ports[port] || !claimPort(port)) && len(held) < 64 {
			held = append(held, l)
			continue
		}
		handedOut.ports[port] = true
		return l, port, nil
	}
}

// Listen listens on a free loopback port this process has not handed out
// before: the proxies and relays of a run take their ports from the same
// pool as the servers, so none lands on a stopped server's address.
func Listen() (net.Listener, error) {
	l, _, err := reservePort()
	return l, err
}

// FreePort asks the kernel for a free loopback port this process has not
// handed out before.
func FreePort() (int, error) {
	l, port, err := reservePort()
	if err != nil {
		return 0, err
	}
	l.Close()
	return port, nil
}
