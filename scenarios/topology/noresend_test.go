package topology

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/internal/resp"
)

// TestReplyLost: what counts as a reply lost after the command was sent
// (not resent) and what proves it was not sent or was answered.
func TestReplyLost(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"read timeout", timeout, true},
		{"wrapped read timeout", fmt.Errorf("set: %w", timeout), true},
		{"EOF", io.EOF, true},
		{"reset while reading", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"failed dial", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, false},
		{"context deadline", context.DeadlineExceeded, false},
		{"error reply", redis.Nil, false},
		{"MOVED", errors.New("MOVED 7495 127.0.0.1:7001"), false},
	}
	for _, tc := range tests {
		if got := replyLost(tc.err); got != tc.want {
			t.Errorf("%s: replyLost(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestClusterClientDoesNotResend: a cluster client whose SET's reply never
// comes sends it once with noResend on its nodes; without it, go-redis
// sends it again (the control: the test can fail). The node is a fake that
// serves the whole slot range and never answers a SET.
func TestClusterClientDoesNotResend(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noResend bool
	}{{"noResend", true}, {"go-redis alone", false}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, sets := silentNode(t)
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, MaxRedirects: clusterTries,
				MaxRetries: -1, ReadTimeout: 100 * time.Millisecond, WriteTimeout: 100 * time.Millisecond,
				DialTimeout: time.Second, MaxRetryBackoff: 10 * time.Millisecond, ContextTimeoutEnabled: true,
				Protocol: 2, DisableIdentity: true})
			defer rdb.Close()
			if tc.noResend {
				rdb.OnNewNode(func(node *redis.Client) { node.AddHook(noResend{}) })
			}
			err := rdb.SetNX(context.Background(), "lock:0", "token", time.Second).Err()
			if err == nil {
				t.Fatal("SET NX answered; the node never answers")
			}
			n := sets.Load()
			switch {
			case tc.noResend && n != 1:
				t.Fatalf("SET sent %d times with noResend (err %v), want once", n, err)
			case tc.noResend && !strings.Contains(err.Error(), "outcome unknown"):
				t.Fatalf("err %v, want the lost reply named", err)
			case !tc.noResend && n < 2:
				t.Fatalf("SET sent %d times without noResend: go-redis no longer resends, the hook may be moot", n)
			}
		})
	}
}

// silentNode is a fake cluster node on a loopback port: it says it serves
// every slot, answers everything but SET, and counts the SETs it gets.
func silentNode(t *testing.T) (string, *atomic.Int64) {
	l, err := cluster.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	addr := l.Addr().(*net.TCPAddr)
	var sets atomic.Int64
	slots := fmt.Sprintf("*1\r\n*3\r\n:0\r\n:16383\r\n*3\r\n$9\r\n127.0.0.1\r\n:%d\r\n$40\r\n%040d\r\n", addr.Port, 1)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					v, err := resp.Read(r)
					if err != nil {
						return
					}
					args, _ := v.([]any)
					if len(args) == 0 {
						return
					}
					cmd := strings.ToUpper(fmt.Sprint(args[0]))
					switch {
					case cmd == "SET":
						sets.Add(1) // never answered
					case cmd == "CLUSTER":
						_, _ = io.WriteString(c, slots)
					case cmd == "HELLO":
						_, _ = io.WriteString(c, "-ERR unknown command 'HELLO'\r\n")
					case cmd == "COMMAND":
						_, _ = io.WriteString(c, "*0\r\n")
					default:
						_, _ = io.WriteString(c, "+OK\r\n")
					}
				}
			}()
		}
	}()
	return addr.String(), &sets
}
