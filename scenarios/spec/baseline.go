package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"
)

// Baseline is a lock's recorded verdict matrix: one entry per scenario ×
// implementation, with the mode and seed it was obtained with. Later runs
// given the baseline (Config.Baseline, `lockstorm run --baseline FILE`)
// expect the recorded verdicts, so a change of verdict is a difference: a
// regression gate for a lock nobody wrote expectations for.
type Baseline struct {
	// Version is the file format's version (1).
	Version int `json:"version"`
	// Recorded is when the baseline was taken.
	Recorded time.Time       `json:"recorded"`
	Entries  []BaselineEntry `json:"entries"`

	file string
}

// BaselineEntry is one recorded verdict.
type BaselineEntry struct {
	Scenario string `json:"scenario"`
	Impl     string `json:"impl"`
	Mode     string `json:"mode"`
	Seed     uint64 `json:"seed"`
	Backend  string `json:"backend"`
	Verdict  string `json:"verdict"`
}

// Sort orders the entries by scenario, then implementation.
func (b *Baseline) Sort() {
	sort.Slice(b.Entries, func(i, j int) bool {
		x, y := b.Entries[i], b.Entries[j]
		if x.Scenario != y.Scenario {
			return x.Scenario < y.Scenario
		}
		return x.Impl < y.Impl
	})
}

// Expect is the recorded verdict of scenario × impl, as an expectation
// whose reason says where it was recorded. A nil Baseline has none.
func (b *Baseline) Expect(scenario, impl string) (Expectation, bool) {
	if b == nil {
		return Expectation{}, false
	}
	for _, e := range b.Entries {
		if e.Scenario == scenario && e.Impl == impl {
			src := "baseline"
			if b.file != "" {
				src = b.file
			}
			return Expectation{Verdict: e.Verdict, Source: FromBaseline,
				Reason: fmt.Sprintf("recorded in %s (seed %d, %s backend)", src, e.Seed, e.Backend)}, true
		}
	}
	return Expectation{}, false
}

// WriteFile writes the baseline as indented JSON.
func (b *Baseline) WriteFile(path string) error {
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	return nil
}

// ReadBaseline reads a file written by WriteFile; unknown fields, bad
// verdicts and duplicate entries are refused.
func ReadBaseline(path string) (*Baseline, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("baseline: %w", err)
	}
	var b Baseline
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if b.Version != 1 {
		return nil, fmt.Errorf("%s: version %d: want 1", path, b.Version)
	}
	seen := map[[2]string]bool{}
	for i, e := range b.Entries {
		if e.Scenario == "" || e.Impl == "" {
			return nil, fmt.Errorf("%s: entries.%d: scenario and impl are required", path, i)
		}
		if !validVerdict(e.Verdict) {
			return nil, fmt.Errorf("%s: entries.%d.verdict: %q: want safe, unsafe, deadlock or inconclusive", path, i, e.Verdict)
		}
		k := [2]string{e.Scenario, e.Impl}
		if seen[k] {
			return nil, fmt.Errorf("%s: entries.%d: %s × %s recorded twice", path, i, e.Scenario, e.Impl)
		}
		seen[k] = true
	}
	b.file = path
	return &b, nil
}
