package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ClusterNode is one line of CLUSTER NODES.
type ClusterNode struct {
	ID, Addr string
	Flags    []string
	MasterID string // "-" for a master
	Linked   bool   // link-state connected
	Slots    []string
}

// Has says whether the node carries flag f (master, slave, fail, fail?,
// handshake, noaddr, myself).
func (n ClusterNode) Has(f string) bool {
	for _, x := range n.Flags {
		if x == f {
			return true
		}
	}
	return false
}

// Nodes is CLUSTER NODES as the server at addr sees the cluster.
func Nodes(addr string) ([]ClusterNode, error) {
	v, err := do(addr, adminTimeout, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", addr, err)
	}
	return parseNodes(v), nil
}

// Nodes is CLUSTER NODES as the server at c's address sees the cluster.
func (c *Conn) Nodes() ([]ClusterNode, error) {
	v, err := c.do("CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER NODES: %w", c.Addr, err)
	}
	return parseNodes(v), nil
}

// parseNodes reads the lines of a CLUSTER NODES reply.
func parseNodes(v any) []ClusterNode {
	text, _ := v.(string)
	var out []ClusterNode
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		out = append(out, ClusterNode{ID: f[0], Addr: f[1], Flags: strings.Split(f[2], ","), MasterID: f[3],
			Linked: f[7] == "connected", Slots: f[8:]})
	}
	return out
}

// Owner is the name of the master serving slot, as the first node that
// answers sees it (the harness's view, through no link).
func (c *RedisCluster) Owner(slot int) (string, error) {
	ns, err := c.anyView()
	if err != nil {
		return "", fmt.Errorf("owner of slot %d: %w", slot, err)
	}
	for _, n := range ns {
		if n.Has("master") && !n.Has("fail") && servesSlot(n.Slots, slot) {
			return c.Name(n.ID), nil
		}
	}
	return "", fmt.Errorf("owner of slot %d: no master serves it", slot)
}

// servesSlot reads CLUSTER NODES slot fields: "0-5460", "7", and
// "[7->-id]" or "[7-<-id]" (migrating, importing: not served).
func servesSlot(fields []string, slot int) bool {
	for _, f := range fields {
		if strings.HasPrefix(f, "[") {
			continue
		}
		lo, hi, ok := strings.Cut(f, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 == nil && err2 == nil && a <= slot && slot <= b {
			return true
		}
	}
	return false
}

// ReplicaOf is the replica of master name now, or name itself when it is a
// replica (as the first answering node sees the cluster).
func (c *RedisCluster) ReplicaOf(name string) (*Process, error) {
	ns, err := c.anyView()
	if err != nil {
		return nil, err
	}
	id := c.ID(name)
	for _, n := range ns {
		if n.ID == id && n.Has("slave") {
			return c.Node(name), nil
		}
	}
	for _, n := range ns {
		if n.MasterID == id && !n.Has("fail") {
			return c.Node(c.Name(n.ID)), nil
		}
	}
	return nil, fmt.Errorf("%s has no replica", name)
}

// ServingMasters are the masters serving slots now, by name.
func (c *RedisCluster) ServingMasters() ([]string, error) {
	ns, err := c.anyView()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range ns {
		if n.Has("master") && !n.Has("fail") && len(n.Slots) > 0 {
			out = append(out, c.Name(n.ID))
		}
	}
	return out, nil
}

// anyView is CLUSTER NODES of the first running node that answers.
func (c *RedisCluster) anyView() ([]ClusterNode, error) {
	var errs []error
	for _, p := range c.all() {
		if !p.Running() {
			continue
		}
		ns, err := Nodes(p.Addr)
		if err == nil {
			return ns, nil
		}
		errs = append(errs, err)
	}
	return nil, fmt.Errorf("no node answers: %w", errors.Join(errs...))
}

// KeySlot is the hash slot of key: CRC16 (XMODEM) of the key, or of its
// hash tag (the text between the first '{' and the next '}', if not
// empty), modulo 16384.
func KeySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

// ClusterState is cluster_state of CLUSTER INFO at addr: ok, or fail (the
// node refuses queries: a slot it knows is unserved under full coverage,
// or it is on the minority side past cluster-node-timeout).
func ClusterState(addr string) (string, error) {
	v, err := do(addr, adminTimeout, "CLUSTER", "INFO")
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	return clusterStateOf(addr, v)
}

// ClusterState is cluster_state from CLUSTER INFO at c's address.
func (c *Conn) ClusterState() (string, error) {
	v, err := c.do("CLUSTER", "INFO")
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER INFO: %w", c.Addr, err)
	}
	return clusterStateOf(c.Addr, v)
}

// clusterStateOf reads cluster_state from a CLUSTER INFO reply.
func clusterStateOf(addr string, v any) (string, error) {
	text, _ := v.(string)
	for _, line := range strings.Split(text, "\r\n") {
		if st, ok := strings.CutPrefix(line, "cluster_state:"); ok {
			return st, nil
		}
	}
	return "", fmt.Errorf("%s: CLUSTER INFO has no cluster_state", addr)
}
