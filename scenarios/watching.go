package scenarios

import (
	"context"
	"strings"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/observe"
	"github.com/lockstorm/lockstorm/scenarios/topology"
)

// watching is what records the run beside its clients: the harness's
// stall monitor and the servers' observers.
type watching struct {
	stopStalls func()
	obs        []*observe.Observer
	simObs     *observe.SimObservers
	observed   string // what the observers watch, or why none
	observing  bool   // observers were started
}

// close stops whatever still watches (an early return).
func (w *watching) close() {
	observe.CloseAll(w.obs)
	w.obs = nil
	if w.simObs != nil {
		w.simObs.Close()
		w.simObs = nil
	}
	if w.stopStalls != nil {
		w.stopStalls()
		w.stopStalls = nil
	}
}

// watch starts the clock: time zero is now, not before the set-up, so
// fault times and the history count from the start of the traffic. The
// header is the history's first entry; the stall monitor, the servers'
// key events and the Sentinels' events go to the same recorder.
func (r *run) watch(ctx context.Context, plan *Plan, topo *topology.Topology) *watching {
	r.rec = history.NewRecorder()
	r.rec.Add(history.Op{Type: history.Ok, Process: history.FinalProcess, Client: -1, F: history.FMeta,
		Meta: r.meta(topo.Cluster.Kind())})
	if m, ok := topo.Cluster.(*cluster.Minis); ok && m.Kind() == cluster.Sim {
		// In virtual time the harness cannot stall: nothing to watch.
		w := &watching{}
		w.simObs, w.observed = r.startSimObservers(m, topo.Observed())
		w.observing = w.simObs != nil
		return w
	}
	w := &watching{stopStalls: watchStalls(r.rec)}
	w.obs, w.observed = r.startObservers(ctx, topo.Observed())
	w.observing = len(w.obs) > 0
	if topo.FailsOver() {
		topo.Follow(r.failoverRecorders())
	}
	return w
}

// startObservers starts the observers of the run's lock keys and says in
// one line what is observed. A backend that cannot (miniredis has no
// keyspace notifications) or a spec with observe: false runs without: the
// run goes on, the false-success check then has nothing to go on, and the
// outcome says so.
func (r *run) startObservers(ctx context.Context, nodes []cluster.Node) ([]*observe.Observer, string) {
	if !r.plan.Observe {
		return nil, "off (observe: false)"
	}
	keys := make([]string, r.plan.Keys)
	for k := range keys {
		keys[k] = keyName(k)
	}
	nodes, closeDelay, err := observe.Delayed(nodes, r.cfg.ObserverDelay.Latency, r.cfg.ObserverDelay.Jitter)
	if err != nil {
		r.log.Info("no server observer", "err", err)
		return nil, "off: " + err.Error()
	}
	obs, err := observe.Start(ctx, nodes, keys, r.info.RedisKey, r.rec, 4*(r.cfg.ObserverDelay.Latency+r.cfg.ObserverDelay.Jitter))
	if len(obs) > 0 {
		obs[len(obs)-1].OnClose(closeDelay)
	} else {
		closeDelay()
	}
	if err != nil {
		r.log.Info("no server observer", "err", err)
		return nil, "off: " + err.Error()
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	what := "keyspace events of " + strings.Join(names, ",")
	if r.info.RedisKey != nil {
		what += " on " + r.info.RedisKey(keys[0]) + " (the lock's own key for " + keys[0] + ")"
	}
	return obs, what
}

// startSimObservers starts the sim observers of the run's lock keys
// (observe.SimObservers: the servers' own record, in virtual time).
func (r *run) startSimObservers(m *cluster.Minis, nodes []cluster.Node) (*observe.SimObservers, string) {
	if !r.plan.Observe {
		return nil, "off (observe: false)"
	}
	keys := make([]string, r.plan.Keys)
	for k := range keys {
		keys[k] = keyName(k)
	}
	obs, err := observe.StartSim(m, nodes, keys, r.info.RedisKey, r.rec)
	if err != nil {
		return nil, "off: " + err.Error()
	}
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	what := "sim key events of " + strings.Join(names, ",")
	if r.info.RedisKey != nil {
		what += " on " + r.info.RedisKey(keys[0]) + " (the lock's own key for " + keys[0] + ")"
	}
	return obs, what
}

// observedNote is the outcome's observer line, with a warning when keys
// were acquired and never seen by the observers.
func (r *run) observedNote(observed string, observing bool, h history.History) string {
	if !observing {
		return observed
	}
	unseen := observe.UnseenKeys(h)
	if len(unseen) == 0 {
		return observed
	}
	r.log.Warn("the servers' observers saw no event on keys the clients acquired: does the lock use other key names (a prefix)? A client process declares its own with hello redis_key=PREFIX{key}",
		"scenario", r.plan.Scenario, "impl", r.cfg.Impl, "keys", unseen)
	return observed + "; WARNING: no key event on " + strings.Join(unseen, ",") +
		" though it was acquired: the lock's Redis key is not the harness's, so no release or extend was judged by the servers (declare it: lockimpl.Info.RedisKey, hello redis_key=)"
}
