package client

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Resends watches one client's releases for a command sent to a node again
// after that node had answered the same command definitively within the
// same release. A definite answer (a value, a nil, a 0: not an error reply,
// not a timeout) is all the node can say: asking it again within the same
// release learns nothing new unless something changed on the way, which
// the checker decides from the faults (history.FResend). Both the go-redis
// hooks (CmdHook) and the relays of a client process (Relay) report to it;
// it is active only between Begin and End, so a watchdog's or an acquire's
// commands are never counted. A command is asked again only if the client
// wrote nothing else to that node since it was first sent.
type Resends struct {
	// Now is the recorder's clock; Report records one resend (the key
	// released, the node, the command's label, when the answered command
	// was sent and when its answer came back).
	Now    func() int64
	Report func(key, node, label string, sent, answered int64)

	mu       sync.Mutex
	key      string
	on       bool
	answered map[sentTo][2]int64 // → when sent, when answered
	writes   map[string][]sentAt // node → the writes sent to it
	// inflight counts the client's commands unanswered, by name and first
	// argument (a script's SHA), on every node, release or not (told by
	// the relays: flight); beside are the release's commands sent while
	// another command was in flight, with when (see sent).
	inflight map[string]int
	beside   map[sentTo]int64
}

// sentAt is a command (commandID) sent at a time.
type sentAt struct {
	cmd string
	at  int64
}

// sentTo is a command (commandID) sent to a node.
type sentTo struct{ node, cmd string }

// Begin starts watching a release of key.
func (w *Resends) Begin(key string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.key, w.on, w.answered, w.writes, w.beside = key, true, nil, nil, nil
	w.mu.Unlock()
}

// End stops watching: later replies belong to no release.
func (w *Resends) End() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.on, w.answered, w.writes, w.beside = false, nil, nil, nil
	w.mu.Unlock()
}

// flight counts one of the client's commands (its name and first
// argument) going out (+1) or answered (-1), on any node.
func (w *Resends) flight(ident string, d int) {
	if w == nil || ident == "" {
		return
	}
	w.mu.Lock()
	if w.inflight == nil {
		w.inflight = map[string]int{}
	}
	if w.inflight[ident] += d; w.inflight[ident] <= 0 {
		delete(w.inflight, ident)
	}
	w.mu.Unlock()
}

// sent notes command cmd (commandID) going to node, and returns when; a
// resend of one the node already answered in this release is reported.
func (w *Resends) sent(node, cmd string) int64 {
	if w == nil || cmd == "" {
		return 0
	}
	now := w.Now()
	w.mu.Lock()
	at, seen := w.answered[sentTo{node, cmd}]
	// The client's own write of something else to the node since the
	// answered command was sent changes the question: its SET between
	// two DELs of one key (an npm redis-lock client's abandoned acquire,
	// granted as the release's DEL freed the key and released at once,
	// inside the release's window, which a relay cannot tell from the
	// release's own commands; the SET went out before the DEL's answer
	// came back) makes the second DEL a new one, answered afresh. A read
	// changes nothing.
	if seen && slices.ContainsFunc(w.writes[node], func(wr sentAt) bool { return wr.cmd != cmd && wr.at >= at[0] }) {
		seen = false
		delete(w.answered, sentTo{node, cmd})
	}
	// A command sent while another of the client's commands (another
	// name or script, on any node) was unanswered went out beside a
	// second operation of the client: a refresh timer's script that fired
	// as the release began, whose failure sends the release's own delete
	// again (redis-semaphore's RedlockMutex, refresh.js, on
	// pause-past-ttl-random: the wire cannot tell whose each delete was).
	// Its resend is not reported. A release's own round (the same
	// command to every node) is not beside anything.
	if b, ok := w.beside[sentTo{node, cmd}]; seen && ok && b == at[0] {
		seen = false
	}
	if w.on && w.otherInFlight(cmd) {
		if w.beside == nil {
			w.beside = map[sentTo]int64{}
		}
		w.beside[sentTo{node, cmd}] = now
	}
	if w.on && !readOnly[idName(cmd)] {
		if w.writes == nil {
			w.writes = map[string][]sentAt{}
		}
		w.writes[node] = append(w.writes[node], sentAt{cmd, now})
	}
	key, on := w.key, w.on
	w.mu.Unlock()
	if on && seen {
		w.Report(key, node, labelOf(cmd), at[0], at[1])
	}
	return now
}

