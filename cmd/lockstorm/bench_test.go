package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/bench"
	"github.com/lockstorm/lockstorm/internal/cluster"
)

// TestBenchPartialOutput: an interrupted bench (SIGINT after its first row
// group) and a bench whose row fails both print the rows finished so far,
// the interrupted or failed row marked, and exit non-zero.
func TestBenchPartialOutput(t *testing.T) {
	cluster.StartForTest(t, 1) // the time-to-bug rows spawn redis-server
	bin := buildBinary(t)
	for _, tc := range []struct {
		name      string
		args      []string
		interrupt bool
		wantCode  int
		wantRows  []string // row ids with their status
	}{
		{"sigint", []string{"--only", "2,3", "--sizes", "2000", "--quick"}, true, 130,
			[]string{"2a info", "2b info", "2c info", "2d info", "3 error"}},
		{"failed-row", []string{"--only", "5,4", "--root", t.TempDir() + "/no-repo"}, false, 1,
			[]string{"4a error", "4b error", "5a info", "5b info", "5c info"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, append([]string{"bench", "--json"}, tc.args...)...)
			var out bytes.Buffer
			cmd.Stdout = &out
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var lines []string
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				lines = append(lines, sc.Text())
				if tc.interrupt && strings.Contains(sc.Text(), "[1/2] check done") {
					time.Sleep(time.Second) // into the time-to-bug runs
					if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d; stderr:\n%s", code, err, tc.wantCode, strings.Join(lines, "\n"))
			}
			if len(lines) == 0 || !strings.Contains(lines[0], "expected ~") {
				t.Errorf("no up-front expected duration: %q", lines)
			}
			var rep bench.Report
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatalf("partial JSON: %v\n%s", err, out.String())
			}
			var got []string
			for _, r := range rep.Rows {
				got = append(got, r.Row+" "+r.Status)
			}
			if strings.Join(got, ", ") != strings.Join(tc.wantRows, ", ") {
				t.Errorf("rows %q, want %q", got, tc.wantRows)
			}
		})
	}
}
