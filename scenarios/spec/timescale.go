package spec

import (
	"fmt"
	"reflect"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// TimeScaleUnits is how many units of its lock's granularity a scenario's
// TTL must span before the scenario runs unscaled. A lock whose stamps are
// whole seconds rounds its TTL up to the second and its takers compare
// whole seconds, so it ends its lock up to a unit or two late (seed 003's
// stamp adds one more second): with three units that error is at most
// about half the TTL, inside the margins the scenarios leave (a pause of
// 2.7 TTLs, a clock 3 TTLs behind), where a 300 ms TTL on a one-second
// lock would be an error of several TTLs.
const TimeScaleUnits = 3

// FitTimeScale is the time scale that fits a scenario whose TTL is ttl to
// a lock counting time in units of granularity (lockimpl.Claims
// Granularity): the smallest factor that makes the TTL TimeScaleUnits
// units, so the scaled TTL is a whole number of units and the lock's
// rounding adds nothing to it. Nil when the TTL already spans that much,
// when the scenario leaves the TTL to the lock (ttl 0: the lock's default
// is in its own units), or when the lock counts in Redis's milliseconds:
// the scenarios are written in those, so such locks run exactly what the
// spec says.
func FitTimeScale(granularity, ttl time.Duration) *history.TimeScale {
	want := TimeScaleUnits * granularity
	if granularity <= time.Millisecond || ttl <= 0 || ttl >= want {
		return nil
	}
	return &history.TimeScale{Factor: float64(want) / float64(ttl), Granularity: granularity, TTL: ttl}
}

// Scaled is a copy of s with every time in it (duration, TTL and the other
// lock options, workload, think time, client timeout, network, fault
// times and parameters, failpoint sleeps and the faults they inject, the
// exploration's delays and pauses, clock offsets and skew, Sentinel
// timings, the deadlock bound) multiplied by ts's factor, so the schedule
// keeps its order; counts, probabilities and rates such as clock drift are
// dimensionless and stay. Every time.Duration field is scaled, found by
// reflection, so a field added later cannot be forgotten. The copy is
// checked against the limits s was validated with: scaling can push a run
// past --max-duration. s is unchanged; an unscaled ts returns s.
func (s *Spec) Scaled(ts *history.TimeScale) (*Spec, error) {
	if !ts.Scaled() {
		return s, nil
	}
	c := *s
	scaleTimes(reflect.ValueOf(&c).Elem(), ts)
	if c.DeadlockBound == 0 {
		// The checker's default bound is a time of the scenario too.
		c.DeadlockBound = ts.Of(checker.DefaultDeadlockBound)
	}
	if m := c.MinReplicas; m != nil && m.MaxLag%time.Second != 0 {
		// Redis counts min-replicas-max-lag in whole seconds.
		m.MaxLag = (m.MaxLag + time.Second - 1).Truncate(time.Second)
	}
	lim := s.limits
	if lim == (Limits{}) {
		lim = DefaultLimits()
	}
	if c.Duration > lim.MaxDuration {
		return nil, fmt.Errorf("%s: %s: duration %v is above the limit of %v (raise it with --max-duration)",
			s.Name, ts, c.Duration, lim.MaxDuration)
	}
	if n := c.historyEstimate(); n > lim.MaxHistory {
		return nil, fmt.Errorf("%s: %s: this run could record about %d history entries, above the limit of %d (raise --max-history)",
			s.Name, ts, n, lim.MaxHistory)
	}
	return &c, nil
}

// ScaledOptions is o with its times multiplied by ts's factor, as Scaled
// does to a spec's lock options.
func ScaledOptions(o lockimpl.Options, ts *history.TimeScale) lockimpl.Options {
	if ts.Scaled() {
		scaleTimes(reflect.ValueOf(&o).Elem(), ts)
	}
	return o
}

// scaleTimes multiplies every time.Duration reachable from the settable
// value v by ts's factor, copying what it goes through (pointers, slices,
// maps) first, so the value v was copied from is never touched.
// Unexported fields are left as they are (they hold no schedule).
func scaleTimes(v reflect.Value, ts *history.TimeScale) {
	if v.Type() == durationType {
		d := time.Duration(v.Int())
		scaled := ts.Of(d)
		if d%time.Millisecond == 0 {
			// A time written in whole milliseconds stays so: toxiproxy's
			// latency and Redis's PX count nothing finer.
			scaled = scaled.Round(time.Millisecond)
		}
		v.SetInt(int64(scaled))
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if f := v.Field(i); f.CanSet() {
				scaleTimes(f, ts)
			}
		}
	case reflect.Pointer:
		if v.IsNil() {
			return
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(v.Elem())
		scaleTimes(c.Elem(), ts)
		v.Set(c)
	case reflect.Slice:
		if v.IsNil() {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := 0; i < c.Len(); i++ {
			scaleTimes(c.Index(i), ts)
		}
		v.Set(c)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			scaleTimes(e, ts)
			c.SetMapIndex(it.Key(), e)
		}
		v.Set(c)
	}
}
