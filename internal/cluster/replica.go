package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/internal/resp"
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
	p, err := s.newReplica()
	if err != nil {
		return nil, err
	}
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

// newReplica prepares (does not start) the next replica, r1, r2, ..., and
// registers it before it starts, so that Close stops it whatever happens.
func (s *Servers) newReplica() (*Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("add replica: cluster closed")
	}
	p, err := s.newProcess(fmt.Sprintf("r%d", len(s.replicas)+1))
	if err != nil {
		return nil, err
	}
	s.replicas = append(s.replicas, p)
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
	info, err := infoFields(p.Addr, "replication")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.Name, err)
	}
	return info, nil
}

// infoFields returns the key:value fields of INFO section on the server at
// addr (the one parser of INFO replies in the package).
func infoFields(addr, section string) (map[string]string, error) {
	v, err := do(addr, adminTimeout, "INFO", section)
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	text, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("INFO %s: unexpected reply %T", section, v)
	}
	out := map[string]string{}
	for _, line := range strings.Split(text, "\r\n") {
		if k, val, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(k, "#") {
			out[k] = val
		}
	}
	return out, nil
}

// infoInt is the integer field key of INFO section on the server at addr.
func infoInt(addr, section, key string) (int64, error) {
	info, err := infoFields(addr, section)
	if err != nil {
		return 0, err
	}
	v, ok := info[key]
	if !ok {
		return 0, fmt.Errorf("INFO %s has no %s", section, key)
	}
	return strconv.ParseInt(v, 10, 64)
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

// WaitOnline waits until the replica's link is up (WaitLinkUp) and a write
// on the master at masterAddr is acknowledged by every replica the master
// lists, or ctx ends. The link being up is not enough for a lock that
// WAITs: after a diskless sync (Redis 7's default) the master lists the
// replica as online but streams writes to it, and counts it for WAIT, only
// from the replica's first REPLCONF ACK, which may come a second later. A
// run that started in between saw every WAIT time out for up to a second:
// the lock refused, through no fault of its own. The probe is a key of the
// harness's own (ProbeKey) that expires at once.
func (p *Process) WaitOnline(ctx context.Context, masterAddr string) error {
	return p.waitOnline(ctx, masterAddr, ProbeKey)
}

// waitOnline is WaitOnline writing probe, a key the master serves (in a
// Redis Cluster, a key of one of its slots: any other is refused with MOVED).
func (p *Process) waitOnline(ctx context.Context, masterAddr, probe string) error {
	if err := p.WaitLinkUp(ctx); err != nil {
		return err
	}
	var last error
	for {
		err := probeReplicas(masterAddr, probe)
		if err == nil {
			return nil
		}
		last = err
		p.nudgeAck()
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s to acknowledge writes: %w (last: %v)", p.Name, ctx.Err(), last)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// nudgeAck asks the replica to send its master a REPLCONF ACK now, as the
// master's own REPLCONF GETACK does: the first ACK the master counts may
// otherwise wait for the replica's once-a-second cron (an ACK that arrives
// while the master still finishes the sync is ignored). Redis sends no
// reply to GETACK, so nothing is read.
func (p *Process) nudgeAck() {
	c, err := net.DialTimeout("tcp", p.Addr, adminTimeout)
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(adminTimeout))
	_ = resp.Write(c, "REPLCONF", "GETACK", "*")
	// A PING behind it: its reply says the GETACK was executed.
	_ = resp.Write(c, "PING")
	_, _ = resp.Read(bufio.NewReader(c))
}

// ProbeKey is the key WaitOnline writes on a master to see its replicas
// acknowledge; it expires after a second.
const ProbeKey = "lockstorm:replication-probe"

// probeReplicas writes key on the master at addr and WAITs for every
// replica it lists; nil when all acknowledged within 200 ms.
func probeReplicas(addr, key string) error {
	want, err := listedReplicas(addr)
	if err != nil {
		return err
	}
	c, err := net.DialTimeout("tcp", addr, adminTimeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(adminTimeout))
	r := bufio.NewReader(c)
	// WAIT counts acknowledgements of this connection's own writes, so
	// both go on one connection.
	for _, args := range [][]string{{"SET", key, "1", "PX", "1000"}, {"WAIT", fmt.Sprint(want), "200"}} {
		if err := resp.Write(c, args...); err != nil {
			return err
		}
		v, err := resp.Read(r)
		if err != nil {
			return err
		}
		if e, ok := v.(resp.Error); ok {
			return fmt.Errorf("%s: %s: %w", addr, args[0], e)
		}
		if n, ok := v.(int64); ok && n < int64(want) {
			return fmt.Errorf("%s: %d of %d replicas acknowledged a write", addr, n, want)
		}
	}
	return nil
}

// listedReplicas is how many replicas the master at addr lists (in any
// state).
func listedReplicas(addr string) (int, error) {
	info, err := infoFields(addr, "replication")
	if err != nil {
		return 0, fmt.Errorf("%s: %w", addr, err)
	}
	n := 0
	for k := range info {
		if isReplicaLine(k) {
			n++
		}
	}
	return n, nil
}

// isReplicaLine: slave0, slave1, ... (not slave_repl_offset and the like).
func isReplicaLine(k string) bool {
	n, ok := strings.CutPrefix(k, "slave")
	return ok && n != "" && strings.Trim(n, "0123456789") == ""
}

// CatchUp stops the master at masterAddr from accepting writes (CLIENT
// PAUSE WRITE, for pause at most; replication and reads go on) and waits
// until the replica has applied everything the master had written, or ctx
// ends. A kill that follows then loses nothing the replica lacked: without
// it, whether the replica holds a write the master acknowledged an instant
// before a kill depends on scheduling (Redis writes a command's reply
// before it feeds the replication stream, and the master may be descheduled
// in between). On error the writes are unpaused.
func (p *Process) CatchUp(ctx context.Context, masterAddr string, pause time.Duration) error {
	ms := fmt.Sprint(pause.Milliseconds())
	if _, err := do(masterAddr, adminTimeout, "CLIENT", "PAUSE", ms, "WRITE"); err != nil {
		return fmt.Errorf("%s: CLIENT PAUSE: %w", masterAddr, err)
	}
	err := p.waitOffset(ctx, masterAddr)
	if err != nil {
		_, _ = do(masterAddr, adminTimeout, "CLIENT", "UNPAUSE")
	}
	return err
}

// waitOffset waits until the replica's applied offset reaches the master's.
func (p *Process) waitOffset(ctx context.Context, masterAddr string) error {
	want, err := infoInt(masterAddr, "replication", "master_repl_offset")
	if err != nil {
		return fmt.Errorf("%s: %w", masterAddr, err)
	}
	var got int64
	for {
		info, err := p.ReplicationInfo()
		if err == nil {
			got, err = strconv.ParseInt(info["slave_repl_offset"], 10, 64)
		}
		if err == nil && got >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s at offset %d, its master at %d: %w", p.Name, got, want, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
