// Command rueidislock-lost-gate: rueidislock v1.0.79's WithContext can
// lose the gate it waits on, and then waits out its context on a free
// lock. A try that fails starts its monitoring goroutine (lock.go 334)
// before the loop counts the failure (343); when that goroutine runs
// first it reads failures as 0 (297), takes the failed try for the end
// of a held lock, and decrements the gate's waiters to 0 and deletes the
// gate (298-302). WithContext then waits on a gate no invalidation can
// find (onInvalidations looks the name up, 236) until its context ends.
// A standalone reproducer: only the library and a redis-server (on a
// unix socket). NoLoopTracking is false, so a waiter's own writes are
// never the reason it is not told (that is rueidislock-deaf-waiter).
//
//	cd docs/findings/repro/rueidislock-lost-gate && go run .
//
// H holds the lock 2 s and extends it every 2 ms (ExtendInterval); each
// extend's PEXPIREAT invalidates the key, so each of 16 waiters tries
// again and fails, a few thousand times each: every failure is one draw
// of the race. Each waiter is a process of its own, as a deployment's
// clients are: an otherwise idle Go program, whose "go monitoring" hands
// the new goroutine to another thread while the loop's own thread may be
// descheduled (on a busy machine, often enough). H then releases, and
// every waiter takes the lock in turn and gives it back at once. Exit 1
// (and "BUG") when, 1 s after H's release, a waiter still waits while
// the lock is free; 0 when all 16 got it, in each of three rounds; 2
// when it cannot tell.
package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

const (
	waiters = 16
	rounds  = 3 // a round that met no loss is tried again, up to this
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "waiter" {
		os.Exit(waiter(os.Args[2]))
	}
	// A run that hangs fails instead of blocking CI.
	time.AfterFunc(30*time.Second, func() {
		fmt.Println("TIMEOUT: the reproducer did not finish in 30 s")
		os.Exit(2)
	})
	for r := 1; r <= rounds; r++ {
		code, err := run()
		if err != nil {
			fmt.Println("cannot tell:", err)
			os.Exit(2)
		}
		if code != 0 || r == rounds {
			os.Exit(code)
		}
	}
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

// locker is the README's Locker on one node, over the unix socket; the
// builder, when given, wraps its client.
func locker(sock string, extend time.Duration, build func(rueidis.ClientOption) (rueidis.Client, error)) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress: []string{sock},
			DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				return d.DialContext(ctx, "unix", addr)
			},
		},
		ClientBuilder:  build,
		KeyMajority:    1, // "if you have only one Redis instance" (README)
		KeyValidity:    time.Second,
		ExtendInterval: extend,
	})
}

func run() (int, error) {
	dir, err := os.MkdirTemp("", "repro-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	sock, cmd, err := startServer(dir)
	if err != nil {
		return 0, err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	h, err := locker(sock, 2*time.Millisecond, nil)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	_, release, err := h.WithContext(context.Background(), "res")
	if err != nil {
		return 0, fmt.Errorf("H: %w", err)
	}
	t0 := time.Now()
	got, done, err := startWaiters(sock)
	if err != nil {
		return 0, err
	}
	time.Sleep(2 * time.Second)
	release()
	freed := time.Since(t0)
	time.Sleep(time.Second)
	n := got.Load()
	free := "held"
	if o, err := locker(sock, 0, nil); err == nil { // one more takes it at once if it is free
		if _, cancel, err := o.TryWithContext(context.Background(), "res"); err == nil {
			free = "free"
			cancel()
		}
		o.Close()
	}
	lines := done()
	if n < waiters && free == "free" {
		fmt.Printf("BUG: H released at %d ms; 1 s later %d of %d waiters still waited on the free lock: their gate was deleted under them\n",
			freed.Milliseconds(), waiters-int(n), waiters)
		fmt.Print(lines)
		return 1, nil
	}
	fmt.Printf("H released at %d ms; 1 s later %d of %d waiters had had the lock, and it was %s\n",
		freed.Milliseconds(), n, waiters, free)
	if n < waiters {
		return 0, fmt.Errorf("%d waiters got the lock, and it was held", n)
	}
	return 0, nil
}

// startWaiters starts the waiter processes; got counts those that had the
// lock, and done waits for them all and returns their lines.
func startWaiters(sock string) (*atomic.Int32, func() string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil, err
	}
	var got atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lines strings.Builder
	for i := 0; i < waiters; i++ {
		p := exec.Command(self, "waiter", sock)
		out, _ := p.StdoutPipe()
		if err := p.Start(); err != nil {
			return nil, nil, err
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b, _ := io.ReadAll(out)
			p.Wait()
			if strings.HasPrefix(string(b), "ok") {
				got.Add(1)
			}
			mu.Lock()
			fmt.Fprintf(&lines, "  waiter %d: %s", i, b)
			mu.Unlock()
		}(i)
	}
	return &got, func() string { wg.Wait(); return lines.String() }, nil
}

// waiter waits up to 3 s for the lock, gives it back at once, and says
// whether it got it and after how many commands (its failed tries).
func waiter(sock string) int {
	var sent atomic.Int32
	w, err := locker(sock, 0, func(o rueidis.ClientOption) (rueidis.Client, error) {
		c, err := rueidis.NewClient(o)
		return counter{c, &sent}, err
	})
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer w.Close()
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	if _, cancel, err := w.WithContext(ctx, "res"); err != nil {
		fmt.Printf("%v after %d commands\n", err, sent.Load())
		return 1
	} else {
		cancel()
	}
	fmt.Printf("ok after %d commands\n", sent.Load())
	return 0
}

// counter counts the commands a waiter's client sends.
type counter struct {
	rueidis.Client
	n *atomic.Int32
}

func (c counter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}
