// Command client is rueidis's rueidislock as a lockstorm client process
// (examples/clients/PROTOCOL.md). It is a process, not an in-process Go
// adapter like redislockadapter, because rueidislock drives its own client
// (rueidis), timers and time.Now: a Go lock's pauses and command points are
// hooks on the go-redis clients a run hands it, which rueidis would
// escape, while a process is paused whole (SIGSTOP stops the watchdog
// goroutines too) and its connections pass through the harness's relay.
// The clock shim does not reach it: Go reads the wall clock through the
// vDSO, not libc, so client clock faults leave it alone.
//
// Called as its README shows (rueidislock/README.md 15-35):
// NewLocker(LockerOption{ClientOption{InitAddress}, KeyMajority: 1 ("Use
// KeyMajority=1 if you have only one Redis instance"), NoLoopTracking:
// true (the servers here are Redis 7.0.15 >= 7.0.5)}), WithContext to
// acquire, the returned cancel to release. KeyValidity is the scenario's
// TTL; ExtendInterval the default KeyValidity/2 (README 45); TryNextAfter
// the scenario's node timeout, else the default 20 ms (README 46).
//
// Claims, from the README and lock.go: one Redis (KeyMajority 1: the one
// key rueidislock:0:NAME, README 63; declared as redis_key), expiry on the
// server (SET NX PXAT in one script, lock.go acqat; PXAT is the client's
// wall clock plus KeyValidity, lock.go try), an owner-checked release
// (delkey, a compare-and-delete script), renewal (the lock "will extend
// the ctx validity periodically", README 66; lock.go monitoring, every
// ExtendInterval), and a lost-lock signal ("The returned ctx will be
// canceled automatically and immediately once the KeyMajority is not held
// anymore", README 54-56), told to the harness as "lost TOKEN". A
// checked grant: "If the KeyMajority is satisfied within the KeyValidity
// duration, the invocation is successful" (README 64): try arms a timer
// for the lease as it starts (lock.go 266, time.AfterFunc(duration,
// cancel): monotonic) and grants only if it stops it in time (353), so a
// try whose replies come after the lease is canceled and fails
// (grant_checked, grant_monotonic). No fencing token. The release
// (cancel) returns nothing, whether delkey deleted the key or not:
// answered "unknown".
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// prefix is the library's default KeyPrefix; with KeyMajority 1 the lock
// is the key prefix + ":0:" + name (lock.go keyname).
const prefix = "rueidislock"

func main() {
	c := &client{out: bufio.NewWriter(os.Stdout), leases: map[string]*lease{}}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		c.say(c.answer(strings.Fields(in.Text())))
	}
	if c.locker != nil {
		c.locker.Close()
	}
}

type client struct {
	mu     sync.Mutex // guards out: lost lines come from other goroutines
	out    *bufio.Writer
	locker rueidislock.Locker
	vals   *recorder
	leases map[string]*lease
}

// lease is one lock the library handed out: its context (canceled when
// the lock is lost) and the cancel that releases it.
type lease struct {
	cancel   context.CancelFunc
	released atomic.Bool
}

func (c *client) say(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.out.WriteString(line + "\n")
	c.out.Flush()
}

func (c *client) answer(f []string) string {
	if len(f) == 0 {
		return "error empty request"
	}
	switch {
	case f[0] == "hello":
		return hello()
	case f[0] == "acquire" && len(f) == 2:
		return c.acquire(f[1])
	case f[0] == "release" && len(f) == 3:
		return c.release(f[2])
	}
	return "error unknown request " + f[0]
}

// version is the rueidis module this binary was built with (its go.mod
// pins it), so the hello names what really ran.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/redis/rueidis" {
				return d.Version
			}
		}
	}
	return "unknown"
}

func hello() string {
	v := version()
	return "hello 1 name=rueidislock@" + v +
		" summary=" + url.PathEscape("rueidis rueidislock "+v+", one node, KeyMajority 1") +
		" nodes=1 topology=single expiry=server release=owner-checked renewal=true lost=true" +
		" grant_checked=true grant_monotonic=true" +
		" redis_key=" + url.PathEscape(prefix+":0:{key}")
}

