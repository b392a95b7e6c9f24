package lockimpl

import "context"

// The Locker calls a hit can be made in, as the runner tags the context it
// passes to them: exploration may restrict itself to the points a lock hits
// inside one kind of call (a pause inside a release is a late release; the
// same pause inside an acquire is a late grant, which only a lock that
// checks its validity survives).
const (
	CallAcquire = "acquire"
	CallRelease = "release"
	CallExtend  = "extend"
)

type callKey struct{}

// WithCall tags ctx as the context of a Locker call (CallAcquire, ...).
// Helpers a lock runs on contexts of its own (a watchdog) carry no tag.
func WithCall(ctx context.Context, call string) context.Context {
	return context.WithValue(ctx, callKey{}, call)
}

// CallOf is the Locker call ctx was tagged with, or "" (the lock's own
// helpers, or a context the runner did not hand it).
func CallOf(ctx context.Context) string {
	s, _ := ctx.Value(callKey{}).(string)
	return s
}

// The kinds of reply a command's after point is hit with (ReplyOf): a
// grant and a refusal pass the same point (cmd/n1/SET/after) but a fault
// after each means something else (a late grant; nothing), so the
// explorer counts and budgets them apart. The kinds name the reply, not
// what it means to the lock: SET NX grants with a value and refuses with
// nil, Redisson's script the other way round.
const (
	ReplyNil   = "nil"   // a nil reply
	ReplyZero  = "zero"  // 0 or false
	ReplyValue = "value" // any other reply
	ReplyError = "error" // an error, or no reply
)

type replyKey struct{}

// WithReply tags ctx, the context of a command's after point, with the
// kind of its reply.
func WithReply(ctx context.Context, kind string) context.Context {
	return context.WithValue(ctx, replyKey{}, kind)
}

// ReplyOf is the kind of reply ctx was tagged with, or "" (a before
// point, or a point that sees no reply).
func ReplyOf(ctx context.Context) string {
	s, _ := ctx.Value(replyKey{}).(string)
	return s
}
