package cluster

import (
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// cmd runs one command against addr with a 1 s limit, failing the test on error.
func cmd(t *testing.T, addr string, args ...string) any {
	t.Helper()
	v, err := do(addr, time.Second, args...)
	if err != nil {
		t.Fatalf("%v on %s: %v", args, addr, err)
	}
	return v
}

// serverTime is the server's TIME as a time.Time.
func serverTime(t *testing.T, addr string) time.Time {
	t.Helper()
	v, ok := cmd(t, addr, "TIME").([]any)
	if !ok || len(v) != 2 {
		t.Fatalf("TIME reply %#v", v)
	}
	sec, err1 := strconv.ParseInt(v[0].(string), 10, 64)
	usec, err2 := strconv.ParseInt(v[1].(string), 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("TIME reply %#v", v)
	}
	return time.Unix(sec, usec*1000)
}

func within(got, want time.Time, tol time.Duration) bool {
	d := got.Sub(want)
	return d > -tol && d < tol
}

// testServerControl exercises kill, restart, pause and resume on node 0 of
// either backend; addr returns node 0's current address.
func testServerControl(t *testing.T, ctl ServerControl, addr string) {
	cmd(t, addr, "SET", "k", "v")

	if err := ctl.Kill(0); err != nil {
		t.Fatal(err)
	}
	if _, err := do(addr, 200*time.Millisecond, "PING"); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := ctl.Kill(0); err != nil {
		t.Fatalf("second Kill: %v", err)
	}

	if err := ctl.Restart(0); err != nil {
		t.Fatal(err)
	}
	if got := cmd(t, addr, "PING"); got != "PONG" {
		t.Fatalf("PING after Restart = %v", got)
	}
	if got := cmd(t, addr, "GET", "k"); got != nil {
		t.Fatalf("GET k after Restart = %v, want nil (data wiped)", got)
	}

	cmd(t, addr, "SET", "k", "v2")
	if err := ctl.Pause(0); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := do(addr, 200*time.Millisecond, "GET", "k")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("GET while paused: err = %v, want a timeout", err)
	}
	if el := time.Since(start); el < 150*time.Millisecond {
		t.Fatalf("paused GET failed after %v, before the read timeout", el)
	}
	if err := ctl.Resume(0); err != nil {
		t.Fatal(err)
	}
	if got := cmd(t, addr, "GET", "k"); got != "v2" {
		t.Fatalf("GET k after Resume = %v, want v2 (a pause keeps data)", got)
	}

	// A paused server can still be killed and restarted (SIGKILL beats
	// SIGSTOP; the embedded pause releases its held commands).
	if err := ctl.Pause(0); err != nil {
		t.Fatal(err)
	}
	held := make(chan error, 1)
	go func() { _, err := do(addr, 5*time.Second, "GET", "k"); held <- err }()
	time.Sleep(50 * time.Millisecond)
	if err := ctl.Restart(0); err != nil {
		t.Fatalf("Restart while paused: %v", err)
	}
	select {
	case err := <-held:
		if err == nil {
			t.Error("command held by a pause was answered although the server was killed")
		}
	case <-time.After(2 * time.Second):
		t.Error("command held by a pause still hangs after the restart")
	}
	if got := cmd(t, addr, "PING"); got != "PONG" {
		t.Fatalf("PING after Restart of a paused server = %v", got)
	}
}

