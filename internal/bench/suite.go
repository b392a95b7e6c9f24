package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Suite-time goals.
const (
	GoalScenarios = 90 * time.Second
	GoalGate      = 5 * time.Minute
)

// SuiteTime runs `make -C root scenarios` and `make -C root gate` one after
// the other and reports each one's wall time. A target that exits 1 (a
// verdict differs) is still timed; one that cannot run is an error row.
func SuiteTime(ctx context.Context, root string, progress Progress) []Row {
	targets := []struct {
		id, target string
		goal       time.Duration
	}{{"4a", "scenarios", GoalScenarios}, {"4b", "gate", GoalGate}}
	var rows []Row
	for _, t := range targets {
		progress.say("suite: make -C %s %s", root, t.target)
		var out bytes.Buffer
		cmd := exec.CommandContext(ctx, "make", "-C", root, t.target)
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		el := time.Since(start)
		r := Row{Row: t.id, Name: "suite/" + t.target, Measure: "make " + t.target + " wall time",
			Figure: el.Seconds(), Unit: "s", Goal: fmt.Sprintf("< %v", t.goal)}
		var ee *exec.ExitError
		switch {
		case err == nil:
			r.judge(el < t.goal)
			r.Note = "exit 0"
		case errors.As(err, &ee) && ee.ExitCode() == 1 || errors.As(err, &ee) && ee.ExitCode() == 2 && strings.Contains(out.String(), "verdicts differ"):
			r.judge(el < t.goal)
			r.Note = fmt.Sprintf("make exited %d (verdicts differ): timed anyway", ee.ExitCode())
		default:
			r.Status = Failed
			r.Note = fmt.Sprintf("make %s: %v: %s", t.target, err, lastLines(out.String(), 3))
		}
		rows = append(rows, r)
	}
	return rows
}

// SuiteNotRun is the row group 4 placeholder when the suite is not asked for.
func SuiteNotRun() []Row {
	return []Row{
		{Row: "4a", Name: "suite/scenarios", Measure: "make scenarios wall time", FigureText: "not run (use --suite)", Goal: fmt.Sprintf("< %v", GoalScenarios), Status: NotRun},
		{Row: "4b", Name: "suite/gate", Measure: "make gate wall time", FigureText: "not run (use --suite)", Goal: fmt.Sprintf("< %v", GoalGate), Status: NotRun},
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
