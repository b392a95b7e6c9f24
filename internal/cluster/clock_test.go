package cluster

import (
	"errors"
	"github.com/lockstorm/lockstorm/internal/clock"
	"syscall"
	"testing"
	"time"
)

func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func TestServerClock(t *testing.T) {
	s := StartForTestWith(t, Options{Nodes: 1, ServerClock: true})
	testClockJump(t, s, s.Procs()[0].Addr)
}

// Setting the clock back after SET makes the key outlive its PX, because
// Redis stores expiry as an absolute time on its own clock.
func TestServerClockBackwardJumpExtendsTTL(t *testing.T) {
	s := StartForTestWith(t, Options{Nodes: 1, ServerClock: true})
	p := s.Procs()[0]
	cmd(t, p.Addr, "SET", "k", "v", "PX", "300")
	if err := p.SetClockOffset(-2 * time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if got := cmd(t, p.Addr, "GET", "k"); got != "v" {
		t.Fatalf("GET k 600ms after SET PX 300 with the clock set back 2s = %v, want v", got)
	}
	if pttl, _ := cmd(t, p.Addr, "PTTL", "k").(int64); pttl < 1000 {
		t.Fatalf("PTTL = %d, want about 1700", pttl)
	}
	if got := p.ClockOffset(); got != -2*time.Second {
		t.Fatalf("ClockOffset = %v", got)
	}
}

// The offset lives in the node's directory, so a restarted server keeps its
// (wrong) clock, as a real machine would.
func TestServerClockSurvivesRestart(t *testing.T) {
	s := StartForTestWith(t, Options{Nodes: 1, ServerClock: true})
	if err := s.SetClockOffset(0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(0); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, s.Procs()[0].Addr); !within(st, time.Now().Add(time.Hour), time.Second) {
		t.Fatalf("TIME after restart = %v, want about now+1h", st)
	}
}

func TestSetClockOffsetNeedsServerClock(t *testing.T) {
	s := StartForTest(t, 1)
	err := s.SetClockOffset(0, time.Second)
	if !errors.Is(err, ErrNoServerClock) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrNoServerClock", err)
	}
	if got := s.ClockOffset(0); got != 0 {
		t.Fatalf("ClockOffset = %v", got)
	}
}

// A prebuilt shim (make's build/clockshim.so) can be passed instead.
func TestServerClockPrebuiltShim(t *testing.T) {
	shim, err := clock.EnsureShim(t.TempDir())
	if err != nil {
		t.Skip(err)
	}
	s := StartForTestWith(t, Options{Nodes: 1, ServerClock: true, ClockShim: shim})
	if err := s.SetClockOffset(0, time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, s.Procs()[0].Addr); !within(st, time.Now().Add(time.Hour), time.Second) {
		t.Fatalf("TIME = %v, want about now+1h", st)
	}
}
