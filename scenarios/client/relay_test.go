package client

import (
	"bufio"
	"strings"
	"testing"
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
