package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// Relay puts command points on the wire. A lock that dials its nodes with
// a client of its own (a client process in any language,
// Info.OwnConnections) sends commands lockstorm's go-redis hooks never see. For such a lock each of its
// connections to a node goes through a relay of its client's, in front of
// the client's link, that reads the RESP stream both ways and passes the
// same points a Go lock's commands pass (cmd/<node>/<COMMAND>/before|after),
// without the client's cooperation:
//
//   - before: a command is read whole from the client and held until its
//     point returns, then sent;
//   - after: a reply is read whole from the server, paired with the oldest
//     command still waiting for one (replies come in order, pipelines
//     included), and held until its point returns, then passed on.
//
// A crash at either point is the client's crash (its process is killed: the
// command landed or not, as at a Go lock's point). A lost reply drops the
// reply and closes the connection: the client learns nothing of the
// command's outcome. A delay holds the command or the reply; a pause stops
// the client's process while the relay goes on.
type Relay struct {
	ln       net.Listener
	upstream string
	node     string
	hook     *CmdHook
	call     func() string // the client's Locker call in flight, for During
	crash    func()        // crashes the client
	mu       sync.Mutex
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
}

// NewRelay listens on a free loopback port and relays to upstream.
func NewRelay(upstream, node string, hook *CmdHook, call func() string, crash func()) (*Relay, error) {
	ln, err := cluster.Listen()
	if err != nil {
		return nil, fmt.Errorf("relay to %s: %w", node, err)
	}
	rl := &Relay{ln: ln, upstream: upstream, node: node, hook: hook, call: call, crash: crash, conns: map[net.Conn]struct{}{}}
	rl.wg.Add(1)
	go rl.accept()
	return rl, nil
}

// Addr is where the client dials.
func (rl *Relay) Addr() string { return rl.ln.Addr().String() }

// Close stops accepting and drops every connection.
func (rl *Relay) Close() {
	_ = rl.ln.Close()
	rl.mu.Lock()
	for c := range rl.conns {
		_ = c.Close()
	}
	rl.mu.Unlock()
	rl.wg.Wait()
}

func (rl *Relay) track(cs ...net.Conn) bool {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.conns == nil {
		return false
	}
	for _, c := range cs {
		rl.conns[c] = struct{}{}
	}
	return true
}

func (rl *Relay) accept() {
	defer rl.wg.Done()
	for {
		c, err := rl.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", rl.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		rl.track(c, s)
		rl.wg.Add(1)
		go func() {
			defer rl.wg.Done()
			rl.serve(c, s)
			rl.mu.Lock()
			delete(rl.conns, c)
			delete(rl.conns, s)
			rl.mu.Unlock()
		}()
	}
}

// serve relays one connection: commands up, replies down, each through its
// point; either side closing (or a fault) closes both.
func (rl *Relay) serve(c, s net.Conn) {
	defer c.Close()
	defer s.Close()
	pending := make(chan relayed, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer s.Close()
		defer c.Close()
		rl.pump(bufio.NewReader(s), c, func(raw []byte) bool {
			select {
			case p := <-pending:
				rl.hook.Resends.flight(p.ident, -1)
				kind := rawReplyKind(raw)
				if !rl.pass(p.pts, 1, kind) {
					return false
				}
				// Passed on: the client has this answer.
				rl.hook.Resends.answer(rl.node, p.id, kind, p.at)
				return true
			default: // a push message: no command waits for it
				return true
			}
		}, false)
	}()
	rl.pump(bufio.NewReader(c), s, func(raw []byte) bool {
		releasing, n := rl.hook.Resends != nil && rl.call() == lockimpl.CallRelease, 2
		if releasing {
			n = -1
		}
		args := commandArgs(raw, n)
		pts := rl.hook.pointsOf(strings.ToLower(argN(args, 0)), argN(args, 1))
		if pts != nil && rl.hook.Sent != nil && !rl.hook.Dead() {
			rl.hook.Sent(rl.call(), pts[0])
		}
		if !rl.pass(pts, 0, "") {
			return false
		}
		p := relayed{pts: pts}
		if rl.hook.Resends != nil {
			if p.ident = identOf(commandID(args)); p.ident != "" {
				rl.hook.Resends.flight(p.ident, +1)
			}
		}
		if releasing {
			p.id = commandID(args)
			p.at = rl.hook.Resends.sent(rl.node, p.id)
		}
		pending <- p
		return true
	}, true)
	_ = s.Close()
	_ = c.Close()
	<-done
	for { // the commands never answered are in flight no longer
		select {
		case p := <-pending:
			rl.hook.Resends.flight(p.ident, -1)
		default:
			return
		}
	}
}

