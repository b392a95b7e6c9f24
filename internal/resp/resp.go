// Package resp is the one RESP reader and writer of lockstorm's own raw
// connections: the cluster's admin commands (PING, REPLICAOF, INFO) and the
// server observers' subscriptions. It reads RESP2 and the RESP3 types the
// observers meet (pushes, maps, nulls, booleans, attributes), enough for
// both without a client library, whose pools and retries would hide what a
// connection really did.
package resp

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Push is a RESP3 push message (>): keyspace events arrive as pushes.
type Push []any

// Error is an error reply (-ERR ..., or a RESP3 blob error).
type Error string

func (e Error) Error() string { return string(e) }

// Command encodes one command as a RESP array of bulk strings.
func Command(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// Write sends one command.
func Write(w io.Writer, args ...string) error {
	_, err := io.WriteString(w, Command(args...))
	return err
}

// Read reads one value: string (simple, bulk, verbatim, double, big
// number), int64, bool, nil (null), []any (array, set, map as key, value,
// ...), Push, or Error. An attribute is skipped in favour of the value it
// annotates.
func Read(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return nil, fmt.Errorf("bad RESP line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '(', ',':
		return body, nil
	case '-':
		return Error(body), nil
	case '!':
		s, err := readBulk(r, body)
		return Error(s), err
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '#':
		return body == "t", nil
	case '_':
		return nil, nil
	case '$', '=':
		if body == "-1" {
			return nil, nil
		}
		return readBulk(r, body)
	case '*', '~', '>', '%', '|':
		return readAggregate(r, kind, body)
	}
	return nil, fmt.Errorf("unsupported RESP type %q", kind)
}

func readAggregate(r *bufio.Reader, kind byte, body string) (any, error) {
	n, err := strconv.Atoi(body)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, nil
	}
	if kind == '%' || kind == '|' {
		n *= 2
	}
	out := make([]any, n)
	for i := range out {
		if out[i], err = Read(r); err != nil {
			return nil, err
		}
	}
	switch kind {
	case '>':
		return Push(out), nil
	case '|': // an attribute precedes the real value
		return Read(r)
	}
	return out, nil
}

func readBulk(r *bufio.Reader, body string) (string, error) {
	n, err := strconv.Atoi(body)
	if err != nil || n < 0 {
		return "", fmt.Errorf("bad bulk length %q", body)
	}
	buf := make([]byte, n+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}
