package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// adminTimeout bounds one admin command (REPLICAOF, INFO) to a server.
const adminTimeout = 2 * time.Second

// AddReplica starts one more redis-server (named r1, r2, ...; same options
// as the nodes, its own directory and free port) and makes it a replica of
// masterAddr. masterAddr is whatever the replica should dial, typically a
// node's Addr or a toxiproxy listening in front of it, so that the
// replication link can be delayed or cut independently of client traffic.
// It returns once the replica answers and has been told to replicate; use
// WaitLinkUp to wait for the initial sync. Replicas are not Nodes (clients
// do not lock on them); Close stops them with the rest.
func (s *Servers) AddReplica(ctx context.Context, masterAddr string) (*Process, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("add replica: cluster closed")
	}
	p, err := s.newProcess(fmt.Sprintf("r%d", len(s.replicas)+1))
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	// Registered before it starts, so that Close stops it whatever happens.
	s.replicas = append(s.replicas, p)
	s.mu.Unlock()
	if err := p.startOnFreePort(ctx); err != nil {
		return nil, err
	}
	if err := p.ReplicaOf(masterAddr); err != nil {
		p.Stop()
		return nil, err
	}
	s.log.Debug("redis-server replica started", "node", p.Name, "addr", p.Addr, "master", masterAddr, "pid", p.Pid())
	return p, nil
}

// Replicas lists the replicas added with AddReplica, in order.
func (s *Servers) Replicas() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.replicas...)
}

// ReplicaOf makes the server replicate from addr (REPLICAOF host port); it
// drops its own data at the first sync. addr may be a proxy.
func (p *Process) ReplicaOf(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%s: replica of %q: %w", p.Name, addr, err)
	}
	if _, err := do(p.Addr, adminTimeout, "REPLICAOF", host, port); err != nil {
		return fmt.Errorf("%s: REPLICAOF %s: %w", p.Name, addr, err)
	}
	return nil
}

// Promote turns a replica into a master (REPLICAOF NO ONE), as a failover
// does; it keeps the data it had replicated, which may lag the old master.
func (p *Process) Promote() error {
	if _, err := do(p.Addr, adminTimeout, "REPLICAOF", "NO", "ONE"); err != nil {
		return fmt.Errorf("%s: promote: %w", p.Name, err)
	}
	return nil
}

// ReplicationInfo returns the fields of INFO replication (role,
// master_link_status, master_repl_offset, ...).
func (p *Process) ReplicationInfo() (map[string]string, error) {
	v, err := do(p.Addr, adminTimeout, "INFO", "replication")
	if err != nil {
		return nil, fmt.Errorf("%s: INFO replication: %w", p.Name, err)
	}
	text, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("%s: INFO replication: unexpected reply %T", p.Name, v)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = val
		}
	}
	return out, nil
}

// WaitLinkUp waits until the replica reports master_link_status:up, i.e.
// its initial sync is done and it streams the master's writes, or ctx ends.
func (p *Process) WaitLinkUp(ctx context.Context) error {
	var last error
	for {
		info, err := p.ReplicationInfo()
		switch {
		case err != nil:
			last = err
		case info["role"] != "slave":
			last = fmt.Errorf("%s: role %q, not a replica", p.Name, info["role"])
		case info["master_link_status"] == "up":
			return nil
		default:
			last = fmt.Errorf("%s: master_link_status %q", p.Name, info["master_link_status"])
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for replication link: %w (last: %v)", ctx.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
