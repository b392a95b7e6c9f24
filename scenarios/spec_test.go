package scenarios

import (
	"errors"
	"github.com/lockstorm/lockstorm/scenarios/spec"
	"strings"
	"testing"
)

const goodSpec = `name: t
duration: 1s
clients: 2
lock:
  ttl: 100ms
impls: [set-nx-px]
`

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
			_, err := spec.Parse("x.yaml", []byte(tc.text))
			var se *spec.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SpecError", err)
			}
			if se.File != "x.yaml" {
				t.Errorf("file = %q", se.File)
			}
			if tc.line > 0 && se.Line != tc.line {
				t.Errorf("line = %d, want %d (%v)", se.Line, tc.line, err)
			}
			if tc.field != "" && se.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", se.Field, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
}

func TestEmbeddedSpecsLoad(t *testing.T) {
	names := spec.Names()
	if len(names) == 0 {
		t.Fatal("no embedded scenarios")
	}
	for _, n := range names {
		s, err := spec.Load(n)
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
