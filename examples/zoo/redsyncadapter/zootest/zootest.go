// Package zootest runs the zoo's libraries through lockstorm's battery on
// chosen seeds and writes what `make zoo` gathers: per lock a folder with
// the runs' rows (results.jsonl, which `lockstorm report` merges into the
// suite page), the folders of runs that were not as expected, and one
// markdown row of the matrix (zoo.md).
//
// Environment: LOCKSTORM_ZOO_SEEDS ("1,2,3" by default), LOCKSTORM_ZOO_OUT
// (where the folders go; none are written without it) and
// LOCKSTORM_ZOO_SCENARIOS (a comma list; default every embedded scenario
// but the real-Sentinel ones).
package zootest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/locktest"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Seeds are the seeds the zoo runs: LOCKSTORM_ZOO_SEEDS, else 1, 2 and 3.
func Seeds() ([]uint64, error) {
	s := os.Getenv("LOCKSTORM_ZOO_SEEDS")
	if s == "" {
		return []uint64{1, 2, 3}, nil
	}
	var out []uint64
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
		if err != nil || n == 0 {
			return nil, fmt.Errorf("LOCKSTORM_ZOO_SEEDS: %q: want positive integers, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Battery is the zoo's scenarios: LOCKSTORM_ZOO_SCENARIOS, else every
// embedded one but the real-Sentinel scenarios (as the examples' battery:
// they mostly wait on Sentinel's timers).
func Battery() []string {
	if s := os.Getenv("LOCKSTORM_ZOO_SCENARIOS"); s != "" {
		return strings.Split(s, ",")
	}
	var names []string
	for _, n := range spec.Names() {
		if !strings.HasPrefix(n, "sentinel-") {
			names = append(names, n)
		}
	}
	return names
}

// Run is the battery against lock on every seed. Verdicts are not judged
// here (a zoo library may well be wrong): the caller asserts on the
// outcomes, and the matrix shows them.
func Run(t *testing.T, lock lockimpl.Info, seeds []uint64, names []string) []*locktest.Report {
	t.Helper()
	return RunOn(t, "", lock, seeds, names)
}

// RunOn is Run on the given backend (locktest.Battery.Backend; "" the
// default).
func RunOn(t *testing.T, backend string, lock lockimpl.Info, seeds []uint64, names []string) []*locktest.Report {
	t.Helper()
	var reps []*locktest.Report
	for _, seed := range seeds {
		rep, err := locktest.Check(context.Background(), lock, locktest.Battery{Seed: seed, Scenarios: names, Backend: backend, Parallel: 3, Keep: reports.KeepNone})
		if err != nil {
			t.Fatalf("%s seed %d: %v", lock.Name, seed, err)
		}
		reps = append(reps, rep)
	}
	return reps
}

// Findings are what the zoo counts per scenario over its seeds.
type Findings struct {
	// Unexpected are the runs not as expected: the verdict, or a finding
	// the expectation does not permit.
	Unexpected int
	// Verdicts are the verdicts of those runs (verdict/expected, then
	// each unpermitted kind after a "!").
	Verdicts []string
	// ReleaseFalse, ExtendFalse and ForeignRenewals are the false
	// successes on release, on extend, and the extends on another
	// holder's key, summed over the seeds.
	ReleaseFalse, ExtendFalse, ForeignRenewals int
	// Seeds is on how many seeds the scenario had any of them.
	Seeds int
}

func (f Findings) any() bool {
	return f.Unexpected+f.ReleaseFalse+f.ExtendFalse+f.ForeignRenewals > 0
}

// Tally counts the findings per scenario over reps.
func Tally(reps []*locktest.Report) map[string]*Findings {
	out := map[string]*Findings{}
	for _, rep := range reps {
		for _, o := range rep.Outcomes {
			f := out[o.Scenario]
			if f == nil {
				f = &Findings{}
				out[o.Scenario] = f
			}
			r := o.Result
			ext := r.ExtendFalseSuccesses
			f.ReleaseFalse += r.FalseSuccesses - ext
			f.ExtendFalse += ext
			f.ForeignRenewals += r.ForeignRenewals
			// A finding the expectation does not permit fails a run
			// whose verdict was the expected one (lockstep retries, a
			// release false success): it is named beside the verdict.
			unexpected := o.Expected != "" && !o.AsExpected()
			if unexpected {
				f.Unexpected++
				v := fmt.Sprintf("%s/%s", r.Verdict, o.Expected)
				for _, u := range r.Unpermitted() {
					v += " !" + string(u.Kind)
				}
				f.Verdicts = append(f.Verdicts, v)
			}
			if unexpected || r.FalseSuccesses > 0 || r.ForeignRenewals > 0 {
				f.Seeds++
			}
		}
	}
	return out
}

// Write puts reps under LOCKSTORM_ZOO_OUT/<lock>: results.jsonl (every
// run's row), the folders of the runs not as expected or with a false
// success, and zoo.md, the lock's row of the matrix. Without
// LOCKSTORM_ZOO_OUT it writes nothing.
func Write(t *testing.T, library, version string, lock lockimpl.Info, reps []*locktest.Report) {
	t.Helper()
	root := os.Getenv("LOCKSTORM_ZOO_OUT")
	if root == "" {
		return
	}
	dir := filepath.Join(root, safe(lock.Name))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var jsonl strings.Builder
	var wall time.Duration
	for _, rep := range reps {
		wall += rep.Wall
		for _, o := range rep.Outcomes {
			row := reports.FromOutcome(o)
			if !row.AsExpected || o.Result.FalseSuccesses > 0 {
				d, err := reports.WriteRunDir(dir, o, time.Now())
				if err != nil {
					t.Fatal(err)
				}
				row.RunDir = d
			}
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			jsonl.Write(b)
			jsonl.WriteByte('\n')
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(jsonl.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	md := MatrixRow(library, version, lock.Name, len(reps), Tally(reps), wall)
	if err := os.WriteFile(filepath.Join(dir, "zoo.md"), []byte(md+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// MatrixRow is one lock's row: each scenario with a finding, what it was
// and on how many seeds; "none" when the battery found nothing.
func MatrixRow(library, version, lock string, seeds int, tally map[string]*Findings, wall time.Duration) string {
	var names []string
	for n, f := range tally {
		if f.any() {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var cells []string
	for _, n := range names {
		f := tally[n]
		var what []string
		if f.Unexpected > 0 {
			what = append(what, "verdict "+strings.Join(f.Verdicts, ","))
		}
		if f.ReleaseFalse > 0 {
			what = append(what, fmt.Sprintf("release false success ×%d", f.ReleaseFalse))
		}
		if f.ExtendFalse > 0 {
			what = append(what, fmt.Sprintf("extend false success ×%d", f.ExtendFalse))
		}
		if f.ForeignRenewals > 0 {
			what = append(what, fmt.Sprintf("foreign renewal ×%d", f.ForeignRenewals))
		}
		cells = append(cells, fmt.Sprintf("%s: %s (%d/%d seeds)", n, strings.Join(what, "; "), f.Seeds, seeds))
	}
	found := "none"
	if len(cells) > 0 {
		found = strings.Join(cells, "<br>")
	}
	return fmt.Sprintf("| %s | %s | %s | %d | %s | %s |", library, version, lock, seeds, found, wall.Round(time.Second))
}

func safe(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' {
			return '_'
		}
		return r
	}, name)
}

// NamesVersion says a lock's name (LIB[-N]@VERSION) carries version.
func NamesVersion(name, version string) bool {
	_, v, ok := strings.Cut(name, "@")
	return ok && v == version
}
