package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

func runCLI(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

// TestBadInputExitsTwo: bad specs and flags are refused before anything
// starts, with file, line and field, and exit code 2.
func TestBadInputExitsTwo(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nduration: 1s\nlock:\n  ttl: -5ms\nimpls: [set-nx-px]\n"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"negative ttl", []string{"run", "--scenario", bad}, "bad.yaml:4: lock.ttl: must not be negative"},
		{"unknown scenario", []string{"run", "--scenario", "nope"}, "unknown scenario"},
		{"unknown impl", []string{"run", "--scenario", "contention", "--impl", "zookeeper"}, "unknown implementation"},
		{"bad backend", []string{"run", "--scenario", "contention", "--backend", "docker"}, "unknown backend"},
		{"unknown command", []string{"explode"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, bin, tc.args...)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, tc.want)
			}
		})
	}
}

// TestRunJSONAndCheck runs a short scenario with --json on the embedded
// backend, checks the JSON fields, then re-checks the kept run folder
// offline and expects the same verdict.
func TestRunJSONAndCheck(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "short.yaml")
	os.WriteFile(spec, []byte(`name: short
clients: 4
keys: 1
duration: 500ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
expected: {set-nx-px: safe}
`), 0o644)
	stdout, stderr, code := runCLI(t, bin, "run", "--scenario", spec, "--seed", "3", "--backend", cluster.Embedded,
		"--json", "--keep", "all", "--out", filepath.Join(dir, "out"), "--junit", filepath.Join(dir, "junit.xml"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "embedded") {
		t.Errorf("the embedded backend was not announced: %q", stderr)
	}
	var row map[string]any
	if err := json.Unmarshal([]byte(stdout), &row); err != nil {
		t.Fatalf("%v: %q", err, stdout)
	}
	for _, k := range []string{"scenario", "impl", "seed", "backend", "verdict", "expected", "as_expected", "acquired",
		"acquires_per_sec", "acquire_p50_ms", "acquire_p99_ms", "overlaps", "lost_updates", "first_violation_ms", "witness"} {
		if _, ok := row[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if row["verdict"] != "safe" || row["backend"] != "embedded" || row["seed"].(float64) != 3 {
		t.Errorf("row = %v", row)
	}
	runDir, _ := row["run_dir"].(string)
	if runDir == "" {
		t.Fatal("no run_dir with --keep all")
	}
	out, stderr, code := runCLI(t, bin, "check", "--format", "json", runDir)
	if code != 0 {
		t.Fatalf("check exit %d: %s", code, stderr)
	}
	var again map[string]any
	if err := json.Unmarshal([]byte(out), &again); err != nil {
		t.Fatal(err)
	}
	if again["verdict"] != row["verdict"] || again["overlaps"] != row["overlaps"] {
		t.Errorf("check disagrees with run: %v vs %v", again, row)
	}
	checkJudgesHistoryAlone(t, bin, runDir, row)
}

// checkJudgesHistoryAlone: `lockstorm check` recomputes every column from
// history.jsonl (a doctored summary.json changes nothing), and each way the
// history file can be damaged is reported by line and makes the run
// inconclusive (exit 1: not the expected safe).
func checkJudgesHistoryAlone(t *testing.T, bin, runDir string, row map[string]any) {
	sumPath := filepath.Join(runDir, "summary.json")
	b, err := os.ReadFile(sumPath)
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	r := sum["row"].(map[string]any)
	r["acquired"], r["acquires_per_sec"], r["acquire_p50_ms"], r["first_violation_ms"] = 999999, 12345.0, 999.0, 1.0
	sum["result"].(map[string]any)["verdict"] = "unsafe"
	b, _ = json.Marshal(sum)
	os.WriteFile(sumPath, b, 0o644)
	out, stderr, code := runCLI(t, bin, "check", "--format", "json", runDir)
	if code != 0 {
		t.Fatalf("check exit %d: %s", code, stderr)
	}
	var again map[string]any
	if err := json.Unmarshal([]byte(out), &again); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"scenario", "impl", "seed", "verdict", "expected", "acquired", "acquires_per_sec",
		"acquire_p50_ms", "acquire_p99_ms", "handoff_p50_ms", "fairness", "overlaps", "net_lost_updates",
		"first_violation_ms", "error_replies", "replay"} {
		if fmt.Sprint(again[k]) != fmt.Sprint(row[k]) {
			t.Errorf("check's %s = %v, run's %v (summary.json must not matter)", k, again[k], row[k])
		}
	}

	hist, err := os.ReadFile(filepath.Join(runDir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(hist), "\n"), "\n")
	find := func(typ, f string, nth int) int { // line number of the nth (1-based) typ f entry
		for i, l := range lines {
			if strings.Contains(l, `"type":"`+typ+`"`) && strings.Contains(l, `"f":"`+f+`"`) {
				if nth--; nth == 0 {
					return i + 1
				}
			}
		}
		t.Fatalf("no %s %s in the history", typ, f)
		return 0
	}
	relInv := find("invoke", "release", 3)
	write := find("ok", "write", 2)
	cut := len(lines) / 2
	for _, tc := range []struct {
		name   string
		damage func(l []string) []string
		want   string
	}{
		{"removed release invoke", func(l []string) []string { return append(l[:relInv-1:relInv-1], l[relInv:]...) },
			fmt.Sprintf("line %d: entry %d is missing before this line", relInv, relInv-1)},
		{"cut at a line boundary", func(l []string) []string { return l[:cut] },
			fmt.Sprintf("line %d: the history ends here without the end record", cut)},
		{"duplicated line", func(l []string) []string { return append(l[:write:write], l[write-1:]...) },
			fmt.Sprintf("line %d: duplicate of line %d", write+1, write)},
		{"completion without invoke", func(l []string) []string {
			// The release's invoke line replaced by another process's stray
			// completion: the release completes without its invoke.
			l = append([]string(nil), l...)
			l[relInv-1] = `{"index":` + fmt.Sprint(relInv-1) + `,"type":"ok","process":9999,"client":0,"f":"write","key":"lock:0","time":1}`
			return l
		}, fmt.Sprintf("line %d: write lock:0 of process 9999 completes (ok) without its invoke", relInv)},
		{"malformed line", func(l []string) []string {
			l = append([]string(nil), l...)
			l[write-1] = l[write-1][:len(l[write-1])/2]
			return l
		}, fmt.Sprintf("line %d: not a history entry", write)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.jsonl")
			os.WriteFile(path, []byte(strings.Join(tc.damage(lines), "\n")+"\n"), 0o644)
			out, stderr, code := runCLI(t, bin, "check", "--format", "json", path)
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("%v: %q (stderr %q)", err, out, stderr)
			}
			reason, _ := got["reason"].(string)
			if code != 1 || got["verdict"] != "inconclusive" || !strings.Contains(reason, tc.want) {
				t.Errorf("exit %d, %v: %q; want exit 1, inconclusive and %q", code, got["verdict"], reason, tc.want)
			}
		})
	}
}

