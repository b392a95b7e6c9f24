package reports

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

var updatePages = flag.Bool("update-pages", false, "rewrite the pages' goldens in testdata/")

// goldenPages renders the timeline and the suite page for fixed inputs that
// reach every element they draw: a witness with a zoom panel, faults healed
// and open, harness stalls, Sentinel marks, server events, a crash, findings,
// the bar cap; a suite with every verdict and mark, several seeds, a run
// without a folder and a time-scaled cell.
func goldenPages(t *testing.T) map[string]string {
	t.Helper()
	pages := map[string]string{}
	render := func(name string, write func(io.Writer) error) {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		pages[name] = b.String()
	}

	h := withFault(readGolden(t, "overlap.jsonl"), faultDesc, 802_000_000, 905_000_000)
	var key string
	var at int64
	for _, op := range h {
		if op.F == history.FAcquire && op.Type == history.Ok {
			key, at = op.Key, op.Time
			break
		}
	}
	h = append(h,
		history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer, Key: key, Value: "set", Node: "n1", Owner: "tok<1>", Time: at},
		history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer, Key: key, Value: "expired", Node: "n1", Time: at + 5e6},
		history.Op{Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer, Key: key, Value: "del", Node: "n2", Time: at + 7e6},
		history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Value: "s1 +sdown master n1 n1", Time: 300e6},
		history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Value: "s2 +switch-master n1 n1 r1", Time: 850e6},
		history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStall, N: 90e6, Time: 500e6},
		history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: 1, F: history.FStall, N: 60e6, Time: 700e6},
		history.Op{Type: history.Invoke, Process: 9, Client: 9, F: history.FAcquire, Key: key, Value: "t9", Time: 940e6},
		history.Op{Type: history.Ok, Process: 9, Client: 9, F: history.FAcquire, Key: key, Value: "t9", Time: 950e6},
		history.Op{Type: history.Ok, Process: 9, Client: 9, F: history.FCrash, Time: 990e6},
	)
	slices.SortStableFunc(h, func(a, b history.Op) int { return cmp.Compare(a.Time, b.Time) })
	for i := range h {
		h[i].Index = i
	}
	res := checker.Check(h, history.Options{})
	res.Findings = append(res.Findings,
		checker.Finding{Kind: history.KindTwoHolders, Count: 3, FirstNs: 810e6, Witness: "c1 & c2 both held <lock:0>", Permitted: true, Why: "expected"},
		checker.Finding{Kind: history.KindReleaseFalseSuccess, Count: 2, FirstNs: -1, Witness: "c1's release \"ok\"", Why: "release is owner-checked"})
	if res.Witness != nil {
		res.Witness.A.Master, res.Witness.B.Master = "n1", "r1"
	}
	render("timeline-overlap.html", func(w io.Writer) error { return WriteTimeline(w, h, res, "overlap <run> & co") })

	long := longHistory(5000)
	lres := checker.Check(long, history.Options{})
	render("timeline-long.html", func(w io.Writer) error { return WriteTimeline(w, long, lres, "long") })

	nw := withFault(readGolden(t, "good.jsonl"), faultDesc, 1e6, -1)
	nres := checker.Check(nw, history.Options{})
	nres.Witness = nil
	render("timeline-nowitness.html", func(w io.Writer) error { return WriteTimeline(w, nw, nres, "no witness") })

	_, runs := suiteFixture(t)
	scaled := runs[len(runs)-1]
	scaled.Row.Scenario, scaled.Row.TimeScale = "scaled", &history.TimeScale{Factor: 10, Granularity: time.Second}
	runs = append(runs, scaled)
	info := SuiteInfo{Backend: "embedded", Seeds: 3, Date: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Version: "v0.0.0-test"}
	render("suite.html", func(w io.Writer) error { return WriteSuite(w, runs, info) })
	info.Wall, info.Title = 83*time.Second, "suite <b>"
	render("suite-wall.html", func(w io.Writer) error { return WriteSuite(w, runs, info) })
	return pages
}

// TestPagesMatchGoldens: the pages draw what the goldens (rendered by the
// string-building code they replaced) drew: the same elements in the same
// order with the same attributes and the same text, entities decoded and
// whitespace between elements ignored.
func TestPagesMatchGoldens(t *testing.T) {
	for name, page := range goldenPages(t) {
		path := filepath.Join("testdata", name)
		if *updatePages {
			if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := visible(page)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		exp, err := visible(string(want))
		if err != nil {
			t.Fatalf("%s golden: %v", name, err)
		}
		if d := firstDiff(got, exp); d != "" {
			t.Errorf("%s differs from its golden: %s", name, d)
		}
	}
}

// visible is a page as a list of lines, one per start tag (name and sorted
// attributes, entities decoded), end tag and non-blank text node.
func visible(page string) ([]string, error) {
	d := xml.NewDecoder(strings.NewReader(page))
	d.Strict, d.AutoClose, d.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	var out []string
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			var as []string
			for _, a := range tok.Attr {
				as = append(as, fmt.Sprintf("%s=%q", a.Name.Local, a.Value))
			}
			slices.Sort(as)
			out = append(out, "<"+tok.Name.Local+" "+strings.Join(as, " ")+">")
		case xml.EndElement:
			out = append(out, "</"+tok.Name.Local+">")
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				out = append(out, s)
			}
		}
	}
}

func firstDiff(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("item %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		return fmt.Sprintf("%d items, want %d", len(got), len(want))
	}
	return ""
}
