package scenarios

import (
	"reflect"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// A spec loaded for a lock given in code may name it, its variants and its
// failpoints; the same spec loaded without it is refused at the first name.
func TestSpecNamesALockGivenInCode(t *testing.T) {
	text := []byte(`name: mine
duration: 1s
clients: 2
lock: {ttl: 100ms}
failpoints:
  - {client: 0, point: my-lock/after-set, sleep: 1ms}
variants:
  my-lock-long: {impl: my-lock, ttl: 1s}
impls: [my-lock, my-lock-long]
expected:
  # the reason beside it
  my-lock: safe
  my-lock-long: unsafe
`)
	base, err := lockimpl.Lookup("set-nx-px")
	if err != nil {
		t.Fatal(err)
	}
	mine := lockimpl.Info{Name: "my-lock", New: base.New, Points: []string{"my-lock/after-set"}}
	if _, err := spec.Parse("mine.yaml", text); err == nil || !strings.Contains(err.Error(), `unknown`) {
		t.Fatalf("without the lock: err = %v, want it refused", err)
	}
	s, err := spec.ParseFor("mine.yaml", text, spec.DefaultLimits(), mine)
	if err != nil {
		t.Fatal(err)
	}
	name, info, o, err := Config{Impl: "my-lock-long", Info: &mine}.resolve(s)
	if err != nil || name != "my-lock-long" || info.Name != "my-lock" || o.TTL != 1e9 {
		t.Errorf("variant: %s %s ttl %v err %v; want my-lock-long running my-lock with ttl 1s", name, info.Name, o.TTL, err)
	}
	for impl, want := range map[string]spec.Expectation{
		"my-lock":      {Verdict: "safe", Reason: "the reason beside it", Source: spec.FromSpec},
		"my-lock-long": {Verdict: "unsafe", Source: spec.FromSpec},
	} {
		if got := (Config{Impl: impl, Info: &mine}).expectation(s, impl, lockimpl.Claims{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: expectation %+v, want %+v", impl, got, want)
		}
	}
	plain, err := spec.Load("contention")
	if err != nil {
		t.Fatal(err)
	}
	if got := (Config{Info: &mine}).expectation(plain, "my-lock", lockimpl.Claims{}); !reflect.DeepEqual(got, spec.Expectation{}) {
		t.Errorf("a spec not loaded for the lock: expectation %+v, want none", got)
	}
}
