package client

import (
	"bufio"
	"context"
	"net"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// readRaw splits a pipelined stream into whole values, byte for byte, and
// commandName names each (scripts with their first argument).
func TestReadRawAndCommandName(t *testing.T) {
	stream := "*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n$2\r\nPX\r\n" +
		"*3\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n$1\r\n0\r\n" +
		"PING\r\n"
	r := bufio.NewReader(strings.NewReader(stream))
	tests := []struct{ name, arg string }{{"SET", "k"}, {"EVAL", "return"}, {"PING", ""}}
	var got strings.Builder
	for _, tc := range tests {
		raw, err := readRaw(r, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		got.Write(raw)
		if n, a := commandName(raw); n != tc.name || a != tc.arg {
			t.Errorf("commandName(%q) = %q %q, want %q %q", raw, n, a, tc.name, tc.arg)
		}
	}
	if got.String() != stream {
		t.Errorf("raw values %q, want the stream back %q", got.String(), stream)
	}
	replies := "+OK\r\n$-1\r\n*2\r\n:1\r\n$2\r\nab\r\n%1\r\n+a\r\n:2\r\n-ERR x\r\n"
	r = bufio.NewReader(strings.NewReader(replies))
	var back strings.Builder
	for range 5 {
		raw, err := readRaw(r, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		back.Write(raw)
	}
	if back.String() != replies {
		t.Errorf("replies %q, want %q", back.String(), replies)
	}
}

// TestRelayReplyKind: a client process's command reaches its after point
// with the kind of its reply, as a Go lock's does (TestReplyKind), so the
// explorer budgets a grant apart from the refusals and NOSCRIPT answers
// that pass the same point. The server here answers each command with a
// canned reply.
func TestRelayReplyKind(t *testing.T) {
	replies := map[string]string{
		"SET":     "$-1\r\n", // SET NX refused
		"EVALSHA": "-NOSCRIPT No matching script\r\n",
		"EVAL":    ":1\r\n",       // a script's grant
		"DEL":     ":0\r\n",       // nothing deleted
		"GET":     "$2\r\nab\r\n", // a value
		"PING":    "+PONG\r\n",    // a status
		"HGET":    "_\r\n",        // RESP3 null
		"EXISTS":  "#f\r\n",       // RESP3 false
	}
	want := map[string]string{
		"cmd/n1/SET/after": lockimpl.ReplyNil, "cmd/n1/EVALSHA:0000aaaa/after": lockimpl.ReplyError,
		"cmd/n1/EVAL:63143b6f/after": lockimpl.ReplyValue, "cmd/n1/DEL/after": lockimpl.ReplyZero,
		"cmd/n1/GET/after": lockimpl.ReplyValue, "cmd/n1/PING/after": lockimpl.ReplyValue,
		"cmd/n1/EXISTS/after": lockimpl.ReplyZero, "cmd/n1/HGET/after": lockimpl.ReplyNil,
	}
	upstream := cannedServer(t, replies)
	hub := lockimpl.NewHub()
	var mu sync.Mutex
	got := map[string]string{}
	hub.Explore = func(ctx context.Context, _ int, point string) error {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasSuffix(point, "/after") {
			got[point] = lockimpl.ReplyOf(ctx)
		}
		return nil
	}
	hub.Arm()
	hook := &CmdHook{Node: "n1", FP: lockimpl.NewFailpoints(hub, 0), Crash: func(error) {}, Dead: func() bool { return false }}
	c := dialRelay(t, upstream, hook, "")
	cmds := "*2\r\n$3\r\nSET\r\n$1\r\nk\r\n*2\r\n$7\r\nEVALSHA\r\n$8\r\n0000aaaa\r\n*2\r\n$4\r\nEVAL\r\n$6\r\nreturn\r\n" +
		"*2\r\n$3\r\nDEL\r\n$1\r\nk\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n*2\r\n$6\r\nEXISTS\r\n$1\r\nk\r\n*3\r\n$4\r\nHGET\r\n$1\r\nk\r\n$1\r\nf\r\n"
	if _, err := c.Write([]byte(cmds)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for range 8 {
		if _, err := readRaw(r, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after points' reply kinds:\n got %v\nwant %v", got, want)
	}
}

// dialRelay is a connection through a relay to upstream with hook, its
// client's call in flight call; both close when the test ends.
func dialRelay(t *testing.T, upstream string, hook *CmdHook, call string) net.Conn {
	t.Helper()
	rl, err := NewRelay(upstream, "n1", hook, func() string { return call }, func() {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.Close)
	c, err := net.Dial("tcp", rl.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cannedServer answers each command of one connection with replies[its
// name], and returns its address.
func cannedServer(t *testing.T, replies map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		r := bufio.NewReader(c)
		for {
			raw, err := readRaw(r, nil, true)
			if err != nil {
				return
			}
			name, _ := commandName(raw)
			if _, err := c.Write([]byte(replies[strings.ToUpper(name)])); err != nil {
				return
			}
		}
	}()
	return ln.Addr().String()
}
