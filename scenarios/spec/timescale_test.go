package spec

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
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
		ts := FitTimeScale(tc.gran, tc.ttl)
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
		spec, err := Load(name)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string]time.Duration{}
		durations(reflect.ValueOf(spec).Elem(), "", before)
		ts := &history.TimeScale{Factor: 10, Granularity: time.Second, TTL: spec.Lock.TTL}
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
	sp, err := Parse("long.yaml", []byte("name: long\nduration: 2m\nlock: {ttl: 100ms}\nimpls: [set-nx-px]\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = sp.Scaled(FitTimeScale(time.Second, sp.Lock.TTL))
	if err == nil || !strings.Contains(err.Error(), "above the limit of 10m") || !strings.Contains(err.Error(), "scaled ×30") {
		t.Fatalf("scaling a 2 m run ×30: %v; want the duration limit refused", err)
	}
}
