package scenarios

import (
	"time"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// NewBaseline records the verdicts of outs.
func NewBaseline(outs []*Outcome) *spec.Baseline {
	b := &spec.Baseline{Version: 1, Recorded: time.Now().UTC().Truncate(time.Second)}
	for _, o := range outs {
		if o == nil {
			continue
		}
		b.Entries = append(b.Entries, spec.BaselineEntry{Scenario: o.Scenario, Impl: o.Impl, Mode: o.Mode, Seed: o.Seed,
			Backend: o.Backend, Verdict: o.Result.Verdict})
	}
	b.Sort()
	return b
}
