package spec

import (
	"errors"
	"strings"
	"testing"

	_ "github.com/lockstorm/lockstorm/lockimpl/exec" // exec variants' client programs
)

const goodSpec = `name: t
duration: 1s
clients: 2
lock:
  ttl: 100ms
impls: [set-nx-px]
`

// refusal parses text as x.yaml, which must be refused with a *SpecError.
func refusal(t *testing.T, text string) *SpecError {
	t.Helper()
	_, err := Parse("x.yaml", []byte(text))
	var se *SpecError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *SpecError", err)
	}
	return se
}

func TestParseRejectsBadSpecs(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		line       int
		field, msg string
	}{
		{"unknown field", goodSpec + "colour: blue\n", 7, "colour", "unknown field"},
		{"unknown nested field", "name: t\nduration: 1s\nlock:\n  tll: 1s\n", 4, "lock.tll", "unknown field (did you mean ttl?)"},
		{"unknown impl", strings.Replace(goodSpec, "[set-nx-px]", "[set-nx-px, zookeeper]", 1), 6, "impls.1", "unknown implementation"},
		{"negative duration", strings.Replace(goodSpec, "ttl: 100ms", "ttl: -100ms", 1), 5, "lock.ttl", "must not be negative"},
		{"syntax error", goodSpec + "faults: [\n", 0, "", ""},
		{"missing duration", "name: t\nclients: 1\n", 0, "duration", "missing"},
		{"bad expected verdict", goodSpec + "expected:\n  set-nx-px: fine\n", 8, "expected.set-nx-px", "verdict \"fine\": want safe, unsafe"},
		{"bad fault", goodSpec + "faults:\n  - {at: 1s, kind: meteor}\n", 8, "faults.0.kind", "\"meteor\": want bandwidth"},
		{"explore without actions", goodSpec + "explore: {rate: 0.1}\n", 7, "explore.actions", "missing"},
		{"explore unknown action", goodSpec + "explore:\n  actions: [crash, explode]\n  rate: 0.1\n", 8, "explore.actions.1", "want crash, pause"},
		{"explore rate above 1", goodSpec + "explore:\n  actions: [crash]\n  rate: 2\n", 9, "explore.rate", "probability"},
		{"explore during an unknown call", goodSpec + "explore:\n  actions: [pause]\n  rate: 0.1\n  during: [release, cs]\n", 10, "explore.during.1", "want acquire, release or extend"},
		{"lost reply at a step", goodSpec + "failpoints:\n  - {client: 0, point: set-nx-px/before-set, lose_reply: true}\n", 8, "failpoints.0.lose_reply", "only at a command's after point"},
		{"failpoint client out of range", goodSpec + "failpoints:\n  - {client: 5, point: set-nx-px/before-set, sleep: 1s}\n", 8, "failpoints.0.client", "no client 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := refusal(t, tc.text)
			if err.File != "x.yaml" {
				t.Errorf("file = %q", err.File)
			}
			if tc.line > 0 && err.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", err.Line, tc.line, err)
			}
			if tc.field != "" && err.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", err.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

func TestEmbeddedSpecsLoad(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no embedded scenarios")
	}
	for _, n := range names {
		s, err := Load(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if s.Name != n {
			t.Errorf("%s: name field is %q", n, s.Name)
		}
		for _, impl := range s.Impls {
			if s.Expect(impl) == "" {
				t.Errorf("%s: no expected verdict for %s", n, impl)
			}
		}
	}
}

// TestClusterSpecRefused: a cluster spec's mistakes are refused at load
// with the file, line and field.
func TestClusterSpecRefused(t *testing.T) {
	const base = "name: t\nduration: 2s\nclients: 2\n"
	for _, tc := range []struct {
		name, text string
		line       int
		field, msg string
	}{
		{"two masters", base + "cluster: {masters: 2}\n", 4, "cluster.masters", "want 3..16"},
		{"two replicas", base + "cluster: {replicas: 2}\n", 4, "cluster.replicas", "0 or 1"},
		{"coarse timeout", base + "cluster: {node_timeout: 50ms}\n", 4, "cluster.node_timeout", "at least 100ms"},
		{"with sentinel", base + "replicas: 1\ncluster: {masters: 3}\n", 4, "replicas", "not with cluster"},
		{"with nodes", base + "nodes: 3\ncluster: {masters: 3}\n", 4, "nodes", "not with cluster"},
		{"no such node", base + "cluster: {masters: 3}\nfaults:\n  - {at: 1s, kind: kill, nodes: [n4]}\n", 6, "faults.0.nodes.0", "no cluster node n4"},
		{"no such replica host", base + "cluster: {masters: 3, replicas: 0}\nfaults:\n  - {at: 1s, kind: partition, hosts: [r1], nodes: [n1]}\n", 6, "faults.0.hosts.0", "cluster.replicas is 0"},
		{"cluster fault without a cluster", base + "faults:\n  - {at: 1s, kind: cluster-migrate}\n", 5, "faults.0.kind", "acts on a Redis Cluster"},
		{"sentinel failover in a cluster", base + "cluster: {masters: 3}\nfaults:\n  - {at: 1s, kind: failover, nodes: [n1]}\n", 6, "faults.0.kind", "cluster-failover"},
		{"bad failover mode", base + "cluster: {masters: 3}\nfaults:\n  - {at: 1s, kind: cluster-failover, mode: gently}\n", 6, "faults.0.mode", "want default, force or takeover"},
		{"quorum lock", base + "cluster: {masters: 3}\nimpls: [redlock]\n", 5, "impls", "single-instance locks only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			se := refusal(t, tc.text)
			if se.File != "x.yaml" || se.Line != tc.line || se.Field != tc.field || !strings.Contains(se.Error(), tc.msg) {
				t.Errorf("got %v (line %d, field %q), want line %d, field %q, %q", se, se.Line, se.Field, tc.line, tc.field, tc.msg)
			}
		})
	}
}

// A program that runs but does not speak the protocol is refused at load,
// at the variant's exec line, when it may start.
func TestExecVariantNoHello(t *testing.T) {
	allowed := DefaultLimits()
	allowed.AllowExec = true
	_, err := ParseWith("exec.yaml", []byte(`name: m
duration: 1s
clients: 2
impls: [v]
variants:
  v:
    exec: [/bin/true]
`), allowed)
	var se *SpecError
	if !errors.As(err, &se) || se.Line != 7 || se.Field != "variants.v.exec" || !strings.Contains(se.Msg, "hello") {
		t.Fatalf("err = %v; want exec.yaml:7: variants.v.exec: ... no hello reply", err)
	}
}
