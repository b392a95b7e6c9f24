package debian

import (
	"os/exec"
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	"github.com/lockstorm/lockstorm/history"
)

// releaseAskedAgain: a release lost in a blackhole (its outcome unknown),
// then asked again, as a careful user does, once the links are back.
const releaseAskedAgain = "release-asked-again"

// TestKnownBugs asserts redis-py 4.3.4's release that forgets its token
// before the round trip (redis/lock.py 245-253: local.token = None, then
// do_release; redis-py #3847, the catalogue's entry 27): asked again after
// the lost reply, the Lock answers "Cannot release an unlocked lock"
// without asking the server while its key stands, a false refusal, on each
// of the zoo's seeds. No fixed release is packaged (the fix, PR 4258, is
// in no package the zoo holds), so only the bug is asserted.
func TestKnownBugs(t *testing.T) {
	seeds, err := zootest.Seeds()
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"/usr/bin/python3", "redis_py.py", "extend"}
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Fatalf("%v: run make clients", err)
	}
	info := describe(t, argv)
	t.Run(info.Name, func(t *testing.T) {
		if !zootest.NamesVersion(info.Name, "4.3.4") {
			t.Skipf("%s: not 4.3.4, the version whose bug is asserted", info.Name)
		}
		zootest.SkipUnlessMine(t, info.Name)
		for _, rep := range zootest.Run(t, info, seeds, []string{releaseAskedAgain}) {
			for _, o := range rep.Outcomes {
				f := o.Result.Finding(history.KindFalseRefusal)
				t.Logf("%s seed %d: %s; false refusal: %v", o.Scenario, o.Seed, o.Result.Verdict, f != nil)
				if f == nil {
					t.Errorf("%s seed %d: no false refusal (findings %+v): %s", o.Scenario, o.Seed, o.Result.Findings, o.Result.Reason)
				}
			}
		}
	})
}
