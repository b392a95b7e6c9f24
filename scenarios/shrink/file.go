package shrink

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Figures are the size of a scenario, as the before/after line shows it.
type Figures struct {
	Clients, Keys, Nodes int
	// Faults are the timeline's faults (and an explore block, as one);
	// Failpoints the spec's failpoints (schedules, crashes, faults placed
	// at a step).
	Faults, Failpoints int
	Duration           time.Duration
	// Ops bounds the run's acquire attempts (0: unbounded).
	Ops int
	// History is the entries of a failing run's history (-1: unknown).
	History int
}

func (s *search) figures(spec *spec.Spec, history int) (Figures, error) {
	plan, err := scenarios.Compile(spec, s.config(s.base))
	if err != nil {
		return Figures{}, fmt.Errorf("shrink: %w", err)
	}
	f := Figures{Clients: spec.Clients, Keys: spec.Keys, Nodes: plan.Nodes, Faults: len(spec.Faults),
		Failpoints: len(spec.Failpoints), Duration: spec.Duration, Ops: spec.Ops, History: history}
	if spec.Explore != nil {
		f.Faults++
	}
	return f, nil
}

// BeforeAfter is the one line that says how much smaller the witness got:
// clients 16 → 2, keys 4 → 1, nodes 1 → 1, faults 3 → 1, failpoints 0 →
// 0, duration 4 s → 0.6 s[, ops unbounded → 30], history 4,600 → 40
// entries.
func (r *Result) BeforeAfter() string {
	b, a := r.Before, r.After
	ops := ""
	if b.Ops > 0 || a.Ops > 0 {
		ops = fmt.Sprintf(", ops %s → %s", opsText(b.Ops), opsText(a.Ops))
	}
	return fmt.Sprintf("clients %d → %d, keys %d → %d, nodes %d → %d, faults %d → %d, failpoints %d → %d, duration %s → %s%s, history %s → %s entries",
		b.Clients, a.Clients, b.Keys, a.Keys, b.Nodes, a.Nodes, b.Faults, a.Faults, b.Failpoints, a.Failpoints,
		seconds(b.Duration), seconds(a.Duration), ops, thousands(b.History), thousands(a.History))
}

// Rate is the minimal spec's reproduction: on the fresh seeds it was
// confirmed on, and the seeds it was accepted on.
func (r *Result) Rate() string {
	line := fmt.Sprintf("%s on %d of %d fresh seeds judged (%s; needed on every one of %d)", r.Verdict, r.Confirmed, r.ConfirmJudged, seedRange(r.Confirm), r.ConfirmNeed)
	if n := len(r.Confirm) - r.ConfirmJudged; n > 0 {
		line += fmt.Sprintf(", %d of them not judged by the harness (its stalls) and not counted", n)
	}
	return line + fmt.Sprintf("; accepted on seeds %s at the required share %g of %d", seedList(r.Seeds), r.Share, r.Need)
}

// File is the minimal spec as a file `lockstorm run --scenario` loads,
// under a comment saying what it was shrunk from (source: where the
// original came from, e.g. its run folder), how often it reproduces, how
// much smaller it is and how to run it (lock: the flags that give the
// lock when the spec cannot name it, e.g. --exec 'python3 my_lock.py';
// "" for a generic line). It carries no date: shrinking the same run
// twice to the same spec writes the same file.
func (r *Result) File(source, lock string) ([]byte, error) {
	body, err := r.Minimal.YAML()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	from := fmt.Sprintf("%s × %s, seed %d", r.Original.Name, r.Impl, r.Seed)
	if source != "" {
		from += " (" + source + ")"
	}
	fmt.Fprintf(&b, "# Minimal witness written by lockstorm shrink, shrunk from %s.\n", from)
	fmt.Fprintf(&b, "# Reproduces %s.\n", r.Rate())
	fmt.Fprintf(&b, "# %s.\n", r.BeforeAfter())
	if rd := r.Random; rd != nil {
		fmt.Fprintf(&b, "# A schedule built from the history of a failing run of the random search's minimal spec\n# (%d clients, %s, %s on %d of %d fresh seeds judged): its gates force the order in which\n# the clients passed their points, and the crashes and pauses that met them are pinned to points.\n",
			rd.After.Clients, seconds(rd.After.Duration), rd.Verdict, rd.Confirmed, rd.ConfirmJudged)
	}
	switch {
	case r.Nameable:
		fmt.Fprintf(&b, "# Run it: lockstorm run --scenario FILE (impls names %s).\n", r.Impl)
	case lock != "":
		fmt.Fprintf(&b, "# Run it: lockstorm run --scenario FILE %s\n", lock)
	default:
		fmt.Fprintf(&b, "# Run it with the lock it was shrunk on (%s): lockstorm run --scenario FILE --exec 'PROGRAM', or locktest's Battery{Scenarios: []string{FILE}}.\n", r.Impl)
	}
	b.Write(body)
	return b.Bytes(), nil
}

func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// thousands writes n with thousands separators (4,600); "?" when unknown.
func thousands(n int) string {
	if n < 0 {
		return "?"
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// seedRange lists seeds sorted, a run of consecutive ones as first-last
// ("163-180, 185").
func seedRange(seeds []uint64) string {
	sorted := slices.Sorted(slices.Values(seeds))
	var parts []string
	for i := 0; i < len(sorted); {
		j := i
		for j+1 < len(sorted) && sorted[j+1] == sorted[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", sorted[i], sorted[j]))
		} else {
			parts = append(parts, fmt.Sprint(sorted[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
