// Package locktest puts a lock on trial from Go: it runs lockstorm's battery
// of scenarios (contention, crashes, pauses past the TTL, failover, clock
// jumps, late releases, ...) against any lockimpl.Locker, registered or not,
// and judges each verdict against what the lock claims about itself.
//
// From a test:
//
//	func TestMyLock(t *testing.T) {
//		locktest.Run(t, lockimpl.Info{
//			Name:   "my-lock",
//			Claims: lockimpl.Claims{Topology: lockimpl.SingleInstance, Expiry: lockimpl.ServerExpiry, Release: lockimpl.OwnerCheckedRelease},
//			New:    newMyLock, // func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error)
//		}, locktest.Battery{})
//	}
//
// Each scenario is a subtest. A verdict that differs from the expectation
// fails it, naming the expectation's reason and the run folder kept for it
// (history, timeline); `go test -v` prints the whole matrix. Expectations
// come from a baseline, else from the scenario when it names the lock, else
// from the lock's claims through the scenario's rules, else there is none:
// the verdict is reported and the subtest skipped as unjudged, never passed.
//
// The user's own scenario files (Battery.Scenarios entries that are paths)
// may name the lock by its Info.Name under impls, expected and variants; a
// variant of it (variants: {my-lock-fast: {impl: my-lock, ttl: 100ms}}) runs
// as a run of its own, its options given to Info.New. The embedded scenarios
// name registered implementations only: a lock sharing one of their names is
// judged by its claims there. Check is the same battery for a
// program's own main, and its Report records a baseline that later runs
// gate against (Battery.Baseline).
package locktest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/reports"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Battery is which scenarios to run and how. The zero value runs every
// embedded scenario on the default backend with each spec's seed.
type Battery struct {
	// Scenarios are embedded names or paths to YAML files; empty: all of
	// spec.Names().
	Scenarios []string
	// Seed overrides every spec's seed when non-zero.
	Seed uint64
	// Seeds, when above 1, runs every scenario on that many seeds, from
	// Seed (or 1) up, each a run and a subtest of its own named
	// scenario@seed. On the sim backend many seeds cost little: a random
	// scenario then searches where a real-time battery affords one try.
	Seeds int
	// Backend is auto (default: redis-server when installed, else the
	// embedded miniredis), redis-server, embedded or sim: the whole run in
	// virtual time, in-process, the same history for the same seed, no
	// server, proxy or network needed. Scenarios the backend cannot run
	// (replicas need redis-server; sim runs no client process) are
	// skipped, with the reason.
	Backend string
	// Parallel is how many scenarios run at once (each has its own servers
	// and ports, and spends its time waiting). 0, the default, follows the
	// machine as lockstorm run --parallel 0 does: three on two CPUs, and
	// more while the CPUs have room, so a battery is as fast as the machine
	// allows without runs starved into harness stalls (a loaded CI machine
	// gets the floor).
	Parallel int
	// Out is the root of the run folders kept for failures; default the
	// LOCKSTORM_OUT environment variable, else a new directory under the
	// system's temporary directory.
	Out string
	// Keep is which run folders to keep: failures (default), all or none.
	Keep string
	// Baseline, when set, gives the expected verdict of every pair it
	// recorded (Report.Baseline), ahead of the specs and the claims.
	Baseline *spec.Baseline
	// Log receives the runs' logs; nil discards them.
	Log *slog.Logger
	// ObserverDelay slows the servers' key events on their way to the
	// harness (scenarios.Config.ObserverDelay): a battery run with it
	// checks that no verdict rests on the events arriving in time.
	ObserverDelay scenarios.Delay
	// FullDuration runs every scenario its whole duration (by default an
	// unsafe run stops a grace after its first overlap).
	FullDuration bool
}

// Report is what a battery found.
type Report struct {
	// Lock is the name the lock was run under.
	Lock string
	// Outcomes are the runs, in scenario order.
	Outcomes []*scenarios.Outcome
	// RunDirs are the kept run folders by scenario name (scenario.variant
	// for a run of one of a user spec's variants of the lock).
	RunDirs map[string]string
	// Skipped are the scenarios the backend cannot run, with the reason.
	Skipped map[string]string
	// Wall is the battery's wall time.
	Wall time.Duration
	// seeds: the battery ran several seeds per scenario (labels name them).
	seeds bool
}

// Check runs the battery against lock and returns what it found. An error
// means a scenario could not be carried out (bad spec, no backend, a stuck
// run); verdicts, expected or not, are in the Report.
func Check(ctx context.Context, lock lockimpl.Info, b Battery) (*Report, error) {
	return check(ctx, lock, b, nil)
}

