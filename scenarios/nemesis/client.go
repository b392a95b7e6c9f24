package nemesis

import (
	"context"
	"fmt"
	"time"
)

// Client faults act on lockstorm's own clients through the runner.
func init() {
	Register("pause", "stop the targeted clients as a stop-the-world GC would (watchdog included) until the fault heals", clientTargets,
		func(s Spec, _ *NoParams) (Fault, error) {
			return newClientFault(s, func(env *Env, c int) func() {
				env.Control.Pause(c)
				return func() { env.Control.Resume(c) }
			})
		})
	Register("crash", "the targeted clients vanish at once, holding what they hold; nothing is released", clientTargets,
		func(s Spec, _ *NoParams) (Fault, error) {
			return newClientFault(s, func(env *Env, c int) func() {
				env.Control.Crash(c)
				return func() {}
			})
		})
	Register("client-clock", "jump the targeted clients' clocks by offset and/or set their drift rate; healing undoes the jump", clientTargets,
		func(s Spec, p *ClientClockParams) (Fault, error) {
			return newClientFault(s, func(env *Env, c int) func() {
				if p.Offset != 0 {
					env.Control.ClockJump(c, p.Offset)
				}
				if p.Drift != 0 {
					env.Control.ClockDrift(c, p.Drift)
				}
				return func() {
					if p.Offset != 0 {
						env.Control.ClockJump(c, -p.Offset)
					}
					if p.Drift != 0 {
						env.Control.ClockDrift(c, 0)
					}
				}
			})
		})
}

// ClientClockParams are client-clock's parameters.
type ClientClockParams struct {
	// Offset jumps the clients' clocks.
	Offset time.Duration `yaml:"offset"`
	// Drift sets their clocks' rate error.
	Drift float64 `yaml:"drift"`
}

// Validate wants an offset or a drift.
func (p *ClientClockParams) Validate() error {
	if p.Offset == 0 && p.Drift == 0 {
		return &FieldError{"offset", "client-clock needs offset or drift"}
	}
	return nil
}

type clientFault struct {
	spec Spec
	act  func(env *Env, c int) func()
}

func newClientFault(s Spec, act func(env *Env, c int) func()) (Fault, error) {
	if len(s.Clients)+len(s.Hosts) == 0 && s.Pick != "client" && s.Pick != "holder" {
		return nil, fmt.Errorf("%s: needs clients, hosts, pick: client or pick: holder", s.Kind)
	}
	return &clientFault{spec: s, act: act}, nil
}

func (f *clientFault) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	t := f.spec.resolve(env).clientTargets(env)
	var undo []func()
	for _, c := range t.Clients {
		undo = append(undo, f.act(env, c))
	}
	return func() error {
		for _, u := range undo {
			u()
		}
		return nil
	}, t, nil
}
