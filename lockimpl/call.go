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