// check is Check running only the runs whose label selected keeps (nil:
// every one); a scenario the backend cannot run is listed as skipped only
// when selected would have kept it.
func check(ctx context.Context, lock lockimpl.Info, b Battery, selected func(label string) bool) (*Report, error) {
	keeps := func(label string) bool { return selected == nil || selected(label) }
	if err := lock.Check(); err != nil {
		return nil, err
	}
	backend, err := cluster.Resolve(orDefault(b.Backend, cluster.Auto))
	if err != nil {
		return nil, err
	}
	keep := orDefault(b.Keep, reports.KeepFailures)
	switch keep {
	case reports.KeepFailures, reports.KeepAll, reports.KeepNone:
	default:
		return nil, fmt.Errorf("locktest: Keep %q: want failures, all or none", keep)
	}
	names := b.Scenarios
	if len(names) == 0 {
		names = spec.Names()
	}
	rep := &Report{Lock: lock.Name, RunDirs: map[string]string{}, Skipped: map[string]string{}, seeds: b.Seeds > 1}
	var jobs []scenarios.Job
	for _, n := range names {
		spec, err := load(n, lock)
		if err != nil {
			return nil, err
		}
		if why := unsupported(spec, lock, backend); why != "" {
			if keeps(spec.Name) {
				rep.Skipped[spec.Name] = why
			}
			continue
		}
		for _, impl := range runsOf(spec, lock.Name) {
			for _, seed := range seedsOf(b) {
				if !keeps(rep.labelOf(spec.Name, impl, seed)) {
					continue
				}
				info := lock
				jobs = append(jobs, scenarios.Job{Spec: spec, Config: scenarios.Config{Impl: impl, Info: &info, Seed: seed,
					Backend: backend, Log: b.Log, Baseline: b.Baseline, ObserverDelay: b.ObserverDelay, FullDuration: b.FullDuration}})
			}
		}
	}
	start := time.Now()
	outs, errs := scenarios.RunMany(ctx, jobs, max(b.Parallel, 0), nil, nil)
	rep.Wall = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	rep.Outcomes = outs
	if keep == reports.KeepNone {
		return rep, nil
	}
	out := orDefault(b.Out, os.Getenv("LOCKSTORM_OUT"))
	for _, o := range outs {
		if !reports.ShouldKeep(keep, o) || failed(o) == "" && unjudged(o) == "" && keep == reports.KeepFailures {
			continue
		}
		if out == "" {
			if out, err = os.MkdirTemp("", "lockstorm-"+safeName(lock.Name)+"-"); err != nil {
				return nil, err
			}
		}
		dir, err := reports.WriteRunDir(out, o, time.Now())
		if err != nil {
			return nil, err
		}
		rep.RunDirs[rep.label(o)] = dir
	}
	return rep, nil
}

// unsupported says why backend cannot run spec against lock, or "".
func unsupported(sp *spec.Spec, lock lockimpl.Info, backend string) string {
	if why := sp.Unsupported(backend); why != "" {
		return why
	}
	if backend == cluster.Sim {
		if why := spec.SimUnsupportedLock(lock); why != "" {
			return why
		}
	}
	// A client process is handed node addresses (the line protocol has
	// no Sentinel discovery and no cluster redirects), as lockstorm run
	// --exec skips them too.
	if len(lock.Program) > 0 && (sp.Cluster != nil || sp.Sentinel != nil) {
		return "a client process is given node addresses, not Sentinels or a cluster"
	}
	if n := lock.NodesUnder(sp.Lock); sp.Cluster != nil && n > 1 {
		return fmt.Sprintf("a Redis Cluster gives a lock one cluster client; %s needs %d masters of its own", lock.Name, n)
	}
	return ""
}

// load reads a scenario for lock. A file of the user's may name the lock
// (by its Info.Name) under impls, expected and variants; an embedded
// scenario's names are the registered implementations, so a lock sharing
// one of their names is judged by its claims, not by their entries.
func load(nameOrPath string, lock lockimpl.Info) (*spec.Spec, error) {
	if slices.Contains(spec.Names(), nameOrPath) {
		return spec.Load(nameOrPath)
	}
	return spec.LoadFor(nameOrPath, spec.DefaultLimits(), lock)
}

// runsOf are the names lock runs under in spec: when the spec names the
// lock, the lock itself (if listed under impls or expected) and each of the
// spec's variants of it; otherwise the lock alone.
func runsOf(spec *spec.Spec, lock string) []string {
	if !spec.Knows(lock) {
		return []string{lock}
	}
	var out []string
	if slices.Contains(spec.Impls, lock) || spec.Expected[lock] != "" {
		out = append(out, lock)
	}
	out = append(out, spec.VariantsOf(lock)...)
	if len(out) == 0 {
		out = append(out, lock)
	}
	return out
}

