package cluster

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisServersStartAndStop(t *testing.T) {
	s := StartForTest(t, 3)
	if got := len(s.Nodes()); got != 3 {
		t.Fatalf("nodes = %d, want 3", got)
	}
	pids := []int{}
	for _, p := range s.Procs() {
		if err := ping(p.Addr); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		pids = append(pids, p.Pid())
	}
	root := s.root
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("pid %d still alive after Close", pid)
		}
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("temp dir %s left behind", root)
	}
}

func TestEmbedded(t *testing.T) {
	c, err := Start(context.Background(), Embedded, Options{Nodes: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Kind() != Embedded || len(c.Nodes()) != 2 {
		t.Fatalf("kind %s nodes %d", c.Kind(), len(c.Nodes()))
	}
	if err := ping(c.Nodes()[0].Addr); err != nil {
		t.Fatal(err)
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{{"auto", false}, {"", false}, {"embedded", false}, {"redis-server", false}, {"docker", true}} {
		_, err := Resolve(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("Resolve(%q) err = %v", tc.in, err)
		}
	}
}

// TestEmbeddedScriptWithClockOffset: a Lua script's redis.call goes through
// the server hook while EVAL holds miniredis's lock; with a clock offset set
// that once deadlocked the node.
func TestEmbeddedScriptWithClockOffset(t *testing.T) {
	m, err := StartEmbedded(Options{Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetClockOffset(0, time.Second); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: m.Nodes()[0].Addr, ReadTimeout: 2 * time.Second})
	defer c.Close()
	for i := 0; i < 50; i++ {
		if err := c.Eval(context.Background(), "redis.call('SET', KEYS[1], 'v', 'PX', 1000) return redis.call('GET', KEYS[1])", []string{"k"}).Err(); err != nil {
			t.Fatalf("EVAL %d with a clock offset: %v", i, err)
		}
	}
}