// pump copies whole RESP values from r to w, each after ok(raw) allowed it.
func (rl *Relay) pump(r *bufio.Reader, w io.Writer, ok func(raw []byte) bool, commands bool) {
	for {
		raw, err := readRaw(r, nil, commands)
		if err != nil || !ok(raw) {
			return
		}
		if _, err := w.Write(raw); err != nil {
			return
		}
	}
}

// pass runs point i (0 before, 1 after) of pts, an after point with the
// kind of its reply (rawReplyKind); false: the connection must close (the
// client crashed, or the reply was lost).
func (rl *Relay) pass(pts *[2]string, i int, reply string) bool {
	h := rl.hook
	if pts == nil || h.Dead() {
		return !h.Dead()
	}
	if !h.FP.Armed() {
		return true
	}
	ctx := context.Background()
	if call := rl.call(); call != "" {
		ctx = lockimpl.WithCall(ctx, call)
	}
	if reply != "" {
		ctx = lockimpl.WithReply(ctx, reply)
	}
	err := h.FP.Hit(ctx, pts[i])
	switch {
	case err == nil:
		return true
	case errors.Is(err, lockimpl.ErrCrashed):
		rl.crash()
	}
	// A lost reply (or a reply lost before it was sent: the command is
	// dropped) ends the connection: the client's outcome is unknown.
	return false
}

// rawReplyKind is the kind of a raw RESP reply, as replyKind tells a Go
// lock's: without it a client process's grant and refusals pass the same
// point with no kind, and the explorer's budget for that point (per_point)
// goes to the refused retries and NOSCRIPT answers that come first (seen:
// explore-late-grant x redlock@v5.0.0-beta.2, no pause after a grant on
// seeds 2 and 3).
func rawReplyKind(raw []byte) string {
	line := strings.TrimRight(string(raw[:max(0, strings.IndexByte(string(raw), '\n'))]), "\r")
	switch {
	case line == "":
		return lockimpl.ReplyError
	case line[0] == '-' || line[0] == '!':
		return lockimpl.ReplyError
	case line == "$-1" || line == "*-1" || line == "_":
		return lockimpl.ReplyNil
	case line == ":0" || line == "#f":
		return lockimpl.ReplyZero
	}
	return lockimpl.ReplyValue
}

// readRaw reads one RESP value from r and returns its bytes, appended to
// buf. With commands, a line that does not start a RESP type is an inline
// command (the form redis-cli and telnet send).
func readRaw(r *bufio.Reader, buf []byte, commands bool) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	buf = append(buf, line...)
	if len(line) < 3 {
		return buf, nil
	}
	body := strings.TrimRight(string(line[1:]), "\r\n")
	switch line[0] {
	case '$', '!', '=':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return buf, nil
		}
		data := make([]byte, n+2)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, err
		}
		return append(buf, data...), nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return buf, nil
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			if buf, err = readRaw(r, buf, false); err != nil {
				return nil, err
			}
		}
		if line[0] == '|' { // an attribute precedes the value it describes
			return readRaw(r, buf, commands)
		}
	}
	return buf, nil
}

// relayed is a command sent, waiting for its reply: its points and, within
// a release, its identity for the client's Resends and when it was sent.
type relayed struct {
	pts   *[2]string
	id    string
	ident string // identOf(id), for Resends.flight ("": not counted)
	at    int64
}

// argN is args[i], or "".
func argN(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}

// commandName is a command's name and, for a script, its first argument
// (the script or its SHA-1), from its raw RESP array (or inline line).
func commandName(raw []byte) (name, arg string) {
	args := commandArgs(raw, 2)
	return argN(args, 0), argN(args, 1)
}

// commandArgs are a command's first n arguments (every one for n < 0),
// name first, from its raw RESP array (or inline line).
func commandArgs(raw []byte, n int) []string {
	if len(raw) == 0 || raw[0] != '*' {
		f := strings.Fields(string(raw))
		if n >= 0 && len(f) > n {
			f = f[:n]
		}
		return f
	}
	r := bufio.NewReader(strings.NewReader(string(raw)))
	_, _ = r.ReadString('\n')
	var args []string
	for n < 0 || len(args) < n {
		line, err := r.ReadString('\n')
		if err != nil || len(line) < 3 || line[0] != '$' {
			break
		}
		size, err := strconv.Atoi(strings.TrimRight(line[1:], "\r\n"))
		if err != nil || size < 0 {
			break
		}
		data := make([]byte, size+2)
		if _, err := io.ReadFull(r, data); err != nil {
			break
		}
		args = append(args, string(data[:size]))
	}
	return args
}
