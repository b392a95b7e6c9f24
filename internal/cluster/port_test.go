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
	"syscall"
	"testing"
	"time"
)

// TestStartMovesOffATakenPort: a port taken between FreePort's probe and
// the server's bind (seen once on a busy machine: "Address already in
// use", the run lost) is replaced by a fresh one before the first start.
func TestStartMovesOffATakenPort(t *testing.T) {
	s := StartForTest(t, 1)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	p, err := s.newProcess("x1")
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	s.procs = append(s.procs, p) // stopped with the cluster
	s.mu.Unlock()
	for i, a := range p.Args {
		if a == "--port" {
			p.Args[i+1] = strconv.Itoa(port)
		}
	}
	p.Port, p.Addr = port, net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := p.startOnFreePort(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.Port == port || p.Pid() == 0 {
		t.Fatalf("started on port %d (taken: %d), pid %d", p.Port, port, p.Pid())
	}
}

// TestStartRefusesAStrangersPort: a server whose port another server took
// before it bound it must not be taken for started because the stranger
// answers PING (the CI failure of sentinel-kill × fenced: a run locked
// and observed on another run's n1 until that one was killed).
func TestStartRefusesAStrangersPort(t *testing.T) {
	s := StartForTest(t, 1)
	stranger := s.Procs()[0]
	p, err := s.newProcess("n-late")
	if err != nil {
		t.Fatal(err)
	}
	p.release()
	defer p.Stop()
	for i, a := range p.Args {
		if a == "--port" {
			p.Args[i+1] = fmt.Sprint(stranger.Port)
		}
	}
	p.Port, p.Addr = stranger.Port, stranger.Addr
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = p.Start(ctx)
	if err == nil {
		t.Fatalf("Start on a port a running server holds succeeded (pid %d; the stranger is %d)", p.Pid(), stranger.Pid())
	}
	if !strings.Contains(err.Error(), "Address already in use") {
		t.Errorf("Start: %v; want the server's own 'Address already in use'", err)
	}
	if err := ownedBy(stranger.Addr, stranger.Pid()); err != nil {
		t.Errorf("the stranger is not its own: %v", err)
	}
}

// TestPortsNeverRepeat: a port is handed out once per process. A crashed
// node keeps its address; had the kernel given the freed port to a
// parallel test's server, a client dialing the dead node would have
// reached a stranger (TestRedlockQuorum once won a quorum that way).
func TestPortsNeverRepeat(t *testing.T) {
	seen := map[int]bool{}
	for i := 0; i < 400; i++ {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice (draw %d)", p, i)
		}
		seen[p] = true
	}
}

// TestPortClaimedElsewhereIsSkipped: a port whose claim another process
// holds (a parallel test binary whose stopped node still stands for it) is
// not handed out here.
func TestPortClaimedElsewhereIsSkipped(t *testing.T) {
	if os.Getenv("LOCKSTORM_PORT_HOLDER") != "" {
		port, _ := strconv.Atoi(os.Getenv("LOCKSTORM_PORT_HOLDER"))
		if !claimPort(port) {
			os.Exit(3)
		}
		fmt.Println("claimed")
		time.Sleep(time.Minute) // killed by the parent
		return
	}
	port, holder := startHolder(t)
	defer func() { holder.Process.Kill(); holder.Wait() }()
	if claimPort(port) {
		t.Fatalf("port %d claimed here while another process holds its claim", port)
	}
	holder.Process.Kill()
	holder.Wait()
	if !claimSoon(port) {
		t.Fatalf("port %d: the claim outlived its holder", port)
	}
}

// startHolder starts a process of this test that claims a free port and
// keeps its claim. The port is one this process never handed out (it
// holds the claims of those for its life); a port whose claim another
// process holds (a parallel test binary's, a sweep's for a moment) makes
// the holder give up, and another port is tried.
func startHolder(t *testing.T) (int, *exec.Cmd) {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		handedOut.Lock()
		ours := handedOut.ports[port]
		handedOut.Unlock()
		if ours {
			defer l.Close() // kept while looking further, so the kernel offers another
			continue
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestPortClaimedElsewhereIsSkipped$")
		cmd.Env = append(os.Environ(), "LOCKSTORM_PORT_HOLDER="+strconv.Itoa(port))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		l.Close()
		if strings.Contains(line, "claimed") {
			return port, cmd
		}
		cmd.Process.Kill()
		cmd.Wait()
	}
	t.Fatal("no free port whose claim a holder could take in 20 tries")
	return 0, nil
}

// claimSoon claims port, trying again for a second: another test binary's
// sweep (sweepClaims) may hold a dead claim's lock for a moment, and on a
// busy machine that moment can last milliseconds. A live claim refuses
// for good.
func claimSoon(port int) bool {
	for deadline := time.Now().Add(time.Second); ; time.Sleep(5 * time.Millisecond) {
		if ok := claimPort(port); ok || time.Now().After(deadline) {
			return ok
		}
	}
}

// TestSweepRemovesOnlyDeadClaims: a claim file no process holds (its
// claimer died) is removed by the sweep; one a live process holds stays.
func TestSweepRemovesOnlyDeadClaims(t *testing.T) {
	if err := os.MkdirAll(portClaims, 0o755); err != nil {
		t.Fatal(err)
	}
	name := func(what string) string {
		return filepath.Join(portClaims, fmt.Sprintf("test-%s-%d", what, os.Getpid()))
	}
	dead, live := name("dead"), name("live")
	if err := os.WriteFile(dead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(live, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { f.Close(); os.Remove(live) }()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	sweepClaims()
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a claim nobody holds is left: %v", err)
	}
	if !isFileAt(f, live) {
		t.Errorf("a held claim was removed")
	}
}
