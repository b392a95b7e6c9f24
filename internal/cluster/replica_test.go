package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/resp"
)

// waitValue polls GET key on addr until it returns want.
func waitValue(t *testing.T, addr, key, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := do(addr, time.Second, "GET", key)
		if err == nil && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s on %s = %v, %v; want %q", key, addr, v, err, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestReplicaFollowsAndPromotes(t *testing.T) {
	s := StartForTest(t, 1)
	master := s.Procs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := s.AddReplica(ctx, master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitLinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	if len(s.Nodes()) != 1 || len(s.Replicas()) != 1 || r.Name != "r1" {
		t.Fatalf("nodes %d replicas %d name %s", len(s.Nodes()), len(s.Replicas()), r.Name)
	}

	cmd(t, master.Addr, "SET", "lock", "owner-1")
	waitValue(t, r.Addr, "lock", "owner-1")
	if _, err := do(r.Addr, time.Second, "SET", "x", "y"); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("write to replica: err = %v, want READONLY", err)
	}

	if err := r.Promote(); err != nil {
		t.Fatal(err)
	}
	if got := cmd(t, r.Addr, "SET", "lock", "owner-2"); got != "OK" {
		t.Fatalf("SET on promoted replica = %v", got)
	}
	info, err := r.ReplicationInfo()
	if err != nil || info["role"] != "master" {
		t.Fatalf("role after Promote = %q (%v)", info["role"], err)
	}
	// The old master still holds the old owner: the split brain a
	// failover can create.
	if got := cmd(t, master.Addr, "GET", "lock"); got != "owner-1" {
		t.Fatalf("old master GET = %v", got)
	}

	pid := r.Pid()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("replica pid %d alive after Close", pid)
	}
	if _, err := s.AddReplica(ctx, master.Addr); err == nil {
		t.Error("AddReplica after Close succeeded")
	}
}

// The replication link can go through a proxy the caller owns: here a bare
// TCP forwarder; in runs, a toxiproxy.
func TestReplicaThroughProxy(t *testing.T) {
	s := StartForTest(t, 1)
	master := s.Procs()[0]
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	proxied := make(chan struct{}, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			proxied <- struct{}{}
			u, err := net.Dial("tcp", master.Addr)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := s.AddReplica(ctx, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := r.WaitLinkUp(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proxied:
	default:
		t.Fatal("replica did not connect through the proxy")
	}
	cmd(t, master.Addr, "SET", "k", "via-proxy")
	waitValue(t, r.Addr, "k", "via-proxy")
}

// A replica of a clocked cluster runs under the shim too.
func TestReplicaServerClock(t *testing.T) {
	s := StartForTestWith(t, Options{Nodes: 1, ServerClock: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := s.AddReplica(ctx, s.Procs()[0].Addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetClockOffset(time.Hour); err != nil {
		t.Fatal(err)
	}
	if st := serverTime(t, r.Addr); !within(st, time.Now().Add(time.Hour), time.Second) {
		t.Fatalf("replica TIME = %v, want about now+1h", st)
	}
}

// TestWaitOnlineAcknowledgesAtOnce: once WaitOnline returns, a write is
// acknowledged by the replica within WAIT's timeout. WaitLinkUp alone is
// not enough: after a diskless sync the master counts the replica only
// from its first REPLCONF ACK, up to a second later, and a lock that WAITs
// meanwhile is refused (sentinel-partition's set-nx-px-wait held once in
// its first second on half of its runs).
func TestWaitOnlineAcknowledgesAtOnce(t *testing.T) {
	s := StartForTest(t, 1)
	master := s.Procs()[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := 0; i < 4; i++ {
		r, err := s.AddReplica(ctx, master.Addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WaitOnline(ctx, master.Addr); err != nil {
			t.Fatal(err)
		}
		// One connection: WAIT counts acknowledgements of this
		// connection's own writes.
		got := cmdsOn(t, master.Addr, []string{"SET", "k", "v"}, []string{"WAIT", fmt.Sprint(i + 1), "300"})
		if got[1] != int64(i+1) {
			t.Fatalf("replica %d: WAIT %d 300 right after WaitOnline = %v, want %d", i+1, i+1, got[1], i+1)
		}
	}
}

// cmdsOn sends the commands one after another on one connection to addr
// and returns their replies, failing the test on any error.
func cmdsOn(t *testing.T, addr string, cmds ...[]string) []any {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	var out []any
	for _, args := range cmds {
		if err := resp.Write(c, args...); err != nil {
			t.Fatal(err)
		}
		v, err := resp.Read(r)
		if err != nil {
			t.Fatalf("%v on %s: %v", args, addr, err)
		}
		out = append(out, v)
	}
	return out
}
