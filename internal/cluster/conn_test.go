package cluster

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/internal/resp"
)

// TestConnReusesAndRedials: a watcher's Conn sends its queries on one
// connection, and when the server dropped it (a node restarted) the next
// query is answered on a fresh one instead of failing.
func TestConnReusesAndRedials(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				r := bufio.NewReader(c)
				for {
					if _, err := resp.Read(r); err != nil {
						return
					}
					body := "cluster_state:ok\r\ncluster_slots_assigned:16384\r\n"
					fmt.Fprintf(c, "$%d\r\n%s\r\n", len(body), body)
				}
			}()
		}
	}()
	accepted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(conns)
	}
	c := &Conn{Addr: ln.Addr().String()}
	defer c.Close()
	for i := 0; i < 3; i++ {
		if st, err := c.ClusterState(); err != nil || st != "ok" {
			t.Fatalf("query %d: %q, %v", i, st, err)
		}
	}
	if n := accepted(); n != 1 {
		t.Fatalf("three queries took %d connections, want 1", n)
	}
	mu.Lock()
	conns[0].Close()
	mu.Unlock()
	if st, err := c.ClusterState(); err != nil || st != "ok" {
		t.Fatalf("after the server dropped the connection: %q, %v", st, err)
	}
	if n := accepted(); n != 2 {
		t.Fatalf("%d connections after a drop, want 2", n)
	}
}
