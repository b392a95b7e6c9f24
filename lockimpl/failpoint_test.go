package lockimpl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestPatternCountsAcrossPoints: a pattern's skip, times and nth count the
// hits of every point it matches. cmd/*/*/after with nth 1 and times 1 is
// one lost reply among all of a cycle's commands, not one per command
// (seen: the SET's reply and then the release's EVALSHA's both lost, the
// evidence saying "fired 2 of 1 times").
func TestPatternCountsAcrossPoints(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		action lockimpl.Action
		hits   []string // "|" starts a new cycle
		lost   []bool
	}{
		{"nth 1 of a cycle", lockimpl.Action{Nth: 1, LoseReply: true},
			[]string{"cmd/n1/SET/after", "cmd/n1/EVALSHA:1a2b3c4d/after", "|", "cmd/n2/GET/after", "cmd/n1/SET/after"},
			[]bool{true, false, true, false}},
		{"skip 1, times 1", lockimpl.Action{Skip: 1, Times: 1, LoseReply: true},
			[]string{"cmd/n1/SET/after", "cmd/n2/SET/after", "cmd/n1/GET/after"},
			[]bool{false, true, false}},
		{"an exact point counts alone", lockimpl.Action{Times: 1, LoseReply: true},
			[]string{"cmd/n1/GET/after", "cmd/n1/SET/after", "cmd/n1/SET/after"},
			[]bool{false, true, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fp := lockimpl.NewFailpoints(lockimpl.NewHub(), 0)
			at := "cmd/*/*/after"
			if tc.name == "an exact point counts alone" {
				at = "cmd/n1/SET/after"
			}
			fp.Attach(at, tc.action)
			var got []bool
			for _, p := range tc.hits {
				if p == "|" {
					fp.NewCycle()
					continue
				}
				got = append(got, errors.Is(fp.Hit(ctx, p), lockimpl.ErrLostReply))
			}
			for i := range got {
				if got[i] != tc.lost[i] {
					t.Fatalf("lost replies %v, want %v", got, tc.lost)
				}
			}
		})
	}
}
