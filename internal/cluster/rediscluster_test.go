package cluster

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestKeySlot holds KeySlot to the CRC16 check value and to hash tags'
// rules (a tag hashes alone; an empty tag does not count); TestFormCluster
// compares it with the server's own CLUSTER KEYSLOT.
func TestKeySlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3}, // CRC16/XMODEM's check value
		{"{123456789}.a", 0x31C3},
		{"x{123456789}", 0x31C3},
	} {
		if got := KeySlot(tc.key); got != tc.want {
			t.Errorf("KeySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if KeySlot("a{}b") == KeySlot("") || KeySlot("{a}x") != KeySlot("{a}y") {
		t.Error("hash tags: an empty tag must not count, a tag must hash alone")
	}
}

// startCluster forms a cluster of masters with one replica each on real
// servers (their own addresses announced) and stops it when the test ends.
func startCluster(t *testing.T, masters int) (*Servers, *RedisCluster) {
	t.Helper()
	s := StartForTestWith(t, Options{Nodes: masters, Cluster: &ClusterOptions{NodeTimeout: 500 * time.Millisecond}})
	ctx := context.Background()
	reps, err := s.AddClusterReplicas(ctx, masters)
	if err != nil {
		t.Fatal(err)
	}
	c, err := FormCluster(ctx, s.Procs(), reps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// TestFormCluster: the formed cluster serves every slot, each key from the
// master its slot belongs to (another master redirects with MOVED), and a
// killed master's replica takes its slots over by itself.
func TestFormCluster(t *testing.T) {
	_, c := startCluster(t, 3)
	for _, k := range []string{"lock:0", "lock:1", "foo", "{user1000}.following", "a{}b", "123456789"} {
		v, err := do(c.Node("n1").Addr, adminTimeout, "CLUSTER", "KEYSLOT", k)
		if err != nil || v != int64(KeySlot(k)) {
			t.Errorf("CLUSTER KEYSLOT %s = %v (%v), KeySlot %d", k, v, err, KeySlot(k))
		}
	}
	slot := KeySlot("lock:0")
	owner, err := c.Owner(slot)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"n1", "n2", "n3"}[slot*3/Slots]; owner != want {
		t.Fatalf("lock:0 (slot %d) served by %s, want %s", slot, owner, want)
	}
	other := map[string]string{"n1": "n2", "n2": "n3", "n3": "n1"}[owner]
	if _, err := do(c.Node(owner).Addr, adminTimeout, "SET", "lock:0", "x"); err != nil {
		t.Fatalf("SET on its master: %v", err)
	}
	if _, err := do(c.Node(other).Addr, adminTimeout, "SET", "lock:0", "x"); err == nil || !strings.Contains(err.Error(), "MOVED") {
		t.Fatalf("SET on another master: %v, want MOVED", err)
	}
	if err := c.Node(owner).Stop(); err != nil {
		t.Fatal(err)
	}
	want := "r" + owner[1:]
	deadline := time.Now().Add(10 * time.Second)
	for owner != want {
		if time.Now().After(deadline) {
			t.Fatalf("slot %d still served by %s 10 s after the kill, want %s", slot, owner, want)
		}
		time.Sleep(50 * time.Millisecond)
		owner, _ = c.Owner(slot)
	}
}

// TestMigrateSlot: a key moves with its slot (value and TTL), and the
// source then redirects it to the target.
func TestMigrateSlot(t *testing.T) {
	_, c := startCluster(t, 2)
	slot := KeySlot("lock:0")
	from, _ := c.Owner(slot)
	to := map[string]string{"n1": "n2", "n2": "n1"}[from]
	if _, err := do(c.Node(from).Addr, adminTimeout, "SET", "lock:0", "tok", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	if got, err := c.MigrateSlot(context.Background(), slot, to, 10*time.Millisecond); err != nil || got != from {
		t.Fatalf("MigrateSlot: from %s, %v", got, err)
	}
	v, err := do(c.Node(to).Addr, adminTimeout, "GET", "lock:0")
	if err != nil || v != "tok" {
		t.Fatalf("GET on %s after the move: %v, %v", to, v, err)
	}
	if ttl, _ := do(c.Node(to).Addr, adminTimeout, "PTTL", "lock:0"); ttl.(int64) <= 0 {
		t.Fatalf("PTTL after the move: %v, want the TTL kept", ttl)
	}
	if _, err := do(c.Node(from).Addr, adminTimeout, "GET", "lock:0"); err == nil || !strings.Contains(err.Error(), "MOVED") {
		t.Fatalf("GET on %s after the move: %v, want MOVED", from, err)
	}
}

// TestFormClusterRefusesPlainServers: servers started without
// Options.Cluster cannot be given cluster replicas.
func TestFormClusterRefusesPlainServers(t *testing.T) {
	s := StartForTest(t, 1)
	if _, err := s.AddClusterReplicas(context.Background(), 1); err == nil {
		t.Fatal("AddClusterReplicas on plain servers: no error")
	}
	if _, err := FormCluster(context.Background(), nil, nil, nil); err == nil {
		t.Fatal("FormCluster without masters: no error")
	}
}

// TestServesSlot reads CLUSTER NODES slot fields: ranges and single slots
// are served; a slot being migrated or imported ([7->-id], [7-<-id]) is
// listed apart and not counted.
func TestServesSlot(t *testing.T) {
	for _, tc := range []struct {
		fields []string
		slot   int
		want   bool
	}{
		{[]string{"0-5460"}, 0, true},
		{[]string{"0-5460"}, 5460, true},
		{[]string{"0-5460"}, 5461, false},
		{[]string{"7", "100-200"}, 7, true},
		{[]string{"7", "100-200"}, 8, false},
		{[]string{"0-6", "8-10", "[7->-abc]"}, 7, false},
		{nil, 7, false},
	} {
		if got := servesSlot(tc.fields, tc.slot); got != tc.want {
			t.Errorf("servesSlot(%v, %d) = %v, want %v", tc.fields, tc.slot, got, tc.want)
		}
	}
}