// label names a run in the matrix, the subtests and RunDirs: the scenario,
// and the variant when the lock ran as one.
func (r *Report) label(o *scenarios.Outcome) string { return r.labelOf(o.Scenario, o.Impl, o.Seed) }

// labelOf is the label of a run; with several seeds it names the seed.
func (r *Report) labelOf(scenario, impl string, seed uint64) string {
	l := scenario
	if impl != r.Lock && impl != "" {
		l += "." + impl
	}
	if r.seeds {
		l += fmt.Sprintf("@%d", seed)
	}
	return l
}

// seedsOf are the seeds each scenario runs on: Seed (0: the spec's own)
// alone, or Seeds of them from Seed (or 1) up.
func seedsOf(b Battery) []uint64 {
	if b.Seeds <= 1 {
		return []uint64{b.Seed}
	}
	out := make([]uint64, b.Seeds)
	for i := range out {
		out[i] = max(b.Seed, 1) + uint64(i)
	}
	return out
}

// Failures are the runs whose verdict differs from their expectation. An
// exploratory run that merely missed its failure this time is not one, nor
// is an inconclusive run (see Unjudged).
func (r *Report) Failures() []*scenarios.Outcome {
	var out []*scenarios.Outcome
	for _, o := range r.Outcomes {
		if failed(o) != "" {
			out = append(out, o)
		}
	}
	return out
}

// NotPermitted are the failures that showed something their expectation
// does not allow: a kind of finding it does not permit (two holders where
// mutual exclusion was expected, a release that lied inside a run whose
// overlap was expected), or a verdict worse than the expected one.
func (r *Report) NotPermitted() []*scenarios.Outcome {
	var out []*scenarios.Outcome
	for _, o := range r.Failures() {
		if len(o.Result.Unpermitted()) > 0 || worse(o.Result.Verdict, o.Expected) {
			out = append(out, o)
		}
	}
	return out
}

// NotShown are the failures whose expected failure did not show: a gated
// run expected unsafe or deadlock that came out safe, and nothing it
// showed was forbidden. The scenario no longer finds what it exists to
// find (for the lock, good news; for the battery, a hole).
func (r *Report) NotShown() []*scenarios.Outcome {
	var out []*scenarios.Outcome
	for _, o := range r.Failures() {
		if len(o.Result.Unpermitted()) == 0 && !worse(o.Result.Verdict, o.Expected) {
			out = append(out, o)
		}
	}
	return out
}

// worse says verdict v is a failure the expected verdict exp is not
// (unsafe or deadlock where something else was expected).
func worse(v, exp string) bool {
	return v != exp && (v == checker.Unsafe || v == checker.Deadlock)
}

// Unjudged are the runs that came out inconclusive though a verdict was
// expected: the scenario did not exercise the lock enough to judge it (too
// few acquisitions, a failpoint that never fired, the checker's time ran
// out). They are neither passed nor failed: Run skips them, with the reason.
func (r *Report) Unjudged() []*scenarios.Outcome {
	var out []*scenarios.Outcome
	for _, o := range r.Outcomes {
		if unjudged(o) != "" {
			out = append(out, o)
		}
	}
	return out
}

// Baseline records the report's verdicts, for Battery.Baseline (and
// `lockstorm run --baseline`) to gate later runs against.
func (r *Report) Baseline() *spec.Baseline { return scenarios.NewBaseline(r.Outcomes) }

// Rows are the report's runs as `lockstorm run --format json` prints them
// (reports.FromOutcome), in scenario order, each with the run folder kept
// for it (RunDir, empty when none was kept): a program's own main can hand
// them to the same tools as the CLI's rows (reports.Aggregate, a results
// file).
func (r *Report) Rows() []reports.Row {
	rows := make([]reports.Row, len(r.Outcomes))
	for i, o := range r.Outcomes {
		rows[i] = reports.FromOutcome(o)
		rows[i].RunDir = r.RunDirs[r.label(o)]
	}
	return rows
}

// WriteJSON writes Rows as JSON lines, one object per run on a line of its
// own (not an array), as `lockstorm run --format json` does.
func (r *Report) WriteJSON(w io.Writer) error {
	return reports.Write(w, r.Rows(), reports.FormatJSON, false)
}

