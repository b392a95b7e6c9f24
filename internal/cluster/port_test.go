package cluster

import (
	"context"
	"net"
	"strconv"
	"testing"
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