// testClockJump checks server clock offsets on node 0 of either backend.
func testClockJump(t *testing.T, ctl ServerControl, addr string) {
	if got := ctl.ClockOffset(0); got != 0 {
		t.Fatalf("initial ClockOffset = %v", got)
	}
	if st := serverTime(t, addr); !within(st, time.Now(), time.Second) {
		t.Fatalf("TIME with no offset = %v, now %v", st, time.Now())
	}
	cmd(t, addr, "SET", "k", "v", "PX", "5000")
	if err := ctl.SetClockOffset(0, 6*time.Second); err != nil {
		t.Fatal(err)
	}
	if got := ctl.ClockOffset(0); got != 6*time.Second {
		t.Fatalf("ClockOffset = %v, want 6s", got)
	}
	if got := cmd(t, addr, "GET", "k"); got != nil {
		t.Fatalf("GET k after +6s jump = %v, want nil (PX 5000 expired)", got)
	}
	if st := serverTime(t, addr); !within(st, time.Now().Add(6*time.Second), time.Second) {
		t.Fatalf("TIME with +6s = %v, want about %v", st, time.Now().Add(6*time.Second))
	}
	// The shifted clock keeps running at real speed.
	a := serverTime(t, addr)
	time.Sleep(100 * time.Millisecond)
	if d := serverTime(t, addr).Sub(a); d < 80*time.Millisecond || d > time.Second {
		t.Fatalf("shifted clock advanced %v in 100ms", d)
	}

	if err := ctl.SetClockOffset(0, -time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, addr); !within(st, time.Now().Add(-time.Hour), time.Second) {
		t.Fatalf("TIME with -1h = %v, want about %v", st, time.Now().Add(-time.Hour))
	}

	// Back to real time: TTLs behave normally again.
	if err := ctl.SetClockOffset(0, 0); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, addr); !within(st, time.Now(), time.Second) {
		t.Fatalf("TIME with offset 0 = %v, now %v", st, time.Now())
	}
	cmd(t, addr, "SET", "k", "v", "PX", "300")
	if pttl, _ := cmd(t, addr, "PTTL", "k").(int64); pttl <= 0 || pttl > 300 {
		t.Fatalf("PTTL at offset 0 = %d, want (0,300]", pttl)
	}
	if got := cmd(t, addr, "GET", "k"); got != "v" {
		t.Fatalf("GET k right after SET PX 300 = %v", got)
	}
	time.Sleep(400 * time.Millisecond)
	if got := cmd(t, addr, "GET", "k"); got != nil {
		t.Fatalf("GET k 400ms after SET PX 300 = %v, want nil", got)
	}
}

func TestServersControl(t *testing.T) {
	s := StartForTest(t, 2)
	p := s.Procs()[0]
	pid := p.Pid()
	testServerControl(t, s, p.Addr)
	if p.Pid() == pid || p.Pid() == 0 {
		t.Errorf("pid after restarts = %d (was %d)", p.Pid(), pid)
	}
	// Node 1 was untouched.
	if err := ping(s.Procs()[1].Addr); err != nil {
		t.Errorf("n2: %v", err)
	}
	if err := s.Kill(2); err == nil {
		t.Error("Kill(2) on a 2-node cluster succeeded")
	}
}

// A server that died by itself (not through Stop) can be started again:
// Start must not think the dead process still runs.
func TestProcessRestartAfterCrash(t *testing.T) {
	s := StartForTest(t, 1)
	p := s.Procs()[0]
	if err := syscallKill(p.Pid()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for p.Running() {
		if time.Now().After(deadline) {
			t.Fatal("process still running after SIGKILL")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Signal(syscall.SIGSTOP); err == nil {
		t.Error("Signal on a dead process succeeded")
	}
	if err := s.Restart(0); err != nil {
		t.Fatal(err)
	}
	if err := ping(p.Addr); err != nil {
		t.Fatal(err)
	}
}

func TestMinisControl(t *testing.T) {
	m, err := StartEmbedded(Options{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	addr := m.Nodes()[0].Addr
	testServerControl(t, m, addr)
	if m.Nodes()[0].Addr != addr {
		t.Errorf("address changed across restarts: %s -> %s", addr, m.Nodes()[0].Addr)
	}
	if err := ping(m.Nodes()[1].Addr); err != nil {
		t.Errorf("n2: %v", err)
	}
}

// Close must not hang on commands held by a pause.
func TestMinisCloseWhilePaused(t *testing.T) {
	m, err := StartEmbedded(Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Pause(0); err != nil {
		t.Fatal(err)
	}
	go do(m.Nodes()[0].Addr, 5*time.Second, "PING")
	time.Sleep(50 * time.Millisecond)
	closed := make(chan struct{})
	go func() { m.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close hangs on a paused server")
	}
}

func TestMinisClock(t *testing.T) {
	m, err := StartEmbedded(Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	testClockJump(t, m, m.Nodes()[0].Addr)

	// The offset survives a restart and keeps ticking for direct readers.
	if err := m.SetClockOffset(0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(0); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, m.Nodes()[0].Addr); !within(st, time.Now().Add(time.Hour), time.Second) {
		t.Fatalf("TIME after restart = %v, want about now+1h", st)
	}
	m.Mini(0).Set("d", "v")
	m.Mini(0).SetTTL("d", 100*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	if m.Mini(0).Exists("d") {
		t.Fatal("key with 100ms TTL still there 200ms later for a direct reader")
	}
}
