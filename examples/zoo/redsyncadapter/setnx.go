package redsyncadapter

import (
	"fmt"

	"github.com/go-redsync/redsync/v4"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// SetNXOnExtend is the release on n nodes with the library's opt-in fix for
// restarts without persistence (PRs 147/149, v4.12.0): setNX is the
// release's own WithSetNXOnExtend(), which the module hands in, as releases
// before v4.12 do not have it. Its touch script sets the key again (SET NX
// PX) on a node where it is missing instead of refusing there (scripts.go
// 16-24, mutex.go 257-260 at v4.18.1), so the claims add extend_recreates;
// every other option and claim is the release's own (Info).
func (r Release) SetNXOnExtend(n int, setNX redsync.Option) lockimpl.Info {
	v := r
	v.Options = func(o lockimpl.Options) []redsync.Option {
		var opts []redsync.Option
		if r.Options != nil {
			opts = r.Options(o)
		}
		return append(opts, setNX)
	}
	info := v.Info(n)
	info.Name = "redsync-setnx-extend@" + r.Version
	if n > 1 {
		info.Name = fmt.Sprintf("redsync-%d-setnx-extend@%s", n, r.Version)
	}
	info.Summary += ", WithSetNXOnExtend"
	info.Claims.ExtendRecreates = true
	return info
}
