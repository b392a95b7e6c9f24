package nemesis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Redis Cluster faults: a replica taking its master's slots on command,
// and a lock key's slot moving to another master. Both act through the
// harness's own connections to the nodes, not through any link.
func init() {
	Register("cluster-failover", "CLUSTER FAILOVER [FORCE|TAKEOVER] on the replica of each targeted master (default: the master serving the lock key's slot): the replica takes its slots", nodesOnly,
		func(s Spec, p *ClusterFailoverParams) (Fault, error) { return &clusterFailover{s, *p}, nil })
	Register("cluster-migrate", "move the slot of a lock key (key: its number) to the next master: for `for` the slot is half-moved (the source migrating, the target importing: ASK redirects), then its keys move (MIGRATE) and the slot is the target's", Uses{},
		func(s Spec, p *ClusterMigrateParams) (Fault, error) { return &clusterMigrate{s, *p}, nil })
}

// ClusterFailoverParams are cluster-failover's parameters.
type ClusterFailoverParams struct {
	// Mode is CLUSTER FAILOVER's option: default, force or takeover.
	Mode string `yaml:"mode"`
	// Key is the lock key (its number: 0 is the first) whose slot's master
	// fails over when no node is named.
	Key int `yaml:"key"`
}

// Validate checks the mode and the key.
func (p *ClusterFailoverParams) Validate() error {
	switch strings.ToLower(p.Mode) {
	case "", "default", "force", "takeover":
	default:
		return &FieldError{"mode", fmt.Sprintf("%q: want default, force or takeover", p.Mode)}
	}
	return checkKey(p.Key)
}

// Needs wants a Redis Cluster with replicas.
func (*ClusterFailoverParams) Needs(t Servers) string {
	if !t.Cluster {
		return needsCluster("cluster-failover")
	}
	if t.Replicas == 0 {
		return "cluster-failover promotes a replica: cluster.replicas is 0"
	}
	return ""
}

// ClusterMigrateParams are cluster-migrate's parameters.
type ClusterMigrateParams struct {
	// Key is the lock key (its number: 0 is the first) whose slot moves.
	Key int `yaml:"key"`
}

// Validate checks the key.
func (p *ClusterMigrateParams) Validate() error { return checkKey(p.Key) }

// Needs wants a Redis Cluster.
func (*ClusterMigrateParams) Needs(t Servers) string {
	if !t.Cluster {
		return needsCluster("cluster-migrate")
	}
	return ""
}

func needsCluster(kind string) string {
	return kind + " acts on a Redis Cluster: set cluster: {masters: 3}"
}

func checkKey(k int) error {
	if k < 0 {
		return &FieldError{"key", fmt.Sprintf("must not be negative, got %d", k)}
	}
	return nil
}

// errNoCluster refuses a cluster fault in a run without a Redis Cluster.
var errNoCluster = errors.New("the run has no Redis Cluster (set cluster: in the scenario)")

// keySlot is the slot of lock key k of env.
func keySlot(env *Env, k int) (int, error) {
	if k >= len(env.Keys) {
		return 0, fmt.Errorf("no lock key %d (keys: %d)", k, len(env.Keys))
	}
	return cluster.KeySlot(env.Keys[k]), nil
}

type clusterFailover struct {
	spec Spec
	p    ClusterFailoverParams
}

func (f *clusterFailover) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	rc := env.RedisCluster
	if rc == nil {
		return nil, Targets{}, fmt.Errorf("cluster-failover: %w", errNoCluster)
	}
	t := Targets{}
	masters := f.spec.Nodes
	if len(masters) == 0 {
		slot, err := keySlot(env, f.p.Key)
		if err != nil {
			return nil, Targets{}, fmt.Errorf("cluster-failover: %w", err)
		}
		owner, err := rc.Owner(slot)
		if err != nil {
			return nil, Targets{}, fmt.Errorf("cluster-failover: %w", err)
		}
		masters = []string{owner}
	}
	mode := strings.ToUpper(f.p.Mode)
	if mode == "DEFAULT" {
		mode = cluster.FailoverDefault
	}
	// A failover cannot be undone: one that fails half-way reports the
	// error, and the masters already failed over stay so.
	for _, m := range masters {
		rep, err := rc.ReplicaOf(m)
		if err != nil {
			return nil, Targets{}, fmt.Errorf("cluster-failover: %w", err)
		}
		if err := rc.Failover(rep, mode); err != nil {
			return nil, Targets{}, fmt.Errorf("cluster-failover: %w", err)
		}
		t.Nodes, t.Replicas = append(t.Nodes, m), append(t.Replicas, rep.Name)
	}
	return func() error { return nil }, t, nil
}

type clusterMigrate struct {
	spec Spec
	p    ClusterMigrateParams
}

// migrateLimit bounds the completion of a migration (a lock key or two).
const migrateLimit = 10 * time.Second

func (f *clusterMigrate) Inject(_ context.Context, env *Env) (Heal, Targets, error) {
	rc := env.RedisCluster
	if rc == nil {
		return nil, Targets{}, fmt.Errorf("cluster-migrate: %w", errNoCluster)
	}
	slot, err := keySlot(env, f.p.Key)
	if err != nil {
		return nil, Targets{}, fmt.Errorf("cluster-migrate: %w", err)
	}
	from, err := rc.Owner(slot)
	if err != nil {
		return nil, Targets{}, fmt.Errorf("cluster-migrate: %w", err)
	}
	to, err := nextMaster(rc, from)
	if err != nil {
		return nil, Targets{}, fmt.Errorf("cluster-migrate: %w", err)
	}
	m, err := rc.StartMigration(slot, from, to)
	if err != nil {
		return nil, Targets{}, fmt.Errorf("cluster-migrate: %w", err)
	}
	// Healing completes the move: the slot stays half-moved for the
	// fault's duration.
	heal := func() error {
		fctx, cancel := context.WithTimeout(context.Background(), migrateLimit)
		defer cancel()
		return m.Finish(fctx)
	}
	return heal, Targets{Nodes: []string{from, to}}, nil
}

// nextMaster is the master after from in name order (wrapping), among
// the masters serving slots now.
func nextMaster(rc *cluster.RedisCluster, from string) (string, error) {
	ms, err := rc.ServingMasters()
	if err != nil {
		return "", err
	}
	if len(ms) < 2 {
		return "", fmt.Errorf("%d master(s) serve slots: nowhere to move to", len(ms))
	}
	slices.Sort(ms)
	i := slices.Index(ms, from)
	return ms[(i+1)%len(ms)], nil
}
