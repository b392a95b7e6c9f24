package nemesis

import (
	"reflect"
	"testing"
)

// TestEveryKindDeclaresItsFields: a kind that declares no target field
// could never be aimed, so every registered kind declares what it reads.
func TestEveryKindDeclaresItsFields(t *testing.T) {
	for _, k := range Kinds() {
		u, ok := KindUses(k)
		if !ok || len(u.Fields) == 0 {
			t.Errorf("%s declares no fields", k)
		}
	}
}

// TestKindFieldsInOrder: what each kind reads, targets then its parameter
// struct's keys, in the order a refusal lists them ("it reads ...").
func TestKindFieldsInOrder(t *testing.T) {
	links := []string{"hosts", "clients", "nodes", "pick"}
	clients := []string{"hosts", "clients", "pick"}
	nodes := []string{"nodes", "pick"}
	with := func(base []string, keys ...string) []string { return append(append([]string(nil), base...), keys...) }
	want := map[string][]string{
		"bandwidth":        with(links, "rate", "stream"),
		"blackhole":        with(links, "stream"),
		"client-clock":     with(clients, "offset", "drift"),
		"cluster-failover": {"nodes", "mode", "key"},
		"cluster-migrate":  {"key"},
		"crash":            clients,
		"failover":         {"nodes"},
		"kill":             nodes,
		"kill-synced":      {"nodes"},
		"latency":          with(links, "latency", "jitter", "stream"),
		"lost-reply":       links,
		"partition":        with(links, "direction"),
		"pause":            clients,
		"reset":            with(links, "stream"),
		"server-clock":     with(nodes, "offset"),
		"server-pause":     nodes,
		"split-votes":      {"hosts", "nodes"},
	}
	for kind, fields := range want {
		u, ok := KindUses(kind)
		if !ok || !reflect.DeepEqual(u.Fields, fields) {
			t.Errorf("%s reads %v, want %v", kind, u.Fields, fields)
		}
	}
}
