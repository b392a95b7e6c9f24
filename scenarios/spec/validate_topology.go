package spec

import (
	"fmt"
	"strconv"
	"time"
)

// checkTopology checks replicas, Sentinel and min_replicas, and fills in
// Sentinel's defaults.
func (v *validation) checkTopology() error {
	s := v.s
	if s.Replicas > 1 {
		return v.bad("replicas", "at most 1 replica per master")
	}
	if s.Duration == 0 {
		return v.bad("duration", "missing: every run needs a time bound")
	}
	if err := v.checkCluster(); err != nil {
		return err
	}
	if sn := s.Sentinel; sn != nil {
		if s.Replicas != 1 {
			return v.bad("sentinel", "needs replicas: 1 (Sentinel promotes a replica)")
		}
		if sn.Sentinels < 0 || sn.Quorum < 0 || sn.DownAfter < 0 || sn.FailoverTimeout < 0 {
			return v.bad("sentinel", "must not be negative")
		}
		if sn.Sentinels == 0 {
			sn.Sentinels = 3
		}
		if sn.Quorum == 0 {
			sn.Quorum = sn.Sentinels/2 + 1
		}
		if sn.Quorum > sn.Sentinels {
			return v.bad("sentinel.quorum", "%d is more than the %d sentinels", sn.Quorum, sn.Sentinels)
		}
		if sn.DownAfter == 0 {
			sn.DownAfter = 500 * time.Millisecond
		}
		if sn.FailoverTimeout == 0 {
			sn.FailoverTimeout = 2 * time.Second
		}
	}
	if m := s.MinReplicas; m != nil {
		if s.Replicas != 1 {
			return v.bad("min_replicas", "needs replicas: 1")
		}
		if m.ToWrite < 1 || m.ToWrite > s.Replicas {
			return v.bad("min_replicas.to_write", "want 1..%d (the replicas per master), got %d", s.Replicas, m.ToWrite)
		}
		if m.MaxLag < time.Second || m.MaxLag%time.Second != 0 {
			return v.bad("min_replicas.max_lag", "Redis counts it in whole seconds: want 1s, 2s, ..., got %v", m.MaxLag)
		}
	}
	return nil
}

// checkCluster checks the cluster block and fills in its defaults.
func (v *validation) checkCluster() error {
	s := v.s
	c := s.Cluster
	if c == nil {
		return nil
	}
	for _, f := range []string{"replicas", "sentinel", "min_replicas", "nodes"} {
		if s.doc.has(f) {
			return v.bad(f, "not with cluster: the cluster block sets the topology (cluster.replicas), and a lock on a cluster sees one node")
		}
	}
	if c.Masters == 0 {
		c.Masters = 3
	}
	if c.Masters < 3 || c.Masters > 16 {
		return v.bad("cluster.masters", "want 3..16 (a failover needs the votes of a majority of the masters), got %d", c.Masters)
	}
	if r := c.ReplicasPer(); r < 0 || r > 1 {
		return v.bad("cluster.replicas", "want 0 or 1 replica per master, got %d", r)
	}
	if c.NodeTimeout == 0 {
		c.NodeTimeout = time.Second
	}
	if c.NodeTimeout < 100*time.Millisecond || c.NodeTimeout%time.Millisecond != 0 {
		return v.bad("cluster.node_timeout", "want whole milliseconds, at least 100ms, got %v", c.NodeTimeout)
	}
	return nil
}

// clusterTargetMsg checks, in the cluster topology, a fault target that
// names a cluster node: masters n1..nM, replicas r1..rM (as servers, and
// as hosts: their links to the other nodes). "" when t is fine, ok false
// when t is not a cluster node's name at all.
func (s *Spec) clusterTargetMsg(t string) (msg string, ok bool) {
	c := s.Cluster
	if c == nil || len(t) < 2 || (t[0] != 'n' && t[0] != 'r') {
		return "", false
	}
	k, err := strconv.Atoi(t[1:])
	switch {
	case err != nil || k < 1:
		return fmt.Sprintf("%q: want a cluster node n1..n%d or r1..r%d", t, c.Masters, c.Masters), true
	case t[0] == 'r' && c.ReplicasPer() == 0:
		return fmt.Sprintf("no replica %s: cluster.replicas is 0", t), true
	case k > c.Masters:
		return fmt.Sprintf("no cluster node %s (cluster.masters: %d)", t, c.Masters), true
	}
	return "", true
}

// hostMsg checks a host name: h1..hN for client hosts, r1..rM for the
// replication links when the spec has replicas (nodes -1: not known yet).
func (s *Spec) hostMsg(h string, nodes int) string {
	if msg, ok := s.clusterTargetMsg(h); ok {
		return msg
	}
	if msg := s.sentinelTargetMsg(h, 's', 'n'); msg != "" || (s.Sentinel != nil && len(h) > 1 && (h[0] == 's' || h[0] == 'n')) {
		return msg
	}
	if len(h) < 2 || (h[0] != 'h' && h[0] != 'r') {
		return fmt.Sprintf("%q: want a client host h1..h%d%s", h, s.hostCount(), s.replicaHint())
	}
	k, err := strconv.Atoi(h[1:])
	if err != nil || k < 1 {
		return fmt.Sprintf("%q: want a client host h1..h%d%s", h, s.hostCount(), s.replicaHint())
	}
	if h[0] == 'h' && k > s.hostCount() {
		return fmt.Sprintf("no host %s (hosts: %d)", h, s.hostCount())
	}
	if h[0] == 'r' {
		if s.Replicas == 0 {
			return fmt.Sprintf("no replication link %s: the scenario has no replicas", h)
		}
		if nodes >= 0 && k > nodes {
			return fmt.Sprintf("no replication link %s (%d nodes)", h, nodes)
		}
	}
	return ""
}

// sentinelTargetMsg checks, in the Sentinel topology, a target that names
// one of its extra processes: Sentinels s1..sK (as hosts and as servers),
// replicas r1.. as servers, masters n1.. as hosts (a demoted master
// replicates). "" when t is fine or not of those kinds.
func (s *Spec) sentinelTargetMsg(t string, kinds ...byte) string {
	if s.Sentinel == nil || len(t) < 2 {
		return ""
	}
	for _, k := range kinds {
		if t[0] != k {
			continue
		}
		n, err := strconv.Atoi(t[1:])
		if err != nil || n < 1 {
			return fmt.Sprintf("%q: want %c1, %c2, ...", t, k, k)
		}
		if k == 's' && n > s.Sentinel.Sentinels {
			return fmt.Sprintf("no Sentinel %s (sentinels: %d)", t, s.Sentinel.Sentinels)
		}
	}
	return ""
}

func (s *Spec) replicaHint() string {
	if s.Replicas > 0 {
		return " or a replication link r1.."
	}
	return ""
}

// nodeNumber parses n1, n2, ...
func nodeNumber(n string) (int, error) {
	if len(n) < 2 || n[0] != 'n' {
		return 0, fmt.Errorf("%q: want a node n1, n2, ...", n)
	}
	k, err := strconv.Atoi(n[1:])
	if err != nil || k < 1 {
		return 0, fmt.Errorf("%q: want a node n1, n2, ...", n)
	}
	return k, nil
}
