package locktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/locktest"
)

// TestHunt: on sim, a hunt with a budget finds a user's lock whose release
// is a plain DEL while it claims to check the owner, and finds nothing in
// the same lock done right; either way it says what it covered. Sim runs
// are the same for the same seed: neither side depends on the machine.
func TestHunt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		careless  bool
		wantFound bool
	}{
		{"plain DEL", true, true},
		{"compare-and-delete", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lock := tokenInfo("hunted", tokenClaims, tc.careless)
			res, err := locktest.Hunt(context.Background(), lock, locktest.HuntOptions{
				Scenarios: []string{"explore-late-release"}, Budget: 2 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if (res.Found != nil) != tc.wantFound {
				t.Fatalf("found %v, want found %v (%d runs, %s)", res.Found != nil, tc.wantFound, res.Runs, res.Line())
			}
			if covered, total := res.Coverage.Counts(); covered == 0 || total == 0 {
				t.Errorf("no coverage: %s", res.Line())
			}
			t.Logf("%d runs, %d seeds in %.1f s; %s", res.Runs, res.Seeds, res.Elapsed.Seconds(), res.Line())
		})
	}
}
