package scenarios

import (
	"bytes"
	"encoding/json"
	"github.com/lockstorm/lockstorm/scenarios/spec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
)

func TestFitTimeScale(t *testing.T) {
	for _, tc := range []struct {
		gran, ttl time.Duration
		factor    float64 // 0: not scaled
	}{
		{gran: time.Millisecond, ttl: time.Millisecond},       // Redis's own unit: never scaled
		{gran: time.Millisecond, ttl: 300 * time.Millisecond}, // the battery's usual
		{gran: time.Second, ttl: 0},                           // the lock's default TTL
		{gran: time.Second, ttl: 3 * time.Second},             // already three units
		{gran: time.Second, ttl: 20 * time.Second},
		{gran: time.Second, ttl: 300 * time.Millisecond, factor: 10},
		{gran: time.Second, ttl: 400 * time.Millisecond, factor: 7.5},
		{gran: time.Second, ttl: time.Second, factor: 3},
		{gran: 10 * time.Second, ttl: 3 * time.Second, factor: 10},
	} {
		ts := spec.FitTimeScale(tc.gran, tc.ttl)
		if tc.factor == 0 {
			if ts != nil {
				t.Errorf("FitTimeScale(%v, %v) = %s; want none", tc.gran, tc.ttl, ts)
			}
			continue
		}
		if ts == nil || ts.Factor != tc.factor {
			t.Errorf("FitTimeScale(%v, %v) = %v; want ×%v", tc.gran, tc.ttl, ts, tc.factor)
			continue
		}
		// The scaled TTL is a whole number of the lock's units.
		if got := ts.Of(tc.ttl); got != 3*tc.gran {
			t.Errorf("FitTimeScale(%v, %v): TTL scales to %v; want %v", tc.gran, tc.ttl, got, 3*tc.gran)
		}
	}
}

// durations lists every time.Duration reachable from v by its path, as
// scaleTimes finds them, so a test can compare two specs field by field.
func durations(v reflect.Value, path string, out map[string]time.Duration) {
	if v.Type() == reflect.TypeOf(time.Duration(0)) {
		out[path] = time.Duration(v.Int())
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				durations(v.Field(i), path+"."+v.Type().Field(i).Name, out)
			}
		}
	case reflect.Pointer:
		if !v.IsNil() {
			durations(v.Elem(), path, out)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			durations(v.Index(i), path+"["+strconv.Itoa(i)+"]", out)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			durations(it.Value(), path+"["+reflect.ValueOf(it.Key().Interface()).String()+"]", out)
		}
	}
}

// Every time of a spec is multiplied by the one factor, through pointers,
// slices and maps, and the spec scaled from is left as it was.
func TestSpecScaledEveryTime(t *testing.T) {
	for _, name := range []string{"getset-overwrite", "pause-past-ttl", "combined-faults", "sentinel-partition-min-replicas", "lua-unlock-stall"} {
		spec, err := spec.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]time.Duration{}
		durations(reflect.ValueOf(spec).Elem(), "", before)
		ts := &checker.TimeScale{Factor: 10, Granularity: time.Second, TTL: spec.Lock.TTL}
		scaled, err := spec.Scaled(ts)
		if err != nil {
			t.Fatal(err)
		}
		after := map[string]time.Duration{}
		durations(reflect.ValueOf(scaled).Elem(), "", after)
		again := map[string]time.Duration{}
		durations(reflect.ValueOf(spec).Elem(), "", again)
		if !reflect.DeepEqual(before, again) {
			t.Errorf("%s: scaling changed the original spec: %v, now %v", name, before, again)
		}
		nonzero := 0
		for path, d := range before {
			want := 10 * d
			if path == ".DeadlockBound" && d == 0 {
				want = 10 * checker.DefaultDeadlockBound
			}
			if after[path] != want {
				t.Errorf("%s: %s = %v scaled to %v; want %v", name, path, d, after[path], want)
			}
			if d != 0 {
				nonzero++
			}
		}
		if nonzero < 5 {
			t.Errorf("%s: only %d times found in the spec: the walk misses fields", name, nonzero)
		}
		if scaled.Clients != spec.Clients || len(scaled.Failpoints) != len(spec.Failpoints) || scaled.Name != spec.Name {
			t.Errorf("%s: scaling changed more than times", name)
		}
	}
}

// A spec that scaling would push past the duration limit is refused, with
// the scale in the message.
func TestSpecScaledLimits(t *testing.T) {
	sp, err := spec.Parse("long.yaml", []byte("name: long\nduration: 2m\nlock: {ttl: 100ms}\nimpls: [set-nx-px]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sp.Scaled(spec.FitTimeScale(time.Second, sp.Lock.TTL))
	if err == nil || !strings.Contains(err.Error(), "above the limit of 10m") || !strings.Contains(err.Error(), "scaled ×30") {
		t.Fatalf("scaling a 2 m run ×30: %v; want the duration limit refused", err)
	}
}

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
