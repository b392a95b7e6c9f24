package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Failover modes of CLUSTER FAILOVER.
const (
	FailoverDefault  = ""
	FailoverForce    = "FORCE"
	FailoverTakeover = "TAKEOVER"
)

// Failover sends CLUSTER FAILOVER [mode] to replica: the default waits
// until the replica has its master's every write (the master stops its
// clients meanwhile) and gets the masters' votes; FORCE skips the master's
// handshake (the replica may lack its last writes) but still needs the
// votes; TAKEOVER needs neither.
func (c *RedisCluster) Failover(replica *Process, mode string) error {
	args := []string{"CLUSTER", "FAILOVER"}
	if mode != FailoverDefault {
		args = append(args, mode)
	}
	if _, err := do(replica.Addr, adminTimeout, args...); err != nil {
		return fmt.Errorf("%s: %s: %w", replica.Name, strings.Join(args, " "), err)
	}
	return nil
}

// MigrateSlot moves slot from the master serving it to the master named
// to, as redis-cli --cluster reshard does (StartMigration, then after hold
// Finish). It returns the source's name.
func (c *RedisCluster) MigrateSlot(ctx context.Context, slot int, to string, hold time.Duration) (string, error) {
	from, err := c.Owner(slot)
	if err != nil {
		return "", err
	}
	m, err := c.StartMigration(slot, from, to)
	if err != nil {
		return from, err
	}
	select {
	case <-ctx.Done():
		return from, errors.Join(ctx.Err(), m.Finish(context.Background()))
	case <-time.After(hold):
	}
	return from, m.Finish(ctx)
}

// Migration is a slot half-moved: the target importing it, the source
// migrating it. Meanwhile the source serves the slot's keys it still has
// and redirects a command on a key it lacks to the target with ASK.
type Migration struct {
	c        *RedisCluster
	slot     int
	from, to string
}

// StartMigration starts moving slot from master from to master to.
func (c *RedisCluster) StartMigration(slot int, from, to string) (*Migration, error) {
	src, dst := c.Node(from), c.Node(to)
	if src == nil || dst == nil || from == to {
		return nil, fmt.Errorf("migrate slot %d from %s to %s: want two distinct nodes of the cluster", slot, from, to)
	}
	s := strconv.Itoa(slot)
	for _, st := range []struct {
		p    *Process
		args []string
	}{
		{dst, []string{"CLUSTER", "SETSLOT", s, "IMPORTING", c.ID(from)}},
		{src, []string{"CLUSTER", "SETSLOT", s, "MIGRATING", c.ID(to)}},
	} {
		if _, err := do(st.p.Addr, adminTimeout, st.args...); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", st.p.Name, strings.Join(st.args, " "), err)
		}
	}
	return &Migration{c: c, slot: slot, from: from, to: to}, nil
}

// Finish moves every key of the slot still on the source with MIGRATE,
// then tells both masters the slot is the target's. MIGRATE dials the
// target's own address: Redis does not bind that connection to
// bind-source-addr, so a router could not tell whose it is.
func (m *Migration) Finish(ctx context.Context) error {
	c, s := m.c, strconv.Itoa(m.slot)
	src, dst := c.Node(m.from), c.Node(m.to)
	host, port, _ := net.SplitHostPort(dst.Addr)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		v, err := do(src.Addr, adminTimeout, "CLUSTER", "GETKEYSINSLOT", s, "100")
		if err != nil {
			return fmt.Errorf("%s: GETKEYSINSLOT %d: %w", m.from, m.slot, err)
		}
		keys, _ := v.([]any)
		if len(keys) == 0 {
			break
		}
		args := []string{"MIGRATE", host, port, "", "0", "2000", "KEYS"}
		for _, k := range keys {
			args = append(args, fmt.Sprint(k))
		}
		if _, err := do(src.Addr, 3*time.Second, args...); err != nil {
			return fmt.Errorf("%s: MIGRATE to %s: %w", m.from, m.to, err)
		}
	}
	for _, p := range []*Process{dst, src} {
		if _, err := do(p.Addr, adminTimeout, "CLUSTER", "SETSLOT", s, "NODE", c.ID(m.to)); err != nil {
			return fmt.Errorf("%s: CLUSTER SETSLOT %d NODE %s: %w", p.Name, m.slot, m.to, err)
		}
	}
	return nil
}
