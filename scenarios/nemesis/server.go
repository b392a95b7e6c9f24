package nemesis

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Server faults act on the Redis processes themselves.
func init() {
	Register("kill", "SIGKILL the targeted nodes; healing restarts them empty (no persistence: the data is gone)", nodeTargets,
		func(s Spec, _ *NoParams) (Fault, error) { return newServerFault(s, killNode) })
	Register("kill-synced", "SIGKILL the targeted nodes once their replicas have every write they made (writes paused meanwhile, up to 2 s); healing restarts them empty", nodesOnly,
		func(s Spec, _ *KillSyncedParams) (Fault, error) {
			if len(s.Nodes) == 0 {
				return nil, &FieldError{"nodes", "kill-synced needs nodes"}
			}
			return killSynced{s}, nil
		})
	Register("server-pause", "freeze the targeted nodes (SIGSTOP) until the fault heals (SIGCONT)", nodeTargets,
		func(s Spec, _ *NoParams) (Fault, error) {
			return newServerFault(s, func(sc cluster.ServerControl, i int) (func() error, error) {
				if err := sc.Pause(i); err != nil {
					return nil, err
				}
				return func() error { return sc.Resume(i) }, nil
			})
		})
	Register("server-clock", "move the targeted nodes' wall clocks by offset (keys expire by it); healing moves them back", nodeTargets,
		func(s Spec, p *ServerClockParams) (Fault, error) {
			return newServerFault(s, func(sc cluster.ServerControl, i int) (func() error, error) {
				before := sc.ClockOffset(i)
				if err := sc.SetClockOffset(i, before+p.Offset); err != nil {
					return nil, err
				}
				return func() error { return sc.SetClockOffset(i, before) }, nil
			})
		})
}

// KillSyncedParams are kill-synced's parameters: none, but the kind needs
// a replica to wait for.
type KillSyncedParams struct{}

// Needs wants a replica per master.
func (*KillSyncedParams) Needs(t Servers) string {
	if t.Replicas == 0 {
		return "kill-synced waits for the node's replica: set replicas: 1"
	}
	return ""
}

// ServerClockParams are server-clock's parameters.
type ServerClockParams struct {
	// Offset moves the nodes' wall clocks.
	Offset time.Duration `yaml:"offset"`
}

// Validate wants an offset.
func (p *ServerClockParams) Validate() error {
	if p.Offset == 0 {
		return &FieldError{"offset", "server-clock needs offset"}
	}
	return nil
}

type serverFault struct {
	spec Spec
	act  func(sc cluster.ServerControl, i int) (func() error, error)
}

func newServerFault(s Spec, act func(sc cluster.ServerControl, i int) (func() error, error)) (Fault, error) {
	if len(s.Nodes) == 0 && s.Pick != "minority" && s.Pick != "majority" {
		return nil, fmt.Errorf("%s: needs nodes or pick: minority|majority", s.Kind)
	}
	return &serverFault{spec: s, act: act}, nil
}

// UsesServerClock says whether any of specs needs the server clock shim.
func UsesServerClock(specs []Spec) bool {
	for _, s := range specs {
		if s.Kind == "server-clock" {
			return true
		}
	}
	return false
}

func nodeIndex(env *Env, name string) (int, error) {
	for i, n := range env.Cluster.Nodes() {
		if n.Name == name {
			return i, nil
		}
	}
	return -1, fmt.Errorf("no node %s", name)
}

func (f *serverFault) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	sc, ok := env.Cluster.(cluster.ServerControl)
	if !ok {
		return nil, Targets{}, fmt.Errorf("%s: the %s backend has no server control", f.spec.Kind, env.Cluster.Kind())
	}
	var heals []func() error
	heal := func() error {
		var errs []error
		for _, h := range heals {
			errs = append(errs, h())
		}
		return errors.Join(errs...)
	}
	sel := f.spec.resolve(env)
	for _, n := range sel.nodes {
		i, err := nodeIndex(env, n) // resolve kept only existing nodes
		if err == nil {
			var h func() error
			if h, err = f.act(sc, i); err == nil {
				heals = append(heals, h)
				continue
			}
		}
		err = fmt.Errorf("%s %s: %w", f.spec.Kind, n, err)
		if herr := heal(); herr != nil {
			err = errors.Join(err, herr)
		}
		return nil, Targets{}, err
	}
	return heal, sel.nodeTargets(), nil
}

// killSynced is a kill whose premise is that the replica kept up: a
// scenario about what a failover does with a write that did reach the
// replica (sentinel-kill-wait) cannot rest on the scheduling of the
// master's last replication write against the kill. When the replica
// cannot catch up (replication cut or stalled), the fault fails: its
// premise does not hold, and the run says so instead of judging.
type killSynced struct{ spec Spec }

// catchUpLimit bounds the wait for a replica and the writes' pause.
const catchUpLimit = 2 * time.Second

func (f killSynced) Inject(ctx context.Context, env *Env) (Heal, Targets, error) {
	sel := f.spec.resolve(env)
	for _, n := range sel.nodes {
		rep := env.Replicas[n]
		if rep == nil {
			return nil, Targets{}, fmt.Errorf("kill-synced: node %s has no replica (set replicas: 1 in the scenario)", n)
		}
		i, err := nodeIndex(env, n)
		if err != nil {
			return nil, Targets{}, err
		}
		cctx, cancel := context.WithTimeout(ctx, catchUpLimit)
		err = rep.CatchUp(cctx, env.Cluster.Nodes()[i].Addr, catchUpLimit)
		cancel()
		if err != nil {
			return nil, Targets{}, fmt.Errorf("kill-synced %s: replica did not catch up: %w", n, err)
		}
	}
	kill := &serverFault{spec: f.spec, act: killNode}
	return kill.Inject(ctx, env)
}

func killNode(sc cluster.ServerControl, i int) (func() error, error) {
	if err := sc.Kill(i); err != nil {
		return nil, err
	}
	return func() error { return sc.Restart(i) }, nil
}
