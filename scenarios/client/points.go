package client

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// CmdHook puts a client's command points on its connection to a node.
//
// Command points. Every command a lock sends on Env.Nodes passes two
// failpoints of its client, whatever the lock (a shipped one, a user's, a
// library that knows nothing of lockstorm):
//
//	cmd/<node>/<COMMAND>/before   before it is sent
//	cmd/<node>/<COMMAND>/after    after its reply arrived, before the lock sees it
//
// <node> is the node's name (n1, n2, ...), <COMMAND> the command in upper
// case; scripts are told apart by the first 8 hex digits of their SHA-1
// (EVAL:1a2b3c4d, EVALSHA:1a2b3c4d: the same script under both names, as
// go-redis sends EVALSHA first and EVAL after a NOSCRIPT). Specs address
// them like any failpoint, with '*' for a segment (cmd/*/SET/after: a SET
// on any node) and nth for the occurrence in the client's cycle (nth: 2:
// the second SET of a cycle). A pipeline's commands pass their before
// points in order, then are sent together, then pass their after points.
//
// A crash at a before point sends nothing; at an after point the command
// landed and the client never learns its reply; either way the client
// sends nothing more (the hook refuses every later command of a crashed
// client, its watchdog's included). A lost reply (lose_reply, only at an
// after point) hands the lock a timeout instead of the reply: the command
// landed and the outcome is unknown to the client.
type CmdHook struct {
	// Node names the node in the points (n1, ...); FP are the client's
	// failpoints; Crash marks the client crashed, at once; Dead says it
	// has crashed.
	Node  string
	FP    *lockimpl.Failpoints
	Crash func(err error)
	Dead  func() bool
	// Sent, when set, is told of every command of the lock's (not a
	// connection's set-up) before it is sent, armed or not, with the
	// Locker call of its context and its before point: the tries of a
	// call (Tries).
	Sent func(call, point string)
	// Resends, when set, watches the client's releases for a command
	// sent again after a definite answer.
	Resends *Resends
	mu      sync.Mutex
	names   map[string]*[2]string // command → its before and after points
}

// errLostReply is what a lock sees instead of a reply lost at a point: a
// timeout, as a real lost reply would surface (a net.Error whose Timeout is
// true), so libraries classify it as an unknown outcome.
type errLostReply struct{ err error }

func (e *errLostReply) Error() string   { return "i/o timeout (" + e.err.Error() + ")" }
func (e *errLostReply) Unwrap() error   { return e.err }
func (e *errLostReply) Timeout() bool   { return true }
func (e *errLostReply) Temporary() bool { return true }

// DialHook implements redis.Hook.
func (h *CmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook: the command's before and after points.
func (h *CmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.Dead() {
			return setErr(lockimpl.ErrCrashed, cmd)
		}
		h.sent(ctx, cmd)
		// run, not next: next is this hook's for every command to come,
		// and wrapping it in place would wrap it again at each release.
		run := next
		if id, at := h.releasing(ctx, cmd); id != "" {
			// go-redis sets the command's error only once every hook has
			// returned: the answer's kind is read from what next returned.
			run = answering(next, h, id, at)
		}
		if !h.FP.Armed() {
			return run(ctx, cmd)
		}
		pts := h.points(cmd)
		if pts == nil {
			return run(ctx, cmd)
		}
		if err := h.FP.Hit(ctx, pts[0]); err != nil {
			return h.fail(err, false, cmd)
		}
		err := run(ctx, cmd)
		if herr := h.FP.Hit(lockimpl.WithReply(ctx, replyKind(cmd)), pts[1]); herr != nil {
			return h.fail(herr, true, cmd)
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook: every before point, the
// pipeline, every after point.
func (h *CmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) (err error) {
		if h.Dead() {
			return setErr(lockimpl.ErrCrashed, cmds...)
		}
		for _, cmd := range cmds {
			h.sent(ctx, cmd)
		}
		ids, sentAt := make([]string, len(cmds)), make([]int64, len(cmds))
		for i, cmd := range cmds {
			ids[i], sentAt[i] = h.releasing(ctx, cmd)
		}
		defer func() {
			// The pipeline's commands carry their replies' errors, but a
			// failed pipeline may leave them unset: then none answered.
			for i, cmd := range cmds {
				kind := replyKind(cmd)
				if err != nil && !errors.Is(err, redis.Nil) {
					kind = lockimpl.ReplyError
				}
				h.Resends.answer(h.Node, ids[i], kind, sentAt[i])
			}
		}()
		if !h.FP.Armed() {
			return next(ctx, cmds)
		}
		for _, cmd := range cmds {
			if pts := h.points(cmd); pts != nil {
				if err := h.FP.Hit(ctx, pts[0]); err != nil {
					return h.fail(err, false, cmds...)
				}
			}
		}
		err = next(ctx, cmds)
		for _, cmd := range cmds {
			if pts := h.points(cmd); pts != nil {
				if herr := h.FP.Hit(lockimpl.WithReply(ctx, replyKind(cmd)), pts[1]); herr != nil {
					return h.fail(herr, true, cmds...)
				}
			}
		}
		return err
	}
}

// sent tells Sent of cmd.
func (h *CmdHook) sent(ctx context.Context, cmd redis.Cmder) {
	if h.Sent == nil {
		return
	}
	if pts := h.points(cmd); pts != nil {
		h.Sent(lockimpl.CallOf(ctx), pts[0])
	}
}

// answering is next, noting its reply with h's Resends: an error returned
// (a refusal, a timeout) answers nothing.
func answering(next redis.ProcessHook, h *CmdHook, id string, sentAt int64) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		kind := lockimpl.ReplyError
		switch {
		case errors.Is(err, redis.Nil):
			kind = lockimpl.ReplyNil
		case err == nil:
			kind = replyKind(cmd)
		}
		h.Resends.answer(h.Node, id, kind, sentAt)
		return err
	}
}

