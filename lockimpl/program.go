package lockimpl

import (
	"context"
	"errors"
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
