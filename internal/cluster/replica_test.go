package cluster

import (
	"context"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
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