// WriteMatrix prints one line per scenario: mode, verdict, expectation,
// where it came from, the mark (ok, DIFF, miss, skip for an inconclusive
// run, or — without an expectation) and the reason for the expectation.
func (r *Report) WriteMatrix(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tmode\tverdict\texpected\tfrom\tmark\tfindings (! not permitted)\twhy expected\n", r.Lock)
	for _, o := range r.Outcomes {
		row := reports.FromOutcome(o)
		exp, src := o.Expected, o.ExpectedSource
		if exp == "" {
			exp, src = reports.NoExpectation, reports.NoExpectation
		}
		mark := row.Mark()
		if unjudged(o) != "" {
			mark = "skip"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.label(o), o.Mode, o.Result.Verdict, exp, src, mark,
			reports.FindingsBrief(o.Result.Findings), o.ExpectedReason)
	}
	for name, why := range r.Skipped {
		fmt.Fprintf(tw, "%s\t\tskipped\t\t\t\t\t%s\n", name, why)
	}
	fmt.Fprintf(tw, "(%d scenarios in %.1f s)\n", len(r.Outcomes), r.Wall.Seconds())
	return tw.Flush()
}

// Run runs the battery against lock from a test: one subtest per scenario,
// failed when its verdict differs from its expectation, with the reason and
// the kept run folder in the message; the matrix is logged (go test -v
// shows it). Runs that cannot be judged (inconclusive, or no expectation
// from any source) and scenarios the backend cannot run are skipped
// subtests, with the reason. Setup failures fail t. Without redis-server the embedded backend is used.
// Only the scenarios `go test -run` and `-skip` select as subtests are run
// at all: -run 'TestMyLock/^del-race$' runs that one scenario.
func Run(t *testing.T, lock lockimpl.Info, b Battery) *Report {
	t.Helper()
	if b.Log == nil {
		b.Log = slog.New(slog.DiscardHandler)
	}
	// Only the subtests `go test -run/-skip` selects are run at all.
	rep, err := check(t.Context(), lock, b, subtestFilter(t))
	if err != nil {
		t.Fatalf("locktest: %s: %v", lock.Name, err)
		return nil
	}
	var m strings.Builder
	_ = rep.WriteMatrix(&m)
	t.Logf("battery against %s:\n%s", lock.Name, m.String())
	for _, o := range rep.Outcomes {
		t.Run(rep.label(o), func(t *testing.T) { judge(t, rep, o) })
	}
	for name, why := range rep.Skipped {
		t.Run(name, func(t *testing.T) { t.Skip(why) })
	}
	return rep
}

// judge fails t when o's verdict differs from its expectation and skips it
// when o could not be judged: inconclusive, or no expectation at all (the
// verdict is reported, never counted as a pass).
func judge(t testing.TB, rep *Report, o *scenarios.Outcome) {
	t.Helper()
	where := fmt.Sprintf("run folder: %s; replay: Battery{Scenarios: []string{%q}, Seed: %d}",
		orDefault(rep.RunDirs[rep.label(o)], "(not kept)"), o.Scenario, o.Seed)
	if why := failed(o); why != "" {
		t.Errorf("%s; %s", why, where)
	}
	if why := unjudged(o); why != "" {
		t.Skipf("%s; %s", why, where)
	}
	if o.Expected == "" {
		t.Skipf("%s × %s: no expectation (the spec does not name the lock, no rule matches its claims, no baseline): verdict %s reported, not judged",
			o.Scenario, o.Impl, o.Result.Verdict)
	}
}

// failed says why o is a failure, or "" when it is not.
func failed(o *scenarios.Outcome) string {
	row := reports.FromOutcome(o)
	if row.AsExpected || row.Missed() || unjudged(o) != "" {
		return ""
	}
	why := fmt.Sprintf("%s × %s: verdict %s, expected %s (from %s: %s)", o.Scenario, o.Impl, o.Result.Verdict,
		o.Expected, o.ExpectedSource, o.ExpectedReason)
	for _, f := range o.Result.Unpermitted() {
		why += fmt.Sprintf("; not permitted: %s ×%d (%s), first: %s", f.Kind, f.Count, f.Why, f.Witness)
	}
	if o.Result.Verdict != checker.Safe && o.Result.Reason != "" {
		why += "; " + o.Result.Reason
	}
	return why
}

// unjudged says why o could not be judged (inconclusive where a verdict was
// expected), or "".
func unjudged(o *scenarios.Outcome) string {
	if o.Result.Verdict != checker.Inconclusive || o.Expected == "" || o.Expected == checker.Inconclusive {
		return ""
	}
	return fmt.Sprintf("%s × %s: inconclusive, not judged (expected %s): %s", o.Scenario, o.Impl, o.Expected, o.Result.Reason)
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' {
			return '_'
		}
		return r
	}, s)
}
