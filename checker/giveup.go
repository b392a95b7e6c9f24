package checker

import (
	"fmt"
	"time"

	"github.com/lockstorm/lockstorm/history"
)

// earlyGiveUpCheck finds acquires answered with a definite "not acquired"
// before their wait timeout had passed, on a lock that declares it waits
// the timeout out (history.Options.WaitOut). The history's span of an
// acquire is never shorter than the lock's own measure of it (the invoke
// is recorded before the lock starts its clock, the completion after it
// answers), so a lock that keeps its word is never flagged, however late
// the harness; a fault that named the client while it waited (a clock
// run fast, a pause) excuses the acquire, as does an error reply (the
// server refused, which is not the lock's choice to stop waiting).
type earlyGiveUpCheck struct{}

func (earlyGiveUpCheck) name() string { return "early-give-up" }

func (earlyGiveUpCheck) run(a *analysis) finding {
	wait := int64(a.opts.WaitOut)
	f := witnessed{kind: history.KindEarlyGiveUp}
	if wait <= 0 {
		return f
	}
	invoked := map[int]int64{} // process → its acquire's invoke
	for i := range a.h {
		op := &a.h[i]
		if op.Process < 0 || op.F != history.FAcquire {
			continue
		}
		switch {
		case op.Type == history.Invoke:
			invoked[op.Process] = op.Time
		case op.Type == history.Fail && !op.ErrorReply:
			from, ok := invoked[op.Process]
			if !ok || op.Time-from >= wait || a.faultedBetween(op.Client, "", from, op.Time) {
				continue
			}
			f.add(op.Time, func() string {
				return fmt.Sprintf("client %d's acquire of %s, invoked at %s, was refused at %s, %s into its %s wait timeout, with no fault on the client: the lock says it waits the timeout out",
					op.Client, op.Key, ms(from), ms(op.Time), time.Duration(op.Time-from).Round(time.Millisecond), time.Duration(wait))
			})
		}
	}
	return f
}
