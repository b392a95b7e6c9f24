package reports

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
)

// Keep policies for run folders.
const (
	KeepFailures = "failures"
	KeepAll      = "all"
	KeepNone     = "none"
)

// Summary is summary.json: the row, the full check result and the checker
// options, so `lockstorm check` can re-judge the history the same way.
type Summary struct {
	Row     Row             `json:"row"`
	Result  checker.Result  `json:"result"`
	Options history.Options `json:"checker_options"`
	// Version is the lockstorm that ran it (`lockstorm replay` says when
	// it differs from its own).
	Version string `json:"lockstorm_version,omitempty"`
}

// Files in a run folder.
const (
	HistoryFile   = "history.jsonl"
	SummaryFile   = "summary.json"
	ScenarioFile  = "scenario.yaml"
	TimelineFile  = "timeline.html"
	PorcupineFile = "porcupine.html"
)

// ShouldKeep applies the keep policy to an outcome.
func ShouldKeep(keep string, o *scenarios.Outcome) bool {
	switch keep {
	case KeepAll:
		return true
	case KeepNone:
		return false
	}
	return !o.AsExpected() || o.Result.Verdict != checker.Safe
}

// RunDirPath is where WriteRunDir puts o's run folder, so the path can be
// shown with the verdicts before the folder is written.
func RunDirPath(root string, o *scenarios.Outcome, when time.Time) string {
	name := fmt.Sprintf("%s-%s-%s-s%d", when.Format("20060102-150405.000"), o.Scenario, o.Impl, o.Seed)
	return filepath.Join(root, strings.ReplaceAll(name, "/", "_"))
}

// WriteRunDir writes the run folder for o under root and returns its path:
// history.jsonl, scenario.yaml (as resolved, seed included), summary.json,
// and for a run with a violation timeline.html and porcupine.html.
func WriteRunDir(root string, o *scenarios.Outcome, when time.Time) (string, error) {
	dir := RunDirPath(root, o, when)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("run folder: %w", err)
	}
	if err := history.WriteFile(filepath.Join(dir, HistoryFile), o.History); err != nil {
		return "", err
	}
	if o.Spec != nil {
		resolved := *o.Spec
		resolved.Seed = o.Seed
		b, err := resolved.YAML()
		if err != nil {
			return "", fmt.Errorf("scenario.yaml: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, ScenarioFile), b, 0o644); err != nil {
			return "", err
		}
	}
	sum := Summary{Row: FromOutcome(o), Result: o.Result, Options: o.CheckOptions, Version: LockstormVersion()}
	b, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, SummaryFile), append(b, '\n'), 0o644); err != nil {
		return "", err
	}
	if o.Result.Verdict != checker.Safe || o.Result.Overlaps > 0 {
		if err := WriteTimelineFile(filepath.Join(dir, TimelineFile), o.History, o.Result, fmt.Sprintf("%s × %s (seed %d)", o.Scenario, o.Impl, o.Seed)); err != nil {
			return "", err
		}
		if err := writePorcupine(filepath.Join(dir, PorcupineFile), o.History, o.CheckOptions); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func writePorcupine(path string, h history.History, opts history.Options) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := checker.Visualize(h, opts, f); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("porcupine visualization: %w", err)
	}
	return f.Close()
}

// ReadRunDir loads a run folder (or a bare history.jsonl, whose summary is
// then absent).
func ReadRunDir(path string) (*Summary, history.History, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	hist := path
	if st.IsDir() {
		hist = filepath.Join(path, HistoryFile)
	}
	h, err := history.ReadFile(hist)
	if err != nil {
		return nil, nil, err
	}
	sumPath := filepath.Join(filepath.Dir(hist), SummaryFile)
	b, err := os.ReadFile(sumPath)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, h, nil
		}
		return nil, nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", sumPath, err)
	}
	return &s, h, nil
}

// ReadRunDirChecked loads a run folder (or a bare history.jsonl) for
// `lockstorm check`: the history line by line, a bad line being a problem
// of the history rather than an error, and summary.json when there is one
// (only a history without a header needs it). The error is for a path that
// cannot be read at all.
func ReadRunDirChecked(path string) (*Summary, history.Parsed, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, history.Parsed{}, err
	}
	hist := path
	if st.IsDir() {
		hist = filepath.Join(path, HistoryFile)
	}
	p, err := history.ReadFileChecked(hist)
	if err != nil {
		return nil, p, err
	}
	sumPath := filepath.Join(filepath.Dir(hist), SummaryFile)
	b, err := os.ReadFile(sumPath)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, p, nil
		}
		return nil, p, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, p, fmt.Errorf("%s: %w", sumPath, err)
	}
	return &s, p, nil
}
