package checker

import (
	"sort"
	"strings"

	"github.com/lockstorm/lockstorm/checker/internal/keyevents"
	"github.com/lockstorm/lockstorm/checker/internal/liveness"
	"github.com/lockstorm/lockstorm/history"
)

// False successes: a release or an extend acknowledged ok while, by the
// servers' own key events, the key was certainly not the releaser's. The
// judgement is checker/internal/keyevents's (its package comment tells the
// argument); this file hands it the pass's records and writes its findings.

// lateIn is how long client was late within [from, to): the harness's
// stalls and the client's own lag (lateFor).
func (a *analysis) lateIn(client int, from, to int64) int64 {
	return liveness.Covered(a.lateFor(client), from, to)
}

// holdStart is when the hold that a release of client on key invoked at t
// ended began: the earlier of its acquire's invoke and its grant, for the
// client's last hold granted by t (t when there is none).
func (a *analysis) holdStart(key string, client int, t int64) int64 {
	if k, ok := a.keyIdx[key]; ok {
		hs := a.keys[k].holds
		for i := len(hs) - 1; i >= 0; i-- {
			if hs[i].Client == client && hs[i].From <= t {
				return min(hs[i].invoke, hs[i].From)
			}
		}
	}
	return t
}

// observerLag counts the observers' syncs and their round trips (ms).
func observerLag(a *analysis) (n int, maxMs, p99Ms float64) {
	var lags []int64
	for _, op := range a.server {
		if op.F == history.FSync && op.Time >= op.N {
			lags = append(lags, op.Time-op.N)
		}
	}
	if len(lags) == 0 {
		return 0, 0, 0
	}
	sort.Slice(lags, func(i, j int) bool { return lags[i] < lags[j] })
	return len(lags), float64(lags[len(lags)-1]) / 1e6, float64(lags[(len(lags)*99)/100]) / 1e6
}

// falseSuccessCheck judges the releases and extends acknowledged ok by
// the servers' key events, and reports the extends and the observers.
type falseSuccessCheck struct{}

func (falseSuccessCheck) name() string { return "false success" }

func (falseSuccessCheck) run(a *analysis) finding {
	f := falseSuccessFinding{extends: a.extends, events: a.events}
	if a.events > 0 && len(a.releaseRefs) > 0 {
		in := a.keyEventInput()
		in.AnyStall, in.LateIn, in.HoldStart = a.anyStall(), a.lateIn, a.holdStart
		f.FalseSuccessResult = keyevents.FalseSuccesses(in)
	}
	f.syncs, f.lagMaxMs, f.lagP99Ms = observerLag(a)
	return f
}

// falseSuccessFinding is the false-success check's findings, with the
// extends' outcomes and the observers' figures.
type falseSuccessFinding struct {
	keyevents.FalseSuccessResult
	extends            extendCounts
	events, syncs      int
	lagMaxMs, lagP99Ms float64
}

func (f falseSuccessFinding) apply(r *Result) {
	if fs := f.Found; len(fs) > 0 {
		r.FalseSuccesses, r.FalseSuccess = len(fs), fs[0].Text
	}
	r.FalseSuccessUnjudged, r.FalseSuccessUnjudgedWhy = f.Unjudged, f.UnjudgedWhy
	for _, fs := range f.Found {
		if !fs.ThroughStalls {
			r.FalseSuccessesWithoutStalls++
		}
		if fs.Extend {
			r.ExtendFalseSuccesses++
		}
		if fs.Foreign {
			if r.ForeignRenewals++; r.ForeignRenewal == "" {
				r.ForeignRenewal = fs.Text
			}
		}
	}
	// As findings, only those the harness's own stalls do not explain;
	// a foreign renewal is the extend finding's witness when there is one.
	for _, fs := range f.Found {
		if fs.ThroughStalls {
			continue
		}
		k := history.KindReleaseFalseSuccess
		if fs.Extend {
			k = history.KindExtendFalseSuccess
		}
		if fd := r.Finding(k); fd != nil {
			fd.Count++
			if fs.Foreign && !strings.HasPrefix(fd.Witness, "foreign renewal") {
				fd.Witness = fs.Text
			}
			continue
		}
		r.Findings = append(r.Findings, Finding{Kind: k, Count: 1, FirstNs: fs.At, Witness: fs.Text})
	}
	r.Extends, r.ExtendsOK, r.ExtendsFailed, r.ExtendsUnknown = f.extends.invoked, f.extends.ok, f.extends.fail, f.extends.unknown
	r.ServerEvents = f.events
	r.ObserverSyncs, r.ObserverLagMaxMs, r.ObserverLagP99Ms = f.syncs, f.lagMaxMs, f.lagP99Ms
}

func (f falseSuccessFinding) firstViolation() (int64, string) {
	if len(f.Found) == 0 {
		return -1, ""
	}
	return f.Found[0].At, ViolationFalseSuccess
}
