package scenarios

import (
	"time"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// The spec language lives in scenarios/spec; these names keep the
// runner's API whole for its users (one import for a run).

type (
	Baseline      = spec.Baseline
	BaselineEntry = spec.BaselineEntry
	Expectation   = spec.Expectation
	Explore       = spec.Explore
	FailpointSpec = spec.FailpointSpec
	Limits        = spec.Limits
	MinReplicas   = spec.MinReplicas
	Network       = spec.Network
	OneOf         = spec.OneOf
	Rule          = spec.Rule
	SentinelSpec  = spec.SentinelSpec
	Spec          = spec.Spec
	SpecError     = spec.SpecError
	Variant       = spec.Variant
	Workload      = spec.Workload
)

const (
	Careful            = spec.Careful
	Careless           = spec.Careless
	ExploreCrash       = spec.ExploreCrash
	ExploreDelay       = spec.ExploreDelay
	ExploreLoseReply   = spec.ExploreLoseReply
	ExplorePause       = spec.ExplorePause
	FromBaseline       = spec.FromBaseline
	FromClaims         = spec.FromClaims
	FromSpec           = spec.FromSpec
	PointBeforeAcquire = spec.PointBeforeAcquire
	PointBeforeRelease = spec.PointBeforeRelease
	PointHold          = spec.PointHold
)

var (
	CmdPoint      = spec.CmdPoint
	DefaultLimits = spec.DefaultLimits
	FitTimeScale  = spec.FitTimeScale
	Load          = spec.Load
	LoadFor       = spec.LoadFor
	LoadWith      = spec.LoadWith
	Names         = spec.Names
	Overlay       = spec.Overlay
	Parse         = spec.Parse
	ParseFor      = spec.ParseFor
	ParseWith     = spec.ParseWith
	ReadBaseline  = spec.ReadBaseline
	RunnerPoints  = spec.RunnerPoints
	ScaledOptions = spec.ScaledOptions
)

// NewBaseline records the verdicts of outs.
func NewBaseline(outs []*Outcome) *Baseline {
	b := &Baseline{Version: 1, Recorded: time.Now().UTC().Truncate(time.Second)}
	for _, o := range outs {
		if o == nil {
			continue
		}
		b.Entries = append(b.Entries, BaselineEntry{Scenario: o.Scenario, Impl: o.Impl, Mode: o.Mode, Seed: o.Seed,
			Backend: o.Backend, Verdict: o.Result.Verdict})
	}
	b.Sort()
	return b
}
