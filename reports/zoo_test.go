package reports

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

func zooRow(impl, scen string, seed uint64, verdict, expected, runDir string) Row {
	return Row{Identity: history.Identity{Scenario: scen, Impl: impl, Seed: seed, Expected: expected},
		Verdict: verdict, AsExpected: verdict == expected, Reason: "r", RunDir: runDir,
		Replay: "lockstorm run --scenario " + scen + " --impl " + impl}
}

// TestZooMatrix: a cell is the worst verdict over its seeds, counts the
// seeds not as expected, and a pair that never ran is skipped.
func TestZooMatrix(t *testing.T) {
	cases := []struct {
		name          string
		rows          []Row
		impl, scen    string
		verdict       string
		unexpected, n int
	}{
		{"one safe", []Row{zooRow("a", "s", 1, "safe", "safe", "")}, "a", "s", "safe", 0, 1},
		{"unsafe outweighs safe", []Row{zooRow("a", "s", 1, "safe", "unsafe", ""), zooRow("a", "s", 2, "unsafe", "unsafe", "")}, "a", "s", "unsafe", 1, 2},
		{"deadlock outweighs inconclusive", []Row{zooRow("a", "s", 2, "inconclusive", "safe", ""), zooRow("a", "s", 1, "deadlock", "safe", "")}, "a", "s", "deadlock", 2, 2},
		{"no expectation is never unexpected", []Row{zooRow("a", "s", 1, "unsafe", "", "")}, "a", "s", "unsafe", 0, 1},
		{"skipped pair", []Row{zooRow("a", "s", 1, "safe", "safe", ""), zooRow("b", "t", 1, "safe", "safe", "")}, "a", "t", "skipped", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			libs, scens, cells := ZooMatrix(c.rows)
			i, j := indexOf(libs, c.impl), indexOf(scens, c.scen)
			if i < 0 || j < 0 {
				t.Fatalf("libs %v scens %v: no %s × %s", libs, scens, c.impl, c.scen)
			}
			got := cells[i][j]
			if got.Verdict != c.verdict || got.Unexpected != c.unexpected || len(got.Runs) != c.n {
				t.Fatalf("cell %+v: want %s, %d unexpected, %d runs", got, c.verdict, c.unexpected, c.n)
			}
			for k := 1; k < len(got.Runs); k++ {
				if got.Runs[k-1].Seed > got.Runs[k].Seed {
					t.Fatalf("runs not in seed order: %+v", got.Runs)
				}
			}
		})
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// TestZooPage: every cell is coloured by its verdict and links to a
// witness that exists on the page, carrying the replay command and,
// when the run folder was kept, its spec and history relative to the page.
func TestZooPage(t *testing.T) {
	rows := []Row{
		zooRow("lib@1", "pause-past-ttl", 1, "unsafe", "safe", "/out/zoo/lib@1/run-1"),
		zooRow("lib@1", "contention", 1, "safe", "safe", ""),
		zooRow("other@2", "contention", 1, "inconclusive", "safe", ""),
	}
	var b strings.Builder
	if err := WriteZooPage(&b, rows, "/out/zoo", "zoo"); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`class="unsafe" href="#w0-1"`, `id="w0-1"`, // lib@1 × pause-past-ttl
		`class="safe" href="#w0-0"`, `id="w0-0"`,
		`class="inconclusive" href="#w1-0"`, `id="w1-0"`,
		`class="skipped" title="other@2 × pause-past-ttl: not run"`, // no witness to link
		`href="lib@1/run-1/scenario.yaml"`, `href="lib@1/run-1/history.jsonl"`,
		"lockstorm run --scenario pause-past-ttl --impl lib@1",
		`unsafe: 1`, `skipped: 1`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// A relative page folder still links an absolute run folder relatively.
	if got, want := zooLink("out/zoo", mustAbs(t, "build/zoo/lib@1/run-1"), "history.jsonl"), "../../build/zoo/lib@1/run-1/history.jsonl"; got != want {
		t.Errorf("zooLink = %q, want %q", got, want)
	}
	// Every link to a witness has its target on the page.
	links := regexp.MustCompile(`href="#(w\d+-\d+)"`).FindAllStringSubmatch(page, -1)
	if len(links) != 3 {
		t.Errorf("%d cells link to a witness, want 3 (the skipped one has none)", len(links))
	}
	for _, m := range links {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("cell links to #%s, which the page lacks", m[1])
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
