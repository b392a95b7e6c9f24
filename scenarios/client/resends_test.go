package client

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestResends: within one release (Begin..End), a command sent to a node
// that already answered it definitively is reported, once per send; an
// error answers nothing; another node, another command, or a command of
// another release is no resend, nor a command sent again after the client
// wrote something else to the node (a read between changes nothing), nor
// one first sent while another of the client's operations was in flight;
// EVAL and EVALSHA of one script are one command.
func TestResends(t *testing.T) {
	const script = `return redis.call("del", KEYS[1])`
	sum := sha1.Sum([]byte(script))
	sha := hex.EncodeToString(sum[:])
	eval := []string{"EVAL", script, "1", "k0", "t1"}
	evalsha := []string{"evalsha", sha, "1", "k0", "t1"}
	other := []string{"EVAL", script, "1", "k0", "t2"}
	type step struct {
		op   string // begin, end, send, answer
		node string
		args []string
		kind string
	}
	send := func(node string, args []string) step { return step{"send", node, args, ""} }
	answer := func(node string, args []string, kind string) step { return step{"answer", node, args, kind} }
	begin, end := step{op: "begin"}, step{op: "end"}
	fly := func(args []string) step { return step{"fly", "", args, ""} }
	land := func(args []string) step { return step{"land", "", args, ""} }
	refresh := []string{"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "k0", "t1", "200"}
	for _, tc := range []struct {
		name  string
		steps []step
		want  []string // the reported resends: node label
	}{
		{"answered, sent again twice", []step{begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), send("n1", eval), send("n1", eval)},
			[]string{"n1 SCRIPT:" + sha[:8], "n1 SCRIPT:" + sha[:8]}},
		{"EVALSHA after EVAL is the same command", []step{begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyValue), send("n1", evalsha)},
			[]string{"n1 SCRIPT:" + sha[:8]}},
		{"an error answers nothing (NOSCRIPT, a timeout)", []step{begin, send("n1", evalsha), answer("n1", evalsha, lockimpl.ReplyError), send("n1", eval)}, nil},
		{"a nil is an answer", []step{begin, send("n1", []string{"GET", "k0"}), answer("n1", []string{"GET", "k0"}, lockimpl.ReplyNil), send("n1", []string{"get", "k0"})},
			[]string{"n1 GET"}},
		{"another node", []step{begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), send("n2", eval)}, nil},
		// The client's own command between changed what it asks about (a
		// relay's window also carries a process's other calls' commands).
		{"another command to the node between", []step{begin, send("n1", []string{"DEL", "k0"}), answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyValue),
			send("n1", []string{"SET", "k0", "t2", "NX"}), answer("n1", []string{"SET", "k0", "t2", "NX"}, lockimpl.ReplyValue), send("n1", []string{"DEL", "k0"})}, nil},
		// The abandoned acquire's SET went out before the DEL's answer
		// came back (the DEL had freed the key).
		{"another command sent before the answer", []step{begin, send("n1", []string{"DEL", "k0"}), send("n1", []string{"SET", "k0", "t2", "NX"}),
			answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyValue), answer("n1", []string{"SET", "k0", "t2", "NX"}, lockimpl.ReplyValue), send("n1", []string{"DEL", "k0"})}, nil},
		{"asked again twice after a write", []step{begin, send("n1", []string{"DEL", "k0"}), answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyValue),
			send("n1", []string{"SET", "k0", "t2", "NX"}), send("n1", []string{"DEL", "k0"}), answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyZero), send("n1", []string{"DEL", "k0"})},
			[]string{"n1 DEL"}},
		{"a read of the node between", []step{begin, send("n1", []string{"DEL", "k0"}), answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyValue),
			send("n1", []string{"GET", "k0"}), answer("n1", []string{"GET", "k0"}, lockimpl.ReplyNil), send("n1", []string{"DEL", "k0"})}, []string{"n1 DEL"}},
		{"another command to another node between", []step{begin, send("n1", []string{"DEL", "k0"}), answer("n1", []string{"DEL", "k0"}, lockimpl.ReplyValue),
			send("n2", []string{"SET", "k0", "t2", "NX"}), send("n1", []string{"DEL", "k0"})}, []string{"n1 DEL"}},
		{"other arguments", []step{begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), send("n1", other)}, nil},
		{"another release", []step{begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), end, begin, send("n1", eval)}, nil},
		{"outside a release", []step{send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), send("n1", eval)}, nil},
		{"an answer after the release ended", []step{begin, send("n1", eval), end, answer("n1", eval, lockimpl.ReplyZero), begin, send("n1", eval)}, nil},
		{"a connection's set-up", []step{begin, send("n1", []string{"HELLO", "3"}), answer("n1", []string{"HELLO", "3"}, lockimpl.ReplyValue), send("n1", []string{"HELLO", "3"})}, nil},
		// Another operation of the client in flight when the command went
		// out (a refresh's script, sent before the release began, its
		// answer still to come on some node): the command sent again may
		// be that operation's clean-up.
		{"sent beside another operation in flight", []step{fly(refresh), begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), land(refresh), send("n1", eval)}, nil},
		{"the same command in flight to another node is no other operation", []step{begin, fly(eval), send("n2", eval), fly(eval), send("n1", eval),
			answer("n1", eval, lockimpl.ReplyZero), send("n1", eval)}, []string{"n1 SCRIPT:" + sha[:8]}},
		{"another operation begun after the send", []step{begin, send("n1", eval), fly(refresh), answer("n1", eval, lockimpl.ReplyZero), send("n1", eval)},
			[]string{"n1 SCRIPT:" + sha[:8]}},
		{"another operation answered before the send", []step{fly(refresh), land(refresh), begin, send("n1", eval), answer("n1", eval, lockimpl.ReplyZero), send("n1", eval)},
			[]string{"n1 SCRIPT:" + sha[:8]}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			clock := int64(0)
			w := &Resends{Now: func() int64 { clock++; return clock }, Report: func(key, node, label string, sent, answered int64) {
				if key != "k0" || sent <= 0 || answered <= sent {
					t.Errorf("reported key %q, sent %d, answered %d", key, sent, answered)
				}
				got = append(got, node+" "+label)
			}}
			at := map[string]int64{}
			for _, s := range tc.steps {
				switch s.op {
				case "begin":
					w.Begin("k0")
				case "end":
					w.End()
				case "send":
					at[s.node+commandID(s.args)] = w.sent(s.node, commandID(s.args))
				case "answer":
					w.answer(s.node, commandID(s.args), s.kind, at[s.node+commandID(s.args)])
				case "fly":
					w.flight(identOf(commandID(s.args)), +1)
				case "land":
					w.flight(identOf(commandID(s.args)), -1)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("reported %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("reported %q, want %q", got, tc.want)
				}
			}
		})
	}
}

