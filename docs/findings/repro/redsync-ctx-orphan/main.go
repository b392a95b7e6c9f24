// Command redsync-ctx-orphan: redsync v4.18.1's LockContext answers
// ErrFailed ("failed to acquire lock") when the caller's context ends
// while a try's SET is on its way, and leaves that SET's key standing for
// the whole expiry: nobody holds the lock, and every other client is
// refused until it expires. Each try's context and the clean-up release
// after a failed try both derive from the caller's context (mutex.go 107,
// 122): once it has ended, the try's SET, already written, is cut off
// waiting for its reply, and the release is never sent (go-redis refuses
// a command on a done context); the next round of the loop then returns
// ErrFailed (98), the same error as a lock that is someone else's. The
// tracker's issue 164 and PR 98 ask for a distinct error on a done
// context (both closed, wontfix); neither says the key is left behind.
// A standalone reproducer: only the library and a redis-server (on a unix
// socket), and a tiny proxy of its own that holds the server's replies
// back 100 ms, as a slow link or a busy server would.
//
//	cd docs/findings/repro/redsync-ctx-orphan && go run .
//
// The client calls LockContext on a free key with a context of 50 ms, as
// a request handler with a deadline would. Exit 1 (and "BUG") when the
// call returned ErrFailed and the key still holds the mutex's value
// 200 ms later, with its TTL; 0 when the key is gone or the call
// succeeded; 2 when it cannot tell.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

const replyDelay = 100 * time.Millisecond

func main() {
	// A run that hangs fails instead of blocking CI.
	time.AfterFunc(30*time.Second, func() {
		fmt.Println("TIMEOUT: the reproducer did not finish in 30 s")
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

// slowReplies forwards its socket to the server's, requests at once and
// each chunk of replies replyDelay after it came.
func slowReplies(path, server string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
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
			go func() {
				defer c.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := up.Read(buf)
					if n > 0 {
						chunk := append([]byte(nil), buf[:n]...)
						time.Sleep(replyDelay)
						if _, werr := c.Write(chunk); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln, nil
}

// unixClient is go-redis on the unix socket. ContextTimeoutEnabled makes
// go-redis honour a context's deadline, without which neither
// LockContext's context nor the library's own per-try timeout
// (WithTimeoutFactor, the per-node timeout of PR 80) can cut a try short.
func unixClient(sock string) *goredislib.Client {
	return goredislib.NewClient(&goredislib.Options{Network: "unix", Addr: sock, ContextTimeoutEnabled: true})
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
	ln, err := slowReplies(filepath.Join(dir, "proxy.sock"), sock)
	if err != nil {
		return 0, err
	}
	defer ln.Close()

	// The README's set-up, on one node, through the slow link, with
	// go-redis honouring contexts; the library's defaults (expiry 8 s, 32
	// tries, a try cut at 0.05 of the expiry).
	client := unixClient(ln.Addr().String())
	defer client.Close()
	// A connection already made, as in a running service (a new one's
	// hand-shake would meet the slow link first).
	if err := client.Ping(context.Background()).Err(); err != nil {
		return 0, err
	}
	rs := redsync.New(goredis.NewPool(client))
	// The value a try writes, known here so that the key it leaves can be
	// told from any other (the default is random, and Value() is set only
	// on success).
	const value = "the-failed-lockcontext"
	mutex := rs.NewMutex("lock:0", redsync.WithGenValueFunc(func() (string, error) { return value, nil }))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	lockErr := mutex.LockContext(ctx)

	time.Sleep(2 * replyDelay) // every reply on its way has arrived
	direct := unixClient(sock)
	defer direct.Close()
	v, err := direct.Get(context.Background(), "lock:0").Result()
	if errors.Is(err, goredislib.Nil) {
		fmt.Printf("OK: LockContext returned %v and lock:0 is free\n", lockErr)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ttl, err := direct.PTTL(context.Background(), "lock:0").Result()
	if err != nil {
		return 0, err
	}
	// Whether the clean-up release after the failed try reached the
	// server: it is a script (EVALSHA, or EVAL after NOSCRIPT).
	stats, err := direct.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0, err
	}
	scripts := strings.Contains(stats, "cmdstat_evalsha:") || strings.Contains(stats, "cmdstat_eval:")
	if lockErr == nil {
		fmt.Printf("OK: LockContext succeeded (value %s)\n", v)
		return 0, nil
	}
	if !errors.Is(lockErr, redsync.ErrFailed) || v != value {
		return 0, fmt.Errorf("LockContext returned %v; lock:0 holds %q, not the mutex's value %q", lockErr, v, value)
	}
	release := "the clean-up release never reached the server (no script in INFO commandstats)"
	if scripts {
		release = "a script reached the server but left the key"
	}
	fmt.Printf("BUG: LockContext returned %q (its context ended after 50 ms, the SET's reply was 100 ms late), "+
		"yet lock:0 holds its try's value %q for another %v; %s: nobody holds the lock and every other client is refused until it expires\n",
		lockErr, v, ttl.Round(time.Millisecond), release)
	return 1, nil
}
