package scenarios

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// A lock that counts Redis's milliseconds compiles to exactly the plan it
// did before time scales existed: no scale, and every time of the plan is
// the spec's own; every shipped scenario × every registered lock.
func TestCompileUnscaledForMillisecondLocks(t *testing.T) {
	for _, name := range spec.Names() {
		spec, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, impl := range lockimpl.Names() {
			info, _ := lockimpl.Lookup(impl)
			if info.Claims.WholeSeconds {
				continue
			}
			p, err := Compile(spec, Config{Impl: impl})
			if err != nil {
				continue // a lock that refuses the spec's options (its own test)
			}
			var text bytes.Buffer
			if err := p.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			js, _ := json.Marshal(p)
			// A fault the lock's topology leaves out (split-votes on one
			// master) is listed apart, unscaled like the rest.
			if p.TimeScale != nil || strings.Contains(text.String(), "timescale") ||
				strings.Contains(string(js), "time_scale") || p.Duration != spec.Duration ||
				p.Workload.CSMax != spec.Workload.CSMax || p.Workload.Think != spec.Think ||
				p.Network.Latency != spec.Network.Latency || p.ClientTimeout != spec.ClientTimeout ||
				len(p.Faults)+len(p.LeftOut) != len(spec.Faults) || len(p.Faults) > 0 && p.Faults[0].At != spec.Faults[0].At {
				t.Errorf("%s × %s: a millisecond lock's plan was scaled:\n%s", name, impl, text.String())
			}
		}
	}
}

// A whole-second lock's plan shows the scaled schedule: every time ×10 for
// a 300 ms TTL, the scale's line, and the run-time floors the runner adds.
func TestCompileScalesWholeSecondLock(t *testing.T) {
	spec, err := spec.Load("pause-past-ttl")
	if err != nil {
		t.Fatal(err)
	}
	info, err := lockimpl.Lookup("lua-getset")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(spec, Config{Impl: "whole", Info: &info})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := p.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"timescale    scaled ×10 for a lock with whole-second expiry (granularity 1s, scenario TTL 300ms)",
		"ttl 3s, retry 100ms, wait 30s", "20s", "fault {for: 8s, kind: pause", "deadlock bound 1m40s",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, text.String())
		}
	}
	if p.Scaled(300*time.Millisecond) != 3*time.Second || p.Workload.CSMax != 50*time.Millisecond ||
		p.Network.Latency != 10*time.Millisecond || p.Network.RoundTrip != 20*time.Millisecond ||
		p.Stop.EarlyStop != 6*time.Second || p.Workload.Backoff != time.Second/10 {
		t.Errorf("the plan's times are not scaled: %+v", p)
	}
	if spec.Duration != 2*time.Second || spec.Lock.TTL != 300*time.Millisecond {
		t.Errorf("compiling changed the loaded spec: %v, %v", spec.Duration, spec.Lock.TTL)
	}
}