// TestResendsOnTheWire: the relay of a client process and the go-redis
// hook of a Go lock both feed the client's Resends, during a release only:
// a script answered :0 and sent again is reported; go-redis's EVALSHA
// refused NOSCRIPT and its EVAL fallback is not (go-redis sets a command's
// error only after its hooks return: the hook reads the error next
// returned), nor a command sent outside a release.
func TestResendsOnTheWire(t *testing.T) {
	replies := map[string]string{"EVALSHA": "-NOSCRIPT No matching script\r\n", "EVAL": ":0\r\n", "HELLO": "-ERR unknown\r\n"}
	evalRaw := "*4\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n0\r\n$2\r\nt1\r\n"
	for _, tc := range []struct {
		name    string
		call    string
		goRedis bool
		sends   int
		want    int
	}{
		{"relay: one send", lockimpl.CallRelease, false, 1, 0},
		{"relay: sent again after :0", lockimpl.CallRelease, false, 3, 2},
		{"relay: outside a release", lockimpl.CallAcquire, false, 3, 0},
		{"go-redis: EVALSHA refused, then EVAL", lockimpl.CallRelease, true, 1, 0},
		{"go-redis: run again after :0 (EVALSHA and EVAL each)", lockimpl.CallRelease, true, 2, 2},
		{"go-redis: outside a release", lockimpl.CallAcquire, true, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			got := 0
			w := &Resends{Now: func() int64 { return time.Now().UnixNano() }, Report: func(string, string, string, int64, int64) {
				mu.Lock()
				got++
				mu.Unlock()
			}}
			hook := &CmdHook{Node: "n1", FP: lockimpl.NewFailpoints(lockimpl.NewHub(), 0), Crash: func(error) {}, Dead: func() bool { return false }, Resends: w}
			upstream := cannedServer(t, replies)
			w.Begin("k0")
			if tc.goRedis {
				rdb := redis.NewClient(&redis.Options{Addr: upstream, Protocol: 2, DisableIdentity: true})
				defer rdb.Close()
				rdb.AddHook(hook)
				ctx := lockimpl.WithCall(context.Background(), tc.call)
				for range tc.sends {
					redis.NewScript("return").Run(ctx, rdb, []string{"0"}, "t1")
				}
			} else {
				c := dialRelay(t, upstream, hook, tc.call)
				r := bufio.NewReader(c)
				for range tc.sends { // one at a time: each answer before the next send
					if _, err := c.Write([]byte(evalRaw)); err != nil {
						t.Fatal(err)
					}
					if _, err := readRaw(r, nil, false); err != nil {
						t.Fatal(err)
					}
				}
			}
			w.End()
			mu.Lock()
			defer mu.Unlock()
			if got != tc.want {
				t.Errorf("reported %d resends, want %d", got, tc.want)
			}
		})
	}
}

