package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/reports"
)

// TestMarksAgree: for every mark a row can get, the table's mark, the
// exit code of run and of check on its run folder, and the JUnit file
// agree: only DIFF fails (exit 1, a <failure>); a miss is reported (a
// <skipped> with the reason) and exits 0, as do ok and no expectation.
// Each mark comes from a real half-second run on the embedded backend of
// a spec whose expectation set-nx-px (safe there) meets or not.
func TestMarksAgree(t *testing.T) {
	bin := buildBinary(t)
	for _, tc := range []struct {
		mark, spec    string
		exit          int
		failure, skip bool
	}{
		{"ok", "mode: scheduled\nexpected: {set-nx-px: safe}\n", 0, false, false},
		{"DIFF", "mode: scheduled\nexpected: {set-nx-px: unsafe}\n", 1, true, false},
		{"DIFF", "mode: random\ngated: true\nexpected: {set-nx-px: unsafe}\n", 1, true, false},
		{"miss", "mode: random\ngated: false\nexpected: {set-nx-px: unsafe}\n", 0, false, true},
		{reports.NoExpectation, "mode: scheduled\n", 0, false, false},
	} {
		t.Run(tc.mark+" "+regexp.MustCompile(`\s+`).ReplaceAllString(tc.spec, " "), func(t *testing.T) {
			sub := t.TempDir()
			spec := filepath.Join(sub, "s.yaml")
			os.WriteFile(spec, []byte(`name: marks
clients: 4
keys: 1
duration: 500ms
lock: {ttl: 500ms, retry_delay: 5ms, wait_timeout: 1s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
`+tc.spec), 0o644)
			junit := filepath.Join(sub, "junit.xml")
			out := filepath.Join(sub, "out")
			stdout, stderr, code := runCLI(t, bin, "run", "--scenario", spec, "--backend", cluster.Embedded, "--keep", "all",
				"--out", out, "--junit", junit)
			row := regexp.MustCompile(`(?m)^  set-nx-px +(\S+) +(\S+) +(\S+)`).FindStringSubmatch(stdout)
			if row == nil || row[1] != "safe" {
				t.Fatalf("no safe set-nx-px row (exit %d): %s%s", code, stdout, stderr)
			}
			if row[3] != tc.mark || code != tc.exit {
				t.Errorf("run: mark %s, exit %d; want %s and %d\n%s", row[3], code, tc.mark, tc.exit, stdout)
			}
			var doc struct {
				Suite struct {
					Failures int `xml:"failures,attr"`
					Skipped  int `xml:"skipped,attr"`
					Cases    []struct {
						Failure *struct{} `xml:"failure"`
						Skipped *struct {
							Message string `xml:"message,attr"`
						} `xml:"skipped"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			b, err := os.ReadFile(junit)
			if err == nil {
				err = xml.Unmarshal(b, &doc)
			}
			if err != nil || len(doc.Suite.Cases) != 1 {
				t.Fatalf("junit: %v: %s", err, b)
			}
			c := doc.Suite.Cases[0]
			if (c.Failure != nil) != tc.failure || (doc.Suite.Failures == 1) != tc.failure {
				t.Errorf("junit failure = %v (suite failures %d), want %v:\n%s", c.Failure != nil, doc.Suite.Failures, tc.failure, b)
			}
			if (c.Skipped != nil) != tc.skip || (doc.Suite.Skipped == 1) != tc.skip {
				t.Errorf("junit skipped = %v (suite skipped %d), want %v:\n%s", c.Skipped != nil, doc.Suite.Skipped, tc.skip, b)
			}
			// check judges the kept folder again: same mark, same exit.
			folders, _ := filepath.Glob(filepath.Join(out, "*-marks-*"))
			if len(folders) != 1 {
				t.Fatalf("run folders %v, want one", folders)
			}
			stdout, _, code = runCLI(t, bin, "check", folders[0])
			row = regexp.MustCompile(`(?m)^  set-nx-px +(\S+) +(\S+) +(\S+)`).FindStringSubmatch(stdout)
			if row == nil || row[3] != tc.mark || code != tc.exit {
				t.Errorf("check: %v, exit %d; want mark %s and exit %d\n%s", row, code, tc.mark, tc.exit, stdout)
			}
		})
	}
}
