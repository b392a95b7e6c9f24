package lockimpl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// ProgramFunc describes the external lock client program argv as an
// implementation, from what the program itself declares when asked.
type ProgramFunc func(ctx context.Context, argv []string) (Info, error)

var (
	progMu  sync.RWMutex
	program ProgramFunc
)

// RegisterPrograms installs the function that turns a client program into
// an implementation. Package lockimpl/exec installs it when it is linked in:
// lockimpl cannot import it, since exec builds on lockimpl.
func RegisterPrograms(f ProgramFunc) {
	progMu.Lock()
	defer progMu.Unlock()
	program = f
}

// Program describes the client program argv (a spec's exec variant). It
// fails when no package provides client programs: import lockimpl/exec
// (cmd/lockstorm does).
func Program(ctx context.Context, argv []string) (Info, error) {
	progMu.RLock()
	f := program
	progMu.RUnlock()
	if f == nil {
		return Info{}, errors.New("client programs need package github.com/lockstorm/lockstorm/lockimpl/exec linked in (import it with _)")
	}
	return f(ctx, argv)
}

// ErrNotAllowed is the error of starting a client program the user did not
// allow to start (Unasked).
var ErrNotAllowed = errors.New("a client program named in a spec starts only with the user's consent (--allow-exec)")

// Unasked describes the client program argv without starting it: by its
// command line only, with no claims (its hello is not asked), one node
// unless the options say more, and a New that refuses to start it. A plan
// can show what a run would start; a run cannot start it.
func Unasked(name string, argv []string) Info {
	argv = append([]string(nil), argv...)
	return Info{
		Name:    name,
		Source:  "client process: " + strings.Join(argv, " "),
		Summary: unaskedSummary,
		Nodes: func(o Options) int {
			return max(o.Nodes, 1)
		},
		OwnConnections: true,
		Program:        argv,
		New: func(Env, Options) (Locker, error) {
			return nil, fmt.Errorf("%s: %w", strings.Join(argv, " "), ErrNotAllowed)
		},
	}
}

const unaskedSummary = "client process, not started: its hello (name, claims) is not asked"

// Unasked says i is a client program described by Unasked: its hello was
// not asked.
func (i Info) Unasked() bool { return i.Program != nil && i.Summary == unaskedSummary }
