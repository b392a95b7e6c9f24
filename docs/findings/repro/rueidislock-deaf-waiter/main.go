// Command rueidislock-deaf-waiter: rueidislock v1.0.79 with NoLoopTracking
// (as its README's example sets it) leaves a waiter deaf for good when the
// reply to one of its tries comes back later than TryNextAfter while that
// try's SET won: the waiter deletes its own key, which (NOLOOP) tells it
// nothing and drops its tracking of the key, and WithContext then waits
// for an invalidation that never comes, the key free. A standalone
// reproducer: only the library and a redis-server (on unix sockets).
//
//	cd docs/findings/repro/rueidislock-deaf-waiter && go run .
//	go run . -noloop=false    # the same schedule, NoLoopTracking false
//
// W reaches the server through a tiny proxy of this file's own that holds
// one reply 100 ms. W calls WithContext (1.5 s to wait) on a free lock: its
// try (lock.go try, acquire) sends the SET NX PXAT script, which takes the
// key; the reply is held, the try times out at TryNextAfter (20 ms,
// lock.go 155-159), and its monitoring goroutine runs delkey on its own
// key (lock.go 292-294: any error but ErrNotLocked). W then waits on the
// gate for an invalidation (lock.go 399-409; it polls only when the cache
// is disabled). Under NOLOOP the server sends no invalidation for W's own
// DEL and forgets that W tracked the key, so no later write reaches W
// either: B takes and releases the lock at 500 ms, and W still waits.
// Exit 1 (and "BUG") when W's wait ran out though the lock was free and
// taken by B meanwhile; 0 when W acquired; 2 when it cannot tell.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

func main() {
	noloop := flag.Bool("noloop", true, "LockerOption.NoLoopTracking")
	flag.Parse()
	// A run that hangs fails instead of blocking CI.
	time.AfterFunc(30*time.Second, func() {
		fmt.Println("TIMEOUT: the reproducer did not finish in 30 s")
		os.Exit(2)
	})
	code, err := run(*noloop)
	if err != nil {
		fmt.Println("cannot tell:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// startServer starts a redis-server on a unix socket of its own (no TCP
// port to race for on a shared machine) and waits until it answers PING.
func startServer(dir string) (string, *exec.Cmd, error) {
	path := filepath.Join(dir, "n1.sock")
	cmd := exec.Command("redis-server", "--port", "0", "--unixsocket", path,
		"--unixsocketperm", "700", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("unix", path); err == nil {
			buf := make([]byte, 7)
			c.Write([]byte("PING\r\n"))
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, _ := io.ReadAtLeast(c, buf, 7)
			c.Close()
			if string(buf[:n]) == "+PONG\r\n" {
				return path, cmd, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	return "", nil, fmt.Errorf("redis-server did not answer on %s", path)
}

// proxy forwards its socket to the server's; while hold is above zero,
// each reply chunk is held 100 ms (in order: the pump sleeps) and hold
// counts down.
type proxy struct {
	ln   net.Listener
	hold atomic.Int32
}

func newProxy(path, server string) (*proxy, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", server)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(up, c); up.Close() }()
			go p.replies(c, up)
		}
	}()
	return p, nil
}

func (p *proxy) replies(c, up net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := up.Read(buf)
		if n > 0 {
			if p.hold.Load() > 0 {
				p.hold.Add(-1)
				time.Sleep(100 * time.Millisecond)
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func locker(sock string, noloop bool) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress: []string{sock},
			DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				return d.DialContext(ctx, "unix", addr)
			},
		},
		KeyMajority:    1, // "if you have only one Redis instance" (README)
		NoLoopTracking: noloop,
		KeyValidity:    2 * time.Second,
	})
}

func run(noloop bool) (int, error) {
	dir, err := os.MkdirTemp("", "repro-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	server, cmd, err := startServer(dir)
	if err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	px, err := newProxy(filepath.Join(dir, "proxy.sock"), server)
	if err != nil {
		return 0, err
	}
	defer px.ln.Close()
	w, err := locker(px.ln.Addr().String(), noloop)
	if err != nil {
		return 0, err
	}
	defer w.Close()
	b, err := locker(server, noloop)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	// A warm-up through the proxy, unheld: the scripts loaded, the
	// connection's tracking on.
	if _, cancel, err := w.TryWithContext(context.Background(), "warm-up"); err != nil {
		return 0, fmt.Errorf("warm-up: %w", err)
	} else {
		cancel()
	}

	px.hold.Store(1) // W's first try's reply comes back 100 ms late
	t0 := time.Now()
	wctx, stop := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer stop()
	type result struct {
		at  time.Duration
		err error
	}
	got := make(chan result, 1)
	go func() {
		_, cancel, err := w.WithContext(wctx, "res")
		if err == nil {
			cancel()
		}
		got <- result{time.Since(t0), err}
	}()
	// B takes the lock at 500 ms and gives it back 100 ms later: two
	// writes of the key W waits on.
	time.Sleep(500 * time.Millisecond)
	select {
	case r := <-got:
		fmt.Printf("W acquired after %d ms (err %v); B not needed\n", r.at.Milliseconds(), r.err)
		return 0, r.err
	default:
	}
	bTook := takeAndRelease(b, t0)
	r := <-got
	fmt.Printf("NoLoopTracking %v: W's WithContext after %d ms: %v; %s\n", noloop, r.at.Milliseconds(), errOr(r.err), bTook)
	if r.err == nil {
		return 0, nil
	}
	if errors.Is(r.err, context.DeadlineExceeded) && bTook != "B was refused" {
		fmt.Println("BUG: W waited out its 1.5 s on a free lock: its late try's own delkey left it deaf, and B's take and release never woke it")
		return 1, nil
	}
	return 0, fmt.Errorf("W: %v; %s", r.err, bTook)
}

func errOr(err error) string {
	if err == nil {
		return "acquired"
	}
	return err.Error()
}

// takeAndRelease has B take the lock and give it back 100 ms later: two
// writes of the key W waits on.
func takeAndRelease(b rueidislock.Locker, t0 time.Time) string {
	_, cancel, err := b.TryWithContext(context.Background(), "res")
	if err != nil {
		return "B was refused"
	}
	took := fmt.Sprintf("B took the lock at %d ms and released it", time.Since(t0).Milliseconds())
	time.Sleep(100 * time.Millisecond)
	cancel()
	return took
}
