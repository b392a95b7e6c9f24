package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
)

// GoalBattery is the wall-time goal for the whole battery against one lock.
const GoalBattery = 60 * time.Second

// BatteryTime runs every embedded scenario against impl, as locktest.Run
// does for a user's lock (parallel 4), and reports the wall time, with how
// many verdicts matched their expectations beside it.
func BatteryTime(ctx context.Context, impl string, progress Progress) Row {
	r := Row{Row: "6", Name: "battery/" + impl, Measure: "whole battery against one lock, wall time",
		Unit: "s", Goal: fmt.Sprintf("< %v", GoalBattery)}
	info, err := lockimpl.Lookup(impl)
	if err != nil {
		r.Status, r.Note = Failed, err.Error()
		return r
	}
	progress.say("battery: every scenario against %s", impl)
	rep, err := locktest.Check(ctx, info, locktest.Battery{Keep: "none"})
	if err != nil {
		r.Status, r.Note = Failed, err.Error()
		return r
	}
	r.Figure = rep.Wall.Seconds()
	r.judge(rep.Wall < GoalBattery)
	r.Note = fmt.Sprintf("%d scenarios (%d skipped by the backend): %d differ, %d inconclusive", len(rep.Outcomes),
		len(rep.Skipped), len(rep.Failures()), len(rep.Unjudged()))
	return r
}
