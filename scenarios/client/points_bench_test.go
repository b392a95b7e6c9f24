package client

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// BenchmarkCmdHook measures what the command points add to each command,
// without the network: unarmed (no failpoint, no exploration: the shipped
// random scenarios) it must stay a few nanoseconds; armed it is two hits.
func BenchmarkCmdHook(b *testing.B) {
	ctx := context.Background()
	next := func(context.Context, redis.Cmder) error { return nil }
	cmd := redis.NewStatusCmd(ctx, "set", "lock:0", "tok", "nx", "px", 200)
	for _, tc := range []struct {
		name string
		arm  func(h *lockimpl.Hub, fp *lockimpl.Failpoints)
	}{
		{"unarmed", func(*lockimpl.Hub, *lockimpl.Failpoints) {}},
		{"armed", func(h *lockimpl.Hub, _ *lockimpl.Failpoints) { h.Arm() }},
		{"armed-pattern-elsewhere", func(_ *lockimpl.Hub, fp *lockimpl.Failpoints) {
			fp.Attach("cmd/*/PEXPIRE/before", lockimpl.Action{Sleep: 1})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hub := lockimpl.NewHub()
			fp := lockimpl.NewFailpoints(hub, 0)
			tc.arm(hub, fp)
			h := &CmdHook{Node: "n1", FP: fp, Crash: func(error) {}, Dead: func() bool { return false }}
			run := h.ProcessHook(next)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_ = run(ctx, cmd)
			}
		})
	}
}
