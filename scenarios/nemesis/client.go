package nemesis

import (
	"context"
	"fmt"
)

// Client faults act on lockstorm's own clients through the runner.
func init() {
	Register("pause", "stop the targeted clients as a stop-the-world GC would (watchdog included) until the fault heals",
		clientFactory(func(env *Env, c int) func() {
			env.Control.Pause(c)
			return func() { env.Control.Resume(c) }
		}), clientTargets)
	Register("crash", "the targeted clients vanish at once, holding what they hold; nothing is released",
		clientFactory(func(env *Env, c int) func() {
			env.Control.Crash(c)
			return func() {}
		}), clientTargets)
	Register("client-clock", "jump the targeted clients' clocks by offset and/or set their drift rate; healing undoes the jump",
		func(s Spec) (Fault, error) {
			if s.Offset == 0 && s.Drift == 0 {
				return nil, &FieldError{"offset", "client-clock needs offset or drift"}
			}
			return clientFactory(func(env *Env, c int) func() {
				if s.Offset != 0 {
					env.Control.ClockJump(c, s.Offset)
				}
				if s.Drift != 0 {
					env.Control.ClockDrift(c, s.Drift)
				}
				return func() {
					if s.Offset != 0 {
						env.Control.ClockJump(c, -s.Offset)
					}
					if s.Drift != 0 {
						env.Control.ClockDrift(c, 0)
					}
				}
			})(s)
		}, clientTargets.with("offset", "drift"))
}

type clientFault struct {
	spec Spec
	act  func(env *Env, c int) func()
}

func clientFactory(act func(env *Env, c int) func()) Factory {
	return func(s Spec) (Fault, error) {
		if len(s.Clients)+len(s.Hosts) == 0 && s.Pick != "client" && s.Pick != "holder" {
			return nil, fmt.Errorf("%s: needs clients, hosts, pick: client or pick: holder", s.Kind)
		}
		return &clientFault{spec: s, act: act}, nil
	}
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
