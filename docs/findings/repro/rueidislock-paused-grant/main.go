// Command rueidislock-paused-grant: rueidislock v1.0.79 grants a lock
// whose lease ran out during the try when the process was paused (a GC
// pause, a stopped VM, SIGSTOP) between its SET and the reply. try arms a
// timer for the lease as it starts (lock.go 266) and grants if it can
// still stop it (353); after a pause the timer is due but not yet run,
// so Stop succeeds and the try grants, although the key expired on the
// server meanwhile and another client holds it. The README says "If the
// KeyMajority is satisfied within the KeyValidity duration, the
// invocation is successful" (64). A standalone reproducer: only the
// library and a redis-server (on a unix socket).
//
//	cd docs/findings/repro/rueidislock-paused-grant && go run .
//
// W is a child process of this program (KeyValidity 300 ms), reaching the
// server through a tiny proxy of its own. When W's acquire script reaches
// the proxy, the proxy SIGSTOPs W, then forwards the script, whose SET NX
// PXAT takes the free key. 600 ms later the key has expired and B
// (direct) takes it; then W is continued and reads the reply. A round
// whose try was refused (the timer ran first) is tried again, 20 rounds at
// most. W runs on eight Ps (runtime.GOMAXPROCS), as a server on a larger
// machine does: the grant needs the reply read on another P than the one
// whose timer heap holds the lease's timer (on one P the due timer always
// runs first, and no round was granted in 80 here). Exit 1 (and "BUG") when W's WithContext returned the lock while B
// held it; 0 when every round's try was refused; 2 when it cannot tell.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

const validity = 300 * time.Millisecond

func main() {
	if len(os.Args) == 4 && os.Args[1] == "waiter" {
		os.Exit(waiter(os.Args[2], os.Args[3]))
	}
	// A run that hangs fails instead of blocking CI.
	time.AfterFunc(60*time.Second, func() {
		fmt.Println("TIMEOUT: the reproducer did not finish in 60 s")
		os.Exit(2)
	})
	code, err := run()
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

// proxy forwards its socket to the server's; once armed, the next request
// chunk is forwarded only after onRequest returns (once).
type proxy struct {
	ln        net.Listener
	armed     atomic.Bool
	onRequest func()
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
			go func() { io.Copy(c, up); c.Close() }()
			go p.requests(c, up)
		}
	}()
	return p, nil
}

func (p *proxy) requests(c, up net.Conn) {
	defer up.Close()
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if p.armed.CompareAndSwap(true, false) {
				p.onRequest()
			}
			if _, werr := up.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// locker is the README's Locker on one node, over the unix socket, with
// the lease given and TryNextAfter try (0: its 20 ms default).
func locker(sock string, lease, try time.Duration) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{
			InitAddress: []string{sock},
			DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
				return d.DialContext(ctx, "unix", addr)
			},
		},
		KeyMajority:  1, // "if you have only one Redis instance" (README)
		KeyValidity:  lease,
		TryNextAfter: try,
	})
}

const rounds = 40 // a round whose try was refused is tried again, up to this

func run() (int, error) {
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
	// B is not on trial: a slow reply must not fail it, nor a late extend
	// lose it.
	b, err := locker(server, 5*time.Second, time.Second)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	for r := 1; r <= rounds; r++ {
		late, line, err := round(px, b, fmt.Sprintf("res-%d", r))
		if err != nil {
			return 0, err
		}
		fmt.Printf("round %d: %s\n", r, line)
		if late {
			fmt.Printf("BUG: W's WithContext granted a lock whose %d ms lease ran out during the try, while B holds it\n", validity.Milliseconds())
			return 1, nil
		}
	}
	return 0, nil
}

// round starts W, pauses it as its acquire of name reaches the proxy, lets
// B take name once W's key expired, continues W, and reads what W's
// WithContext returned: late is a grant that came after the pause.
func round(px *proxy, b rueidislock.Locker, name string) (late bool, line string, err error) {
	self, err := os.Executable()
	if err != nil {
		return false, "", err
	}
	w := exec.Command(self, "waiter", px.ln.Addr().String(), name)
	in, _ := w.StdinPipe()
	outp, _ := w.StdoutPipe()
	if err := w.Start(); err != nil {
		return false, "", err
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	lines := make(chan string, 2)
	go func() {
		out := bufio.NewScanner(outp)
		for out.Scan() {
			lines <- out.Text()
		}
		close(lines)
	}()
	if l := <-lines; l != "ready" {
		return false, "", fmt.Errorf("W did not start: %q", l)
	}
	stopped := make(chan time.Time, 1)
	px.onRequest = func() { // W stopped before its acquire reaches the server
		w.Process.Signal(syscall.SIGSTOP)
		waitStopped(w.Process.Pid)
		stopped <- time.Now()
	}
	px.armed.Store(true)
	fmt.Fprintln(in, "go")
	t0 := <-stopped
	time.Sleep(2 * validity) // W's key expires on the server, 300 ms after W's SET
	held, release, err := b.TryWithContext(context.Background(), name)
	if err != nil {
		return false, "", fmt.Errorf("B could not take the lock W's key left: %w", err)
	}
	defer release()
	paused := time.Since(t0)
	w.Process.Signal(syscall.SIGCONT)
	got := "refused (no grant within 300 ms of being continued)"
	select {
	case l := <-lines:
		got = l
	case <-time.After(300 * time.Millisecond):
	}
	line = fmt.Sprintf("W paused %d ms as its acquire went out; B took the lock; W continued: %s", paused.Milliseconds(), got)
	var ms int64
	if _, err := fmt.Sscanf(got, "ok after %d ms", &ms); err == nil {
		if ms < paused.Milliseconds() || held.Err() != nil {
			return false, "", fmt.Errorf("W was granted before its pause, or B lost the lock: %s (B: %v)", got, held.Err())
		}
		return true, line, nil
	}
	return false, line, nil
}

// waitStopped waits until the process is stopped (state T in its stat).
func waitStopped(pid int) {
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && f[0] == "T" {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// waiter warms its connection up (scripts loaded), says ready, and on
// "go" waits for the lock and says what WithContext returned.
func waiter(sock, name string) int {
	runtime.GOMAXPROCS(max(8, runtime.NumCPU()))
	l, err := locker(sock, validity, 0)
	if err != nil {
		fmt.Println("error", err)
		return 2
	}
	defer l.Close()
	// The warm-up loads the scripts; on a busy machine a try may outlast
	// its 20 ms, so it has a few.
	for i := 0; ; i++ {
		_, cancel, err := l.TryWithContext(context.Background(), "warm-up")
		if err == nil {
			cancel()
			break
		}
		if i == 20 {
			fmt.Println("error warm-up", err)
			return 2
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return 2
	}
	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	t0 := time.Now()
	_, cancel, err := l.WithContext(ctx, name)
	if err != nil {
		fmt.Printf("refused after %d ms: %v\n", time.Since(t0).Milliseconds(), err)
		return 0
	}
	fmt.Printf("ok after %d ms\n", time.Since(t0).Milliseconds())
	cancel()
	return 0
}