// ms reads a scenario option in milliseconds; 0 or empty is d.
func ms(name string, d time.Duration) time.Duration {
	if n, err := strconv.Atoi(os.Getenv("LOCKSTORM_" + name)); err == nil && n > 0 {
		return time.Duration(n) * time.Millisecond
	}
	return d
}

// open makes the Locker on first use: rueidis dials at NewClient, and a
// node down when the process starts must not kill it (the next acquire
// tries again).
func (c *client) open() error {
	if c.locker != nil {
		return nil
	}
	nodes := strings.Split(os.Getenv("LOCKSTORM_NODES"), ",")
	if nodes[0] == "" {
		return fmt.Errorf("LOCKSTORM_NODES is empty")
	}
	vals := &recorder{last: map[string]string{}}
	l, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: nodes[:1]},
		ClientBuilder:  vals.build,
		KeyValidity:    ms("TTL_MS", 5*time.Second),
		TryNextAfter:   ms("NODE_TIMEOUT_MS", 0),
		KeyMajority:    1,
		NoLoopTracking: true,
	})
	if err != nil {
		return err
	}
	c.locker, c.vals = l, vals
	return nil
}

// acquire waits for the lock until the scenario's wait timeout. The
// timeout cancels only the wait: a context with a deadline handed to
// WithContext would also bound the lock it returns (lock.go try shortens
// the validity to it), so the wait's context is canceled by a timer
// stopped once the lock is ours.
func (c *client) acquire(key string) string {
	if err := c.open(); err != nil {
		return "error " + oneLine(err)
	}
	src, stop := context.WithCancel(context.Background())
	timer := time.AfterFunc(ms("WAIT_TIMEOUT_MS", 10*time.Second), stop)
	ctx, cancel, err := c.locker.WithContext(src, key)
	timer.Stop()
	switch {
	case err != nil && src.Err() != nil:
		stop()
		return "fail wait timed out"
	case err != nil:
		stop()
		return "error " + oneLine(err)
	}
	// The token is the value the winning try wrote (the library keeps it
	// to itself): the last one its scripts sent for the key.
	token := c.vals.get(prefix + ":0:" + key)
	l := &lease{cancel: func() { cancel(); stop() }}
	c.leases[token] = l
	go func() {
		<-ctx.Done()
		if !l.released.Load() {
			c.say("lost " + token)
		}
	}()
	return "ok " + token
}

func (c *client) release(token string) string {
	l := c.leases[token]
	if l == nil {
		return "fail unknown lock value"
	}
	delete(c.leases, token)
	l.released.Store(true)
	l.cancel() // waits for the library's delkey scripts (lock.go try)
	return "unknown cancel returns nothing"
}

func oneLine(err error) string {
	s := strings.Join(strings.Fields(err.Error()), " ")
	if s == "" {
		return "error"
	}
	return s
}

// recorder is the library's rueidis client, seen by its scripts. The
// library's lock value is 24 random bytes (lock.go random), which a
// protocol line cannot carry and the servers' observers compare with the
// token verbatim: the recorder sends it hex-encoded in every script
// (ARGV[1] of acquire, extend and delete alike; the scripts only compare
// it for equality, so the encoding changes no decision), and notes the
// last value sent per key, the token the harness is told.
type recorder struct {
	rueidis.Client
	mu   sync.Mutex
	last map[string]string
}

func (r *recorder) build(o rueidis.ClientOption) (rueidis.Client, error) {
	cl, err := rueidis.NewClient(o)
	if err != nil {
		return nil, err
	}
	r.Client = cl
	return r, nil
}

// Do rewrites EVAL/EVALSHA script 1 key value ... before it is sent.
func (r *recorder) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	a := cmd.Commands()
	if len(a) < 5 || (a[0] != "EVALSHA" && a[0] != "EVAL") || a[2] != "1" || !strings.HasPrefix(a[3], prefix+":") {
		return r.Client.Do(ctx, cmd)
	}
	val := hex.EncodeToString([]byte(a[4]))
	r.mu.Lock()
	r.last[a[3]] = val
	r.mu.Unlock()
	args := append([]string{val}, a[5:]...)
	return r.Client.Do(ctx, r.Client.B().Arbitrary(a[0], a[1], a[2]).Keys(a[3]).Args(args...).Build().ToRetryable())
}

func (r *recorder) get(key string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last[key]
}