// TestSuitePageAndReport: a run of several jobs writes DIR/index.html
// linking its kept run folders; `report DIR` rebuilds the page from the
// folders alone and prints where each lock broke; a folder without runs is
// bad input.
func TestSuitePageAndReport(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	spec := filepath.Join(dir, "short.yaml")
	os.WriteFile(spec, []byte(`name: short
clients: 3
keys: 1
duration: 300ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
expected: {set-nx-px: safe}
`), 0o644)
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, bin, "run", "--scenario", spec, "--seeds", "2", "--backend", cluster.Embedded,
		"--keep", "all", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.html"))
	if err != nil {
		t.Fatalf("no suite page: %v\n%s", err, stdout)
	}
	for _, s := range []string{"seeds <b>2</b>", "backend <b>embedded</b>", "wall time <b>", "safe 2/2", `class="cell v-safe m-ok"`} {
		if !strings.Contains(string(page), s) {
			t.Errorf("suite page lacks %q", s)
		}
	}
	if !strings.Contains(stdout, "suite page: "+filepath.Join(out, "index.html")) {
		t.Errorf("the run did not say where the page is:\n%s", stdout)
	}
	report := filepath.Join(dir, "report.html")
	stdout, stderr, code = runCLI(t, bin, "report", "-o", report, out)
	if code != 0 || !strings.Contains(stdout, "set-nx-px\n  safe in every scenario it ran") || !strings.Contains(stdout, "(2 runs)") {
		t.Errorf("report: exit %d\n%s%s", code, stdout, stderr)
	}
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "safe 2/2") || !strings.Contains(string(b), `href="out/`) {
		t.Errorf("report page: %v", err)
	}
	_, stderr, code = runCLI(t, bin, "report", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "no run folders") {
		t.Errorf("empty folder: exit %d, %q", code, stderr)
	}
}
