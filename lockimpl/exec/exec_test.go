package exec

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// The test binary doubles as a client process: with LOCKSTORM_TEST_CLIENT
// set it speaks the protocol (well or badly, by mode) instead of testing.
func TestMain(m *testing.M) {
	if mode := os.Getenv("LOCKSTORM_TEST_CLIENT"); mode != "" {
		fakeClient(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeClient(mode string) {
	in := bufio.NewScanner(os.Stdin)
	say := func(s string) { fmt.Println(s) }
	points := false
	for in.Scan() {
		f := strings.Fields(in.Text())
		switch f[0] {
		case "hello":
			points = len(f) > 2 && f[2] == "points=on"
			hello := "hello 1 name=fake nodes=1 points=fake/p topology=single expiry=server release=owner-checked fencing=true"
			if mode == "extender" {
				hello += " extend=true"
			}
			if mode == "teller" {
				hello += " lost=true redis_key=pfx:%7Bkey%7D"
			}
			say(hello)
		case "acquire":
			if points {
				say("point fake/p")
				if !in.Scan() || in.Text() != "go fake/p" {
					os.Exit(4)
				}
			}
			switch mode {
			case "good":
				say("ok tok-" + f[1] + " fence=7 validity=250")
			case "env": // the token says what the client was told
				say("ok tok-" + os.Getenv("LOCKSTORM_COMMAND_TIMEOUT_MS"))
			case "teller":
				switch f[1] {
				case "gone": // lost before its own reply: legal, any time
					say("lost tok-gone")
				case "trigger": // a lease held since an earlier request
					say("lost tok-later")
				}
				say("ok tok-" + f[1])
			case "garbage":
				say("bogus reply")
			case "notoken":
				say("ok")
			case "die":
				fmt.Fprintln(os.Stderr, "boom")
				os.Exit(3)
			case "silent":
				time.Sleep(time.Hour)
			case "chatty":
				say("ok t1")
				say("ok t2")
			case "busy":
				say("fail held by someone")
			case "lost":
				say("error read tcp: i/o timeout")
			}
		case "extend":
			if f[2] == "tok-mine" && f[3] == "500" {
				say("ok validity=480")
			} else if f[2] == "tok-bare" {
				say("ok")
			} else {
				say("fail not ours")
			}
		case "release":
			if mode == "teller" {
				say("unknown release() resolved with nothing")
				continue
			}
			if f[2] == "tok-mine" || strings.HasPrefix(f[2], "tok-") && mode == "good" {
				say("ok")
			} else {
				say("fail not ours")
			}
		}
	}
}

// testEnv is a client environment whose node address is never dialled.
func testEnv(t *testing.T, fp *lockimpl.Failpoints) lockimpl.Env {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { rdb.Close() })
	return lockimpl.Env{Client: 0, Nodes: []redis.UniversalClient{rdb}, Clock: lockimpl.NewSkewClock(0),
		FP: fp, Rand: rand.New(rand.NewPCG(1, 2))}
}

func fake(t *testing.T, mode string, o lockimpl.Options, fp *lockimpl.Failpoints) *Locker {
	t.Helper()
	t.Setenv("LOCKSTORM_TEST_CLIENT", mode)
	l, err := New(testEnv(t, fp), o, []string{os.Args[0]}, "fake")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "python3 my_lock.py", want: []string{"python3", "my_lock.py"}},
		{in: `node 'a b.js'  5`, want: []string{"node", "a b.js", "5"}},
		{in: `php "x\"y.php"`, want: []string{"php", `x"y.php`}},
		{in: `a\ b`, want: []string{"a b"}},
		{in: "", bad: true},
		{in: "python3 'open", bad: true},
	} {
		got, err := Split(tc.in)
		if (err != nil) != tc.bad || fmt.Sprint(got) != fmt.Sprint(tc.want) && !tc.bad {
			t.Errorf("Split(%q) = %q, %v; want %q (error: %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

func TestProbe(t *testing.T) {
	t.Setenv("LOCKSTORM_TEST_CLIENT", "good")
	h, err := Probe(context.Background(), []string{os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "fake" || h.Nodes != 1 || fmt.Sprint(h.Points) != "[fake/p]" || h.Claims != (lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease, Fencing: true}) {
		t.Errorf("hello = %+v", h)
	}
	t.Setenv("LOCKSTORM_TEST_CLIENT", "")
	if _, err := Probe(context.Background(), []string{"/bin/true"}); err == nil {
		t.Error("a program that exits without hello was accepted")
	}
}

// TestExtend: a client that says extend=true in its hello is sent extend
// requests (CanExtend), its replies map onto the error contract, and its
// validity updates the lease; one that does not say so is sent none.
func TestExtend(t *testing.T) {
	for _, mode := range []string{"good", "extender"} {
		t.Setenv("LOCKSTORM_TEST_CLIENT", mode)
		h, err := Probe(context.Background(), []string{os.Args[0]})
		if err != nil {
			t.Fatal(err)
		}
		lk, err := NewInfo([]string{os.Args[0]}, h).New(testEnv(t, nil), lockimpl.Options{WaitTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lk.(*Locker).Close() })
		if got := lockimpl.CanExtend(lk); got != (mode == "extender") {
			t.Fatalf("%s: CanExtend %v", mode, got)
		}
		if mode != "extender" {
			continue
		}
		lease := &lockimpl.Lease{Key: "k", Token: "tok-mine"}
		if err := lk.(lockimpl.Extender).Extend(context.Background(), lease, 500*time.Millisecond); err != nil || lease.Validity != 480*time.Millisecond {
			t.Errorf("Extend: %v, validity %v", err, lease.Validity)
		}
		other := &lockimpl.Lease{Key: "k", Token: "tok-other"}
		if err := lk.(lockimpl.Extender).Extend(context.Background(), other, 500*time.Millisecond); !errors.Is(err, lockimpl.ErrNotHeld) {
			t.Errorf("Extend of another's lock: %v, want ErrNotHeld", err)
		}
	}
}

// TestExtendRedates: a validity an extend's reply tells is what is left
// from the reply, so the lease is dated anew from it (a careful holder
// measures it from Acquired); an extend that tells none leaves the
// acquire's lease as it was.
func TestExtendRedates(t *testing.T) {
	lk := fake(t, "extender", lockimpl.Options{WaitTimeout: time.Second}, nil)
	for _, tc := range []struct {
		token        string
		wantValidity time.Duration
		redated      bool
	}{
		{"tok-mine", 480 * time.Millisecond, true},
		{"tok-bare", 250 * time.Millisecond, false},
	} {
		acquired := time.Now().Add(-10 * time.Second)
		lease := &lockimpl.Lease{Key: "k", Token: tc.token, Validity: 250 * time.Millisecond, Acquired: acquired}
		if err := lk.Extend(context.Background(), lease, 500*time.Millisecond); err != nil {
			t.Fatalf("%s: %v", tc.token, err)
		}
		if lease.Validity != tc.wantValidity || lease.Acquired.After(acquired) != tc.redated {
			t.Errorf("%s: validity %v acquired %v ago, want %v and redated %v",
				tc.token, lease.Validity, time.Since(lease.Acquired).Round(time.Millisecond), tc.wantValidity, tc.redated)
		}
	}
}

// TestCommandTimeoutTold: a client process is told how long the harness's
// own connections wait for a reply (Env.CommandTimeout, the scenario's
// client_timeout), so its connections do not cut off a reply the schedule
// only makes late.
func TestCommandTimeoutTold(t *testing.T) {
	t.Setenv("LOCKSTORM_TEST_CLIENT", "env")
	env := testEnv(t, nil)
	env.CommandTimeout = 2500 * time.Millisecond
	l, err := New(env, lockimpl.Options{WaitTimeout: time.Second}, []string{os.Args[0]}, "fake")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	lease, err := l.Acquire(context.Background(), "k")
	if err != nil || lease.Token != "tok-2500" {
		t.Fatalf("acquire: %v, token %v, want tok-2500", err, lease)
	}
}

// Every reply maps onto the error contract; every broken client is an
// unknown outcome, counted, and the next request gets a fresh process.
func TestReplies(t *testing.T) {
	defer func(s time.Duration) { slack = s }(slack)
	slack = 300 * time.Millisecond
	o := lockimpl.Options{WaitTimeout: 200 * time.Millisecond}
	for _, tc := range []struct {
		mode  string
		class string // ok, definite, unknown
		stats lockimpl.ProcessStats
	}{
		{"good", "ok", lockimpl.ProcessStats{Starts: 1}},
		{"busy", "definite", lockimpl.ProcessStats{Starts: 1}},
		{"lost", "unknown", lockimpl.ProcessStats{Starts: 1}},
		{"garbage", "unknown", lockimpl.ProcessStats{Starts: 2, Malformed: 2}},
		{"notoken", "unknown", lockimpl.ProcessStats{Starts: 2, Malformed: 2}},
		{"die", "unknown", lockimpl.ProcessStats{Starts: 2, Deaths: 2}},
		{"silent", "unknown", lockimpl.ProcessStats{Starts: 2, Timeouts: 2}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			l := fake(t, tc.mode, o, nil)
			lease, err := l.Acquire(context.Background(), "k")
			class := "unknown"
			switch {
			case err == nil:
				class = "ok"
				if lease.Token != "tok-k" || lease.Fence != 7 || lease.Validity != 250*time.Millisecond {
					t.Errorf("lease = %+v", lease)
				}
			case errors.Is(err, lockimpl.ErrNotAcquired):
				class = "definite"
			}
			if class != tc.class {
				t.Fatalf("Acquire: %v: class %s, want %s", err, class, tc.class)
			}
			if tc.mode == "die" && !strings.Contains(err.Error(), "boom") {
				t.Errorf("a death should show the client's stderr: %v", err)
			}
			// The next request is served, by a fresh process after a broken
			// one (which breaks again: two events over two processes).
			_, _ = l.Acquire(context.Background(), "k")
			if got := l.ProcessStats(); got != tc.stats {
				t.Errorf("stats = %+v, want %+v", got, tc.stats)
			}
		})
	}
}

func TestChattyClientIsRestarted(t *testing.T) {
	l := fake(t, "chatty", lockimpl.Options{}, nil)
	if _, err := l.Acquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // the unasked-for "ok t2" arrives
	first := l.PID()
	if _, err := l.Acquire(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if s := l.ProcessStats(); s.Malformed != 1 || s.Starts != 2 || l.PID() == first {
		t.Errorf("stats %+v, pid %d then %d: an unsolicited line must restart the client", s, first, l.PID())
	}
}

// A point the client announces runs the scenario's actions: a barrier holds
// the client until the harness opens it; a crash kills the process there.
func TestPoints(t *testing.T) {
	hub := lockimpl.NewHub()
	fp := lockimpl.NewFailpoints(hub, 0)
	fp.Attach("fake/p", lockimpl.Action{Gate: "g", Times: 1})
	fp.Attach("fake/p", lockimpl.Action{Skip: 1, Crash: true})
	l := fake(t, "good", lockimpl.Options{WaitTimeout: 100 * time.Millisecond}, fp)
	if err := l.Ready(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := l.Acquire(context.Background(), "k"); done <- err }()
	// Held at the gate far longer than the request timeout (100 ms + 5 s
	// would be too slow to wait out; the point's time must not count).
	select {
	case err := <-done:
		t.Fatalf("acquire passed a closed gate: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if hub.Hits(0, "fake/p") != 1 {
		t.Fatalf("hits = %d", hub.Hits(0, "fake/p"))
	}
	hub.Open("g")
	if err := <-done; err != nil {
		t.Fatalf("after the gate: %v", err)
	}
	pid := l.PID()
	_, err := l.Acquire(context.Background(), "k")
	if !errors.Is(err, lockimpl.ErrCrashed) {
		t.Fatalf("crash at the point: %v", err)
	}
	if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); serr == nil {
		if st, _ := stateOf(pid); st != "Z" {
			t.Errorf("process %d still there (state %s) after a crash point", pid, st)
		}
	}
	if _, err := l.Acquire(context.Background(), "k"); !errors.Is(err, lockimpl.ErrCrashed) {
		t.Errorf("a crashed client came back: %v", err)
	}
}
