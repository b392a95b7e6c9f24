package reports

import (
	"github.com/lockstorm/lockstorm/checker"
)

// findingView is one finding under the timeline's title.
type findingView struct {
	Kind  string
	Count int
	// At is " from T" for a finding with a first time, else empty.
	At        string
	Permitted bool
	Why       string
	Witness   string
}

// findingViews lists the run's findings under the timeline's title, those
// the expectation does not permit first (the template marks them so), each
// with when it first happened and its witness.
func findingViews(res checker.Result) []findingView {
	var out []findingView
	for _, permitted := range []bool{false, true} {
		for _, f := range res.Findings {
			if f.Permitted != permitted {
				continue
			}
			at := ""
			if f.FirstNs >= 0 {
				at = " from " + ms(f.FirstNs)
			}
			out = append(out, findingView{string(f.Kind), f.Count, at, permitted, f.Why, f.Witness})
		}
	}
	return out
}
