package scenarios

import (
	"fmt"
	"strings"
	"sync"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

// failoverRecorders are what a topology whose master can change (Sentinel,
// Cluster) reports through: its events (FSentinel) and, per client, each
// change of the server that answered it (FMaster, recorded only when it
// changes).
func (r *run) failoverRecorders() (events func(string), dialed func(client int, server string)) {
	events = func(text string) {
		r.rec.Add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Value: text})
	}
	var mu sync.Mutex
	last := map[int]string{}
	dialed = func(client int, server string) {
		mu.Lock()
		defer mu.Unlock()
		if last[client] == server {
			return
		}
		last[client] = server
		r.rec.Add(history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: client, F: history.FMaster, Value: server})
	}
	return events, dialed
}

// nameMasters names, in the witness, the server each of the two holders
// was talking to when it acquired.
func nameMasters(res *checker.Result, h history.History) {
	w := res.Witness
	if w == nil {
		return
	}
	at := func(hold *checker.Hold) {
		for _, op := range h {
			if op.Time > hold.From {
				break
			}
			if op.F == history.FMaster && op.Client == hold.Client {
				hold.Master = op.Value
			}
		}
	}
	at(&w.A)
	at(&w.B)
	if w.A.Master != "" || w.B.Master != "" {
		w.Text += fmt.Sprintf(" c%d was talking to %s, c%d to %s.", w.A.Client, orNone(w.A.Master), w.B.Client, orNone(w.B.Master))
	}
}

func orNone(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

// FailoverTimes are the milestones of the first Sentinel failover of a run,
// in ms from the run's start (-1: did not happen), read from the history:
// the fault before the first +sdown of a master, the first +sdown, +odown
// and +try-failover of any Sentinel, the leader's +promoted-slave and the
// first +switch-master, and the first acquire granted after the promotion.
type FailoverTimes struct {
	FaultMs        float64 `json:"fault_ms"`
	SdownMs        float64 `json:"sdown_ms"`
	OdownMs        float64 `json:"odown_ms"`
	TryFailoverMs  float64 `json:"try_failover_ms"`
	PromotedMs     float64 `json:"promoted_ms"`
	SwitchMasterMs float64 `json:"switch_master_ms"`
	// AcquireAfterMs is the first acquire ok after PromotedMs.
	AcquireAfterMs float64 `json:"acquire_after_ms"`
}

// String is the one-line summary: delays from the fault.
func (f *FailoverTimes) String() string {
	d := func(t float64) string {
		if t < 0 || f.FaultMs < 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", t-f.FaultMs)
	}
	return fmt.Sprintf("from the fault: sdown +%s ms, odown +%s, try-failover +%s, promoted +%s, switch-master +%s, next acquire +%s",
		d(f.SdownMs), d(f.OdownMs), d(f.TryFailoverMs), d(f.PromotedMs), d(f.SwitchMasterMs), d(f.AcquireAfterMs))
}

func failoverTimes(h history.History) *FailoverTimes {
	f := &FailoverTimes{-1, -1, -1, -1, -1, -1, -1}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	lastFault := int64(-1)
	first := func(dst *float64, op history.Op, event string) {
		if *dst < 0 && strings.Contains(op.Value, " "+event+" ") {
			*dst = ms(op.Time)
		}
	}
	for _, op := range h {
		switch {
		case op.Process == history.NemesisProcess && op.F == history.FStart && op.Type == history.Ok && f.SdownMs < 0:
			lastFault = op.Time
		case op.F == history.FSentinel:
			// A cluster's first +fail stands for Sentinel's +sdown.
			if f.SdownMs < 0 && (strings.Contains(op.Value, " +sdown master ") || strings.Contains(op.Value, " +fail ")) {
				f.SdownMs, f.FaultMs = ms(op.Time), ms(lastFault)
			}
			first(&f.OdownMs, op, "+odown")
			first(&f.TryFailoverMs, op, "+try-failover")
			first(&f.PromotedMs, op, "+promoted-slave")
			// A cluster's watcher sees the promotion as the switch itself
			// (Sentinel's +promoted-slave comes first and is kept).
			first(&f.PromotedMs, op, "+switch-master")
			first(&f.SwitchMasterMs, op, "+switch-master")
		case op.F == history.FAcquire && op.Type == history.Ok && f.PromotedMs >= 0 && f.AcquireAfterMs < 0:
			f.AcquireAfterMs = ms(op.Time)
		}
	}
	return f
}