// otherInFlight says a command other than cmd's name and first argument
// is unanswered (w.mu held).
func (w *Resends) otherInFlight(cmd string) bool {
	self := identOf(cmd)
	for ident := range w.inflight {
		if ident != self {
			return true
		}
	}
	return false
}

// identOf is what tells a commandID's operation: a script's name (its
// SHA), another command's name and first argument (its key).
func identOf(id string) string {
	name, rest, _ := strings.Cut(id, "\x00")
	if strings.HasPrefix(name, "script:") {
		return name
	}
	first, _, _ := strings.Cut(rest, "\x00")
	return name + "\x00" + first
}

// answer notes node's reply of kind (lockimpl.ReplyNil...) to cmd, sent at
// sentAt; an error (a refusal, a timeout, a lost reply) answers nothing.
func (w *Resends) answer(node, cmd, kind string, sentAt int64) {
	if w == nil || cmd == "" || kind == lockimpl.ReplyError || kind == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return
	}
	if w.answered == nil {
		w.answered = map[sentTo][2]int64{}
	}
	// The latest answer is the one a resend is judged against: a lock
	// whose node timeout fired on a second round, its answer late, and
	// that began a third as it came, did not ignore the first round's
	// answer for a round trip (seen: the built-in redlock at load 20,
	// rounds of 20, 40 and 80 ms, judged by its first answer).
	if prev, seen := w.answered[sentTo{node, cmd}]; !seen || sentAt >= prev[0] {
		w.answered[sentTo{node, cmd}] = [2]int64{sentAt, w.Now()}
	}
}

// readOnly are the commands that change no key: sent between a command and
// its resend, they leave the question the same.
var readOnly = map[string]bool{"get": true, "mget": true, "exists": true, "pttl": true, "ttl": true, "type": true,
	"strlen": true, "ping": true, "echo": true, "time": true, "hget": true, "hgetall": true, "hexists": true}

// idName is a commandID's command name (lower case; "script:SHA" for a
// script, which may write).
func idName(id string) string {
	name, _, _ := strings.Cut(id, "\x00")
	return name
}

// commandID is a command as the node receives it, name and every argument,
// a script named by its SHA-1 whether sent by EVAL or EVALSHA (go-redis and
// ioredis send EVALSHA and fall back to EVAL after a NOSCRIPT: the same
// command to the node). "" for a connection's set-up.
func commandID(args []string) string {
	if len(args) == 0 {
		return ""
	}
	name := strings.ToLower(args[0])
	if connSetup[name] {
		return ""
	}
	rest := args[1:]
	if isScript(name) && len(rest) > 0 {
		sha := strings.ToLower(rest[0])
		if !strings.HasPrefix(name, "evalsha") {
			sum := sha1.Sum([]byte(rest[0]))
			sha = hex.EncodeToString(sum[:])
		}
		name, rest = "script:"+sha, rest[1:]
	}
	return name + "\x00" + strings.Join(rest, "\x00")
}

// labelOf is a command's label in a point name (SET, SCRIPT:1a2b3c4d).
func labelOf(id string) string {
	name := idName(id)
	if sha, ok := strings.CutPrefix(name, "script:"); ok {
		return "SCRIPT:" + sha[:min(8, len(sha))]
	}
	return strings.ToUpper(name)
}

// cmdArgs are a go-redis command's arguments as the node receives them.
func cmdArgs(cmd redis.Cmder) []string {
	args := make([]string, len(cmd.Args()))
	for i, a := range cmd.Args() {
		switch v := a.(type) {
		case string:
			args[i] = v // most arguments: no formatting to pay on every release
		default:
			args[i] = fmt.Sprint(a)
		}
	}
	return args
}
