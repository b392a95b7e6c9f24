package resp

import (
	"bufio"
	"reflect"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"+OK\r\n", "OK"},
		{"-ERR no\r\n", Error("ERR no")},
		{"!5\r\nERR x\r\n", Error("ERR x")},
		{":42\r\n", int64(42)},
		{"#t\r\n", true},
		{"_\r\n", nil},
		{"$-1\r\n", nil},
		{"*-1\r\n", nil},
		{"$3\r\nabc\r\n", "abc"},
		{"*2\r\n$1\r\na\r\n:1\r\n", []any{"a", int64(1)}},
		{"%1\r\n+k\r\n+v\r\n", []any{"k", "v"}},
		{">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nset\r\n", Push{"message", "ch", "set"}},
		{"|1\r\n+a\r\n+b\r\n+value\r\n", "value"},
	} {
		got, err := Read(bufio.NewReader(strings.NewReader(tc.in)))
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: got %#v, want %#v", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"?x\r\n", "+OK\n", "$5\r\nab\r\n", "$x\r\n"} {
		if _, err := Read(bufio.NewReader(strings.NewReader(bad))); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if got := Command("GET", "k"); got != "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" {
		t.Errorf("Command: %q", got)
	}
}
