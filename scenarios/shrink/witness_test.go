package shrink_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/shrink"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// TestWitnessReproducesOnFreshSeeds: del-race-random × setnx-del (waiters
// racing DEL and SETNX on a crashed holder's stamp, at random) shrinks to
// a witness that the shrink confirmed on every one of 20 fresh seeds, and
// that, written as a file and loaded back, is unsafe on every one of 20
// other fresh seeds no part of the shrink ran on. A run the harness could
// not judge (its own stalls) is replaced by one on a spare seed, as the
// shrink's confirmation does; a run judged anything but unsafe fails the
// test. About three minutes, and the random search's choice of failure
// decides whether the witness is a schedule: run with
// LOCKSTORM_TEST_WITNESS=1.
func TestWitnessReproducesOnFreshSeeds(t *testing.T) {
	if os.Getenv("LOCKSTORM_TEST_WITNESS") == "" {
		t.Skip("LOCKSTORM_TEST_WITNESS=1 runs it (about three minutes of shrinking and replays)")
	}
	cluster.RequireRedisServer(t)
	sp, err := spec.Load("del-race-random")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := scenarios.Config{Impl: "setnx-del", Backend: cluster.RedisServer}
	res, err := shrink.Shrink(ctx, sp, cfg, shrink.Options{Budget: 3 * time.Minute, Progress: func(s shrink.Step) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", res.BeforeAfter(), res.Rate())
	if res.ConfirmNeed != 20 || res.Confirmed != 20 {
		t.Fatalf("the shrink confirmed its witness on %d of %d fresh seeds judged, want 20 of 20", res.Confirmed, res.ConfirmJudged)
	}
	b, err := res.File("test", "")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "witness.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	witness, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	judged, spares := 0, 20
	for seed := uint64(1_000_000); judged < 20; seed++ {
		o, err := scenarios.Run(ctx, witness, scenarios.Config{Impl: "setnx-del", Seed: seed, Backend: cluster.RedisServer})
		if err != nil {
			t.Fatal(err)
		}
		if o.Result.ByHarness && spares > 0 {
			spares--
			t.Logf("seed %d not judged by the harness (%s): a spare seed instead", seed, o.Result.Reason)
			continue
		}
		judged++
		if o.Result.Verdict != checker.Unsafe {
			t.Errorf("seed %d: %s (%s), want unsafe\n%s", seed, o.Result.Verdict, o.Result.Reason, b)
		}
	}
}