// TestHookAcrossReleases: the go-redis hook serves every command of its
// connection; a release must not change what it does for the next one. A
// resend in the second release is reported with that release's send, not
// the first's (the hook once wrapped its next in place at each release,
// so every later command ran through every earlier release's wrapper).
func TestHookAcrossReleases(t *testing.T) {
	clock := int64(0)
	var sent []int64
	w := &Resends{Now: func() int64 { clock++; return clock }, Report: func(_, _, _ string, s, _ int64) { sent = append(sent, s) }}
	hook := &CmdHook{Node: "n1", FP: lockimpl.NewFailpoints(lockimpl.NewHub(), 0), Crash: func(error) {}, Dead: func() bool { return false }, Resends: w}
	run := hook.ProcessHook(func(_ context.Context, cmd redis.Cmder) error {
		cmd.(*redis.Cmd).SetVal(int64(0))
		return nil
	})
	ctx := lockimpl.WithCall(context.Background(), lockimpl.CallRelease)
	release := func() {
		if err := run(ctx, redis.NewCmd(ctx, "eval", "return 0", 1, "k0", "t1")); err != nil {
			t.Fatal(err)
		}
	}
	w.Begin("k0")
	release()
	w.End()
	second := clock + 1 // the second release's first send
	w.Begin("k0")
	release()
	release()
	w.End()
	if len(sent) != 1 || sent[0] != second {
		t.Fatalf("resends reported with sends %v, want one with the second release's send %d", sent, second)
	}
}

// TestResendsLatestAnswer: a resend is reported with the latest answer to
// the command, not its first: a third round is judged by the second
// round's answer.
func TestResendsLatestAnswer(t *testing.T) {
	id := commandID([]string{"DEL", "k0"})
	clock := int64(0)
	var got [][2]int64
	w := &Resends{Now: func() int64 { clock++; return clock }, Report: func(_, _, _ string, sent, answered int64) {
		got = append(got, [2]int64{sent, answered})
	}}
	w.Begin("k0")
	first := w.sent("n1", id)                      // 1
	w.answer("n1", id, lockimpl.ReplyZero, first)  // answered at 2
	second := w.sent("n1", id)                     // 3: reported (1, 2)
	w.answer("n1", id, lockimpl.ReplyZero, second) // answered at 4
	w.sent("n1", id)                               // 5: reported (3, 4)
	if want := [][2]int64{{1, 2}, {3, 4}}; !slices.Equal(got, want) {
		t.Errorf("reported (sent, answered) %v, want %v", got, want)
	}
}