// releasing notes cmd with the client's Resends when it is sent within a
// release (the call the lock passed its context for) and returns its
// identity for the answer ("" outside a release) and when it was sent.
func (h *CmdHook) releasing(ctx context.Context, cmd redis.Cmder) (string, int64) {
	if h.Resends == nil || lockimpl.CallOf(ctx) != lockimpl.CallRelease {
		return "", 0
	}
	id := commandID(cmdArgs(cmd))
	return id, h.Resends.sent(h.Node, id)
}

// fail turns a point's error into the commands' error. A crash marks the
// client dead before the lock sees anything, so the runner ends it even if
// the lock swallows or rewraps the error.
func (h *CmdHook) fail(err error, after bool, cmds ...redis.Cmder) error {
	switch {
	case errors.Is(err, lockimpl.ErrCrashed):
		h.Crash(err)
	case errors.Is(err, lockimpl.ErrLostReply) && after:
		err = &errLostReply{err}
	case errors.Is(err, lockimpl.ErrLostReply):
		// A reply cannot be lost before the command is sent: nothing was
		// sent, which the lock learns as a failed send (still unknown to it).
		err = fmt.Errorf("send failed: %w", err)
	}
	return setErr(err, cmds...)
}

func setErr(err error, cmds ...redis.Cmder) error {
	for _, c := range cmds {
		c.SetErr(err)
	}
	return err
}

// connSetup are the commands go-redis sends on its own when it opens a
// connection: they are not the lock's steps, so they have no points.
var connSetup = map[string]bool{"hello": true, "auth": true, "select": true, "client": true, "readonly": true}

// points returns the command's before and after point names, built once per
// distinct command so that a hit allocates nothing; nil for go-redis's own
// connection set-up.
func (h *CmdHook) points(cmd redis.Cmder) *[2]string {
	name := cmd.Name()
	if connSetup[name] {
		return nil
	}
	arg := ""
	if args := cmd.Args(); len(args) > 1 && isScript(name) {
		arg, _ = args[1].(string)
	}
	return h.pointsOf(name, arg)
}

func isScript(name string) bool {
	return name == "eval" || name == "evalsha" || name == "eval_ro" || name == "evalsha_ro"
}

// pointsOf is points for a command by its lower-case name and, for a
// script, its first argument (the script, or its SHA-1 under EVALSHA).
func (h *CmdHook) pointsOf(name, arg string) *[2]string {
	if connSetup[name] || name == "" {
		return nil
	}
	key := name
	if isScript(name) && arg != "" {
		key = name + "\x00" + arg
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p := h.names[key]; p != nil {
		return p
	}
	label := strings.ToUpper(name)
	if key != name {
		sha := arg
		if !strings.HasPrefix(name, "evalsha") {
			sum := sha1.Sum([]byte(arg))
			sha = hex.EncodeToString(sum[:])
		}
		if len(sha) > 8 {
			sha = sha[:8]
		}
		label += ":" + strings.ToLower(sha)
	}
	p := &[2]string{"cmd/" + h.Node + "/" + label + "/before", "cmd/" + h.Node + "/" + label + "/after"}
	if h.names == nil {
		h.names = map[string]*[2]string{}
	}
	h.names[key] = p
	return p
}

// replyKind is the kind of cmd's reply (lockimpl.ReplyNil...), for the
// explorer to tell a grant's after point from a refusal's.
func replyKind(cmd redis.Cmder) string {
	switch err := cmd.Err(); {
	case errors.Is(err, redis.Nil):
		return lockimpl.ReplyNil
	case err != nil:
		return lockimpl.ReplyError
	}
	switch c := cmd.(type) {
	case *redis.BoolCmd:
		if !c.Val() {
			return lockimpl.ReplyZero
		}
	case *redis.IntCmd:
		if c.Val() == 0 {
			return lockimpl.ReplyZero
		}
	case *redis.Cmd:
		switch v := c.Val().(type) {
		case nil:
			return lockimpl.ReplyNil
		case int64:
			if v == 0 {
				return lockimpl.ReplyZero
			}
		}
	}
	return lockimpl.ReplyValue
}
