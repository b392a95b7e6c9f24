package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

func fptr(f float64) *float64 { return &f }

// sampleRows covers a violation not as expected, a clean run, and awkward
// text (a pipe, a newline, quotes, XML metacharacters).
func sampleRows() []Row {
	return []Row{
		{Identity: history.Identity{Scenario: "del-race", Impl: "setnx-del", Seed: 1, Backend: "redis-server", Mode: "scheduled", Gated: true, Expected: "safe"}, Verdict: "unsafe", AsExpected: false, Reason: "2 overlapping holds; c1 & c2 <both>",
			Acquired: 216, AcquiresPerSec: 108.5, AcquireP50Ms: 2.26, AcquireP99Ms: 132.27, HandoffP50Ms: 1.5,
			Fairness: 0.96, Overlaps: 2, NetLostUpdates: 1, LostUpdates: 1, FirstViolationMs: fptr(341.62),
			Evidence: "c1 and c2 both held lock:0 at 341.6 ms for 3.2 ms; 1 stale write",
			Witness:  "c1 (p1) held lock:0 \"from\" 337.0 ms…", Replay: "lockstorm run --scenario del-race --impl setnx-del --seed 1 --backend redis-server",
			RunDir: "/tmp/x/run"},
		{Identity: history.Identity{Scenario: "contention", Impl: "set-nx-px", Seed: 7, Backend: "embedded", Mode: "random", Expected: "safe"}, Verdict: "safe", AsExpected: true, Reason: "no overlap", Acquired: 10, Fairness: 1},
		{Identity: history.Identity{Scenario: "odd|name", Impl: "redlock", Seed: 3, Backend: "embedded", Mode: "random", Expected: "safe"}, Verdict: "deadlock", AsExpected: false, Reason: "line one\nline two", FirstViolationMs: fptr(0)},
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	rows := sampleRows()
	var buf bytes.Buffer
	if err := Write(&buf, rows, FormatJSON, true); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("json output has colour codes")
	}
	dec := json.NewDecoder(&buf)
	for i, want := range rows {
		var got Row
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("row %d round trip:\n got %+v\nwant %+v", i, got, want)
		}
	}
	var extra Row
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		t.Errorf("after %d rows: %v, want EOF", len(rows), err)
	}
	// One object per line, with the stable snake_case names.
	buf.Reset()
	_ = Write(&buf, rows, FormatJSON, false)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(rows) {
		t.Fatalf("%d lines, want %d", len(lines), len(rows))
	}
	for _, k := range []string{`"scenario":`, `"as_expected":`, `"first_violation_ms":`, `"lost_updates":`, `"net_lost_updates":`, `"stale_writes":`,
		`"overlap_intervals":`, `"overlap_ms":`, `"evidence":`, `"acquires_per_sec":`} {
		if !strings.Contains(lines[0], k) {
			t.Errorf("json line lacks %s: %s", k, lines[0])
		}
	}
}

// splitMarkdownRow splits a GitHub table row into cells, honouring \|.
func splitMarkdownRow(t *testing.T, line string) []string {
	t.Helper()
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") {
		t.Fatalf("markdown line does not start and end with |: %q", line)
	}
	var cells []string
	var cur strings.Builder
	inner := line[1 : len(line)-1]
	for i := 0; i < len(inner); i++ {
		switch {
		case inner[i] == '\\' && i+1 < len(inner) && inner[i+1] == '|':
			cur.WriteString(`\|`)
			i++
		case inner[i] == '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(inner[i])
		}
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

func TestWriteMarkdownIsGitHubTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []Row
	}{
		{"rows", sampleRows()},
		{"one row", sampleRows()[1:2]},
		{"no rows", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, tc.rows, FormatMarkdown, true); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if strings.Contains(out, "\x1b[") {
				t.Error("markdown has colour codes although it is never a terminal")
			}
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			if len(lines) != 2+len(tc.rows) {
				t.Fatalf("%d lines, want header + separator + %d rows:\n%s", len(lines), len(tc.rows), out)
			}
			head := splitMarkdownRow(t, lines[0])
			if !reflect.DeepEqual(head, header) {
				t.Errorf("header cells %q, want %q", head, header)
			}
			sep := splitMarkdownRow(t, lines[1])
			// GFM: hyphens, optionally a colon at either end (tablewriter
			// writes :-: for a one-character column).
			sepCell := regexp.MustCompile(`^:?-+:?$`)
			for i, c := range sep {
				if !sepCell.MatchString(c) {
					t.Errorf("separator cell %d is %q, want |---|", i, c)
				}
			}
			for i, l := range lines {
				if n := len(splitMarkdownRow(t, l)); n != len(header) {
					t.Errorf("line %d has %d cells, want %d: %q", i, n, len(header), l)
				}
			}
			col := map[string]int{}
			for i, h := range header {
				col[h] = i
			}
			for i, r := range tc.rows {
				cells := splitMarkdownRow(t, lines[2+i])
				want := strings.ReplaceAll(r.Scenario, "|", `\|`)
				if cells[col["scenario"]] != want || cells[col["impl"]] != r.Impl || cells[col["verdict"]] != r.Verdict {
					t.Errorf("row %d cells %q, want %s/%s/%s", i, cells, want, r.Impl, r.Verdict)
				}
				if mark := cells[col["mark"]]; mark != map[bool]string{true: "ok", false: "DIFF"}[r.AsExpected] {
					t.Errorf("row %d mark %q with AsExpected %v", i, mark, r.AsExpected)
				}
			}
		})
	}
}

func TestWriteTextTable(t *testing.T) {
	rows := sampleRows()
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*m")
	for _, color := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "color"}[color], func(t *testing.T) {
			var buf bytes.Buffer
			if err := Write(&buf, rows, FormatTable, color); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			if has := ansi.MatchString(out); has != color {
				t.Fatalf("colour codes present = %v, want %v:\n%s", has, color, out)
			}
			plain := ansi.ReplaceAllString(out, "")
			for _, r := range rows {
				var line string
				for _, l := range strings.Split(plain, "\n") {
					if strings.Contains(l, " "+r.Impl+" ") {
						line = l
					}
				}
				if line == "" {
					t.Fatalf("no line for %s/%s:\n%s", r.Scenario, r.Impl, plain)
				}
				for _, s := range []string{r.Verdict, r.Expected} {
					if !strings.Contains(line, s) {
						t.Errorf("%s/%s line lacks %q: %s", r.Scenario, r.Impl, s, line)
					}
				}
				if !strings.Contains(plain, r.Scenario) && !strings.Contains(plain, strings.SplitN(r.Scenario, "|", 2)[0]) {
					t.Errorf("table lacks scenario %q", r.Scenario)
				}
				if diff := strings.Contains(line, "DIFF"); diff == r.AsExpected {
					t.Errorf("%s/%s: DIFF mark = %v with AsExpected = %v: %s", r.Scenario, r.Impl, diff, r.AsExpected, line)
				}
			}
			if color && !strings.Contains(out, "\x1b[31munsafe\x1b[0m") {
				t.Error("unsafe verdict not red")
			}
		})
	}
	// The default format is the table.
	var a, b bytes.Buffer
	_ = Write(&a, rows, "", false)
	_ = Write(&b, rows, FormatTable, false)
	if a.String() != b.String() {
		t.Error(`format "" differs from "table"`)
	}
}

func TestWriteUnknownFormat(t *testing.T) {
	if err := Write(io.Discard, sampleRows(), "csv", false); err == nil || !strings.Contains(err.Error(), "csv") {
		t.Errorf("err = %v, want unknown format", err)
	}
}

func TestJUnitRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		rows []Row
	}{
		{"mixed", sampleRows()},
		{"all pass", sampleRows()[1:2]},
		{"empty", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cases []JUnitCase
			wantFail := map[string]string{}
			var wantNames []string
			for i, r := range tc.rows {
				cases = append(cases, JUnitCase{Row: r, Seconds: float64(i) + 0.5})
				name := r.Scenario + "/" + r.Impl
				wantNames = append(wantNames, name)
				if !r.AsExpected {
					wantFail[name] = "expected " + r.Expected + ", got " + r.Verdict
				}
			}
			var buf bytes.Buffer
			if err := WriteJUnit(&buf, cases); err != nil {
				t.Fatal(err)
			}
			raw := buf.Bytes()

			// Well-formed XML: every token decodes.
			d := xml.NewDecoder(bytes.NewReader(raw))
			for {
				_, err := d.Token()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed XML: %v\n%s", err, raw)
				}
			}
			// The structure CI reads.
			var doc struct {
				Suites []struct {
					Tests    int `xml:"tests,attr"`
					Failures int `xml:"failures,attr"`
					Cases    []struct {
						Name    string `xml:"name,attr"`
						Failure *struct {
							Message string `xml:"message,attr"`
						} `xml:"failure"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err := xml.Unmarshal(raw, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc.Suites) != 1 {
				t.Fatalf("%d testsuites, want 1", len(doc.Suites))
			}
			s := doc.Suites[0]
			if len(s.Cases) != len(tc.rows) || s.Tests != len(tc.rows) {
				t.Errorf("%d testcases, tests=%d; want %d", len(s.Cases), s.Tests, len(tc.rows))
			}
			nf := 0
			for _, c := range s.Cases {
				if c.Failure != nil {
					nf++
				}
			}
			if s.Failures != len(wantFail) || nf != len(wantFail) {
				t.Errorf("failures attr %d, failure elements %d; want %d", s.Failures, nf, len(wantFail))
			}

			names, fails, err := ReadJUnit(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if len(names) != len(wantNames) || (len(names) > 0 && !reflect.DeepEqual(names, wantNames)) {
				t.Errorf("case names %q, want %q", names, wantNames)
			}
			if !reflect.DeepEqual(fails, wantFail) {
				t.Errorf("failures %q, want %q", fails, wantFail)
			}
		})
	}
}

func TestReadJUnitRejectsGarbage(t *testing.T) {
	if _, _, err := ReadJUnit(strings.NewReader("<testsuites><testsuite>")); err == nil {
		t.Error("truncated XML read without error")
	}
}

func TestWriteJUnitFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnitFile(path, []JUnitCase{{Row: sampleRows()[0], Seconds: 2}}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	names, fails, err := ReadJUnit(f)
	if err != nil || len(names) != 1 || fails["del-race/setnx-del"] != "expected safe, got unsafe" {
		t.Errorf("names %q, failures %q, err %v", names, fails, err)
	}
}

// withFault returns h with a nemesis fault (id 1) from..to (to < 0: never
// healed), entries inserted in time order and indexes renumbered.
func withFault(h history.History, desc string, from, to int64) history.History {
	ins := []history.Op{{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStart, Value: desc, N: 1, Time: from}}
	if to >= 0 {
		ins = append(ins, history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: -1, F: history.FStop, Value: desc, N: 1, Time: to})
	}
	var out history.History
	for _, op := range h {
		for len(ins) > 0 && ins[0].Time <= op.Time {
			out = append(out, ins[0])
			ins = ins[1:]
		}
		out = append(out, op)
	}
	out = append(out, ins...)
	for i := range out {
		out[i].Index = i
	}
	return out
}

func readGolden(t *testing.T, name string) history.History {
	t.Helper()
	h, err := history.ReadFile(filepath.Join("..", "checker", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return h
}

const tinySpec = `name: tiny
mode: scheduled
seed: 7
duration: 1s
clients: 2
lock:
  ttl: 100ms
failpoints:
  - {client: 0, point: cs/hold, times: 1, fault: {kind: pause, clients: [0], for: 300ms}}
impls: [setnx-del]
expected:
  setnx-del: unsafe
`

const faultDesc = "pause clients=[1] on=clients [1]"

func outcome(t *testing.T, h history.History, spec *spec.Spec, expected string) *scenarios.Outcome {
	t.Helper()
	opts := history.Options{DeadlockBound: 5 * time.Second, Timeout: 2 * time.Second}
	return &scenarios.Outcome{Identity: history.Identity{Scenario: "tiny", Impl: "setnx-del", Seed: 42, Backend: "embedded", Mode: "scheduled", Gated: true, Expected: expected}, Result: checker.Check(h, opts), Elapsed: 1500 * time.Millisecond,
		CheckOptions: opts, History: h, Spec: spec}
}

func TestRunDirRoundTrip(t *testing.T) {
	sp, err := spec.Parse("tiny.yaml", []byte(tinySpec))
	if err != nil {
		t.Fatal(err)
	}
	overlap := withFault(readGolden(t, "overlap.jsonl"), faultDesc, 802_000_000, 905_000_000)
	for _, tc := range []struct {
		name      string
		h         history.History
		spec      *spec.Spec
		expected  string
		verdict   string
		violation bool
	}{
		{"violation with spec and fault", overlap, sp, checker.Unsafe, checker.Unsafe, true},
		{"violation, no spec", readGolden(t, "overlap.jsonl"), nil, "", checker.Unsafe, true},
		{"safe, no spec", readGolden(t, "good.jsonl"), nil, "", checker.Safe, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := outcome(t, tc.h, tc.spec, tc.expected)
			if o.Result.Verdict != tc.verdict {
				t.Fatalf("verdict %q (%s), want %q", o.Result.Verdict, o.Result.Reason, tc.verdict)
			}
			root := t.TempDir()
			when := time.Date(2025, 3, 4, 5, 6, 7, 890e6, time.UTC)
			dir, err := WriteRunDir(root, o, when)
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(root, "20250304-050607.890-tiny-setnx-del-s42"); dir != want {
				t.Errorf("dir %q, want %q", dir, want)
			}

			sum, h, err := ReadRunDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := Summary{Row: FromOutcome(o), Result: o.Result, Options: o.CheckOptions, Version: LockstormVersion()}
			if sum == nil || !reflect.DeepEqual(*sum, want) {
				t.Errorf("summary round trip:\n got %+v\nwant %+v", sum, want)
			}
			if !reflect.DeepEqual(h, o.History) {
				t.Errorf("history round trip: got %d entries, want %d", len(h), len(o.History))
			}
			// Re-judging the stored history with the stored options gives
			// the stored result (what `lockstorm check` does).
			if again := checker.Check(h, sum.Options); !reflect.DeepEqual(again, sum.Result) {
				t.Errorf("re-check differs:\n got %+v\nwant %+v", again, sum.Result)
			}
			// The history file itself loads with its folder's summary...
			if s2, h2, err := ReadRunDir(filepath.Join(dir, HistoryFile)); err != nil || s2 == nil || !reflect.DeepEqual(*s2, want) || !reflect.DeepEqual(h2, h) {
				t.Errorf("history in its folder: summary %v, %d entries, err %v", s2 != nil, len(h2), err)
			}
			// ...and a bare one, alone, without a summary.
			bare := filepath.Join(t.TempDir(), "h.jsonl")
			if err := history.WriteFile(bare, h); err != nil {
				t.Fatal(err)
			}
			if s2, h2, err := ReadRunDir(bare); err != nil || s2 != nil || !reflect.DeepEqual(h2, h) {
				t.Errorf("bare history: summary %v, %d entries, err %v", s2, len(h2), err)
			}

			yamlPath := filepath.Join(dir, ScenarioFile)
			b, err := os.ReadFile(yamlPath)
			if tc.spec == nil {
				if err == nil {
					t.Errorf("%s written without a spec", ScenarioFile)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				back, err := spec.Parse(yamlPath, b)
				if err != nil {
					t.Fatalf("%s does not parse back: %v\n%s", ScenarioFile, err, b)
				}
				if back.Seed != o.Seed {
					t.Errorf("seed %d, want the run's %d", back.Seed, o.Seed)
				}
				if back.Name != sp.Name || back.Lock.TTL != sp.Lock.TTL || back.Clients != sp.Clients ||
					back.Duration != sp.Duration || len(back.Failpoints) != 1 || back.Failpoints[0].Fault == nil ||
					back.Failpoints[0].Fault.For != 300*time.Millisecond || back.Expect("setnx-del") != checker.Unsafe {
					t.Errorf("resolved spec changed in the round trip:\n%s", b)
				}
				if sp.Seed != 7 {
					t.Errorf("WriteRunDir changed the caller's spec seed to %d", sp.Seed)
				}
			}

			for _, f := range []string{TimelineFile, PorcupineFile} {
				st, err := os.Stat(filepath.Join(dir, f))
				if exists := err == nil; exists != tc.violation {
					t.Errorf("%s exists = %v, want %v", f, exists, tc.violation)
				} else if exists && st.Size() == 0 {
					t.Errorf("%s is empty", f)
				}
			}
			if !tc.violation {
				return
			}
			page, err := os.ReadFile(filepath.Join(dir, TimelineFile))
			if err != nil {
				t.Fatal(err)
			}
			checkTimeline(t, string(page), o.Result, tc.h)
		})
	}
}

// checkTimeline asserts what a reader of timeline.html must find.
func checkTimeline(t *testing.T, page string, res checker.Result, h history.History) {
	t.Helper()
	if res.Witness == nil {
		t.Fatal("no witness")
	}
	// Text is compared as a reader sees it: html/template writes some
	// characters (such as +) as character references.
	text := html.UnescapeString(page)
	if !strings.Contains(text, res.Witness.Text) {
		t.Error("timeline lacks the witness text")
	}
	if !regexp.MustCompile(`<rect class="ov" id="overlap-overview"`).MatchString(page) {
		t.Error("timeline lacks the overlap element")
	}
	if !strings.Contains(page, "overlap: c") || !strings.Contains(page, ms(res.Witness.FromNs)+" – "+ms(res.Witness.ToNs)) {
		t.Error("timeline lacks the overlap label with its times")
	}
	if n := strings.Count(page, `class="hold w"`); n < 2 {
		t.Errorf("%d witness bars, want both holds marked", n)
	}
	faults := faultWindows(h)
	for _, f := range faults {
		lbl := "fault 1: " + f.Desc + " (" + ms(f.From) + " – " + ms(f.To) + ")"
		if !strings.Contains(text, lbl) {
			t.Errorf("timeline lacks the fault window label %q", lbl)
		}
		if !strings.Contains(page, `<rect class="fault"`) {
			t.Error("timeline lacks the shaded fault window")
		}
	}
	if len(faults) == 0 && strings.Contains(page, `class="fault"`) {
		t.Error("fault window drawn for a history without faults")
	}
	for _, bad := range []string{"<script", "https://", "src=", "href=", "@import", "url(http"} {
		if strings.Contains(page, bad) {
			t.Errorf("timeline is not self-contained: has %q", bad)
		}
	}
	if !strings.Contains(page, `class="legend"`) || !strings.Contains(page, " ms</text>") {
		t.Error("timeline lacks the legend or the time axis labels")
	}
	if err := wellFormedSVG(page); err != nil {
		t.Error(err)
	}
}

// wellFormedSVG parses every <svg>…</svg> of the page as XML.
func wellFormedSVG(page string) error {
	for _, m := range regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(page, -1) {
		d := xml.NewDecoder(strings.NewReader(m))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func TestFaultWindows(t *testing.T) {
	h := readGolden(t, "overlap.jsonl")
	for _, tc := range []struct {
		name     string
		h        history.History
		from, to int64
		open     bool
		n        int
	}{
		{"healed", withFault(h, faultDesc, 802e6, 905e6), 802e6, 905e6, false, 1},
		{"never healed", withFault(h, faultDesc, 802e6, -1), 802e6, 1000100000, true, 1},
		{"none", h, 0, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw := faultWindows(tc.h)
			if len(fw) != tc.n {
				t.Fatalf("%d windows, want %d", len(fw), tc.n)
			}
			if tc.n == 1 && (fw[0].From != tc.from || fw[0].To != tc.to || fw[0].Open != tc.open || fw[0].Desc != faultDesc || fw[0].ID != 1) {
				t.Errorf("window %+v, want %d–%d open=%v", fw[0], tc.from, tc.to, tc.open)
			}
		})
	}
}

// longHistory has two clients taking turns on lock:0 n times (1 ms holds),
// with one overlap in the middle and a fault around it.
func longHistory(n int) history.History {
	var h history.History
	add := func(op history.Op) { op.Index = len(h); h = append(h, op) }
	tm := int64(1e6)
	for i := 0; i < n; i++ {
		c := i % 2
		tok := "t" + string(rune('a'+c)) + strings.Repeat("x", i%3)
		add(history.Op{Type: history.Invoke, Process: c, Client: c, F: history.FAcquire, Key: "lock:0", Value: tok, Time: tm})
		add(history.Op{Type: history.Ok, Process: c, Client: c, F: history.FAcquire, Key: "lock:0", Value: tok, Time: tm + 100e3})
		if i == n/2 {
			// The other client takes it too before this one releases.
			o := 1 - c
			add(history.Op{Type: history.Invoke, Process: o, Client: o, F: history.FAcquire, Key: "lock:0", Value: "late", Time: tm + 200e3})
			add(history.Op{Type: history.Ok, Process: o, Client: o, F: history.FAcquire, Key: "lock:0", Value: "late", Time: tm + 300e3})
			add(history.Op{Type: history.Invoke, Process: o, Client: o, F: history.FRelease, Key: "lock:0", Value: "late", Time: tm + 500e3})
			add(history.Op{Type: history.Ok, Process: o, Client: o, F: history.FRelease, Key: "lock:0", Value: "late", Time: tm + 600e3})
		}
		add(history.Op{Type: history.Invoke, Process: c, Client: c, F: history.FRelease, Key: "lock:0", Value: tok, Time: tm + 900e3})
		add(history.Op{Type: history.Ok, Process: c, Client: c, F: history.FRelease, Key: "lock:0", Value: tok, Time: tm + 1000e3})
		tm += 1100e3
	}
	mid := int64(n/2)*1100e3 + 1e6
	return withFault(h, "partition hosts=[h1]", mid-5e6, mid+5e6)
}

func TestTimelineCapsBarsAndStaysSmall(t *testing.T) {
	h := longHistory(5000)
	res := checker.Check(h, history.Options{})
	if res.Witness == nil {
		t.Fatalf("synthetic history has no witness: %s", res.Reason)
	}
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, h, res, "long <run> & co"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	overview := regexp.MustCompile(`(?s)<svg id="overview".*?</svg>`).FindString(page)
	if n := strings.Count(overview, `<rect class="hold`); n == 0 || n > maxBars {
		t.Errorf("%d bars in the overview, want 1..%d", n, maxBars)
	}
	if len(page) > 200_000 {
		t.Errorf("timeline is %d bytes for a %d-entry history", len(page), len(h))
	}
	if !strings.Contains(page, "<title>long &lt;run&gt; &amp; co</title>") {
		t.Error("title not escaped")
	}
	checkTimeline(t, page, res, h)
}

func TestTimelineWithoutWitness(t *testing.T) {
	// A lost update without an overlap, or a deadlock, still gets a page.
	h := withFault(readGolden(t, "good.jsonl"), faultDesc, 1e6, -1)
	res := checker.Check(h, history.Options{})
	res.Witness = nil
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, h, res, "no witness"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, `class="ov"`) || strings.Contains(page, `id="witness"`) {
		t.Error("overlap drawn without a witness")
	}
	if !strings.Contains(page, "never healed") || !strings.Contains(page, `<rect class="fault"`) {
		t.Error("open fault window not drawn")
	}
	if err := wellFormedSVG(page); err != nil {
		t.Error(err)
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ span, want int64 }{
		{1000e6, 200e6}, {12e6, 2e6}, {7e6, 1e6}, {40e6, 5e6}, {3, 1}, {0, 1},
	} {
		if got := niceStep(tc.span); got != tc.want {
			t.Errorf("niceStep(%d) = %d, want %d", tc.span, got, tc.want)
		}
	}
}

func TestFromOutcome(t *testing.T) {
	o := outcome(t, readGolden(t, "overlap.jsonl"), nil, checker.Unsafe)
	r := FromOutcome(o)
	if r.Verdict != checker.Unsafe || !r.AsExpected || r.Witness != o.Result.Witness.Text || r.FirstViolationMs == nil {
		t.Errorf("row %+v", r)
	}
	if want := "lockstorm run --scenario tiny --impl setnx-del --seed 42 --backend embedded"; r.Replay != want {
		t.Errorf("replay %q, want %q", r.Replay, want)
	}
	// Per second of the history, not of the wall time (which includes
	// set-up and the check): `lockstorm check` recomputes it from the
	// history alone and must agree.
	if r.AcquiresPerSec != round2(float64(o.Result.Acquired)/(float64(o.Result.DurationNs)/1e9)) || r.AcquiresPerSec == 0 {
		t.Errorf("acquires/s %v", r.AcquiresPerSec)
	}
	// No expectation (a lock without claims): reported, never a DIFF.
	o.Expected = ""
	if r := FromOutcome(o); r.Expected != "" || !r.AsExpected || r.Missed() {
		t.Errorf("no expectation: expected %q, as expected %v, missed %v", r.Expected, r.AsExpected, r.Missed())
	}
	var b strings.Builder
	if err := Write(&b, []Row{FromOutcome(o)}, FormatTable, false); err != nil || !strings.Contains(b.String(), "—") || strings.Contains(b.String(), "DIFF") {
		t.Errorf("no expectation in the table (%v):\n%s", err, b.String())
	}
	for _, tc := range []struct{ in, want float64 }{{1.005, 1}, {2.345, 2.35}, {-1.236, -1.24}, {0, 0}} {
		if got := round2(tc.in); got != tc.want {
			t.Errorf("round2(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSafeRunKeepsNoPictures(t *testing.T) {
	o := outcome(t, readGolden(t, "good.jsonl"), nil, checker.Unsafe)
	if o.Result.Verdict != checker.Safe {
		t.Fatalf("good history judged %s: %s", o.Result.Verdict, o.Result.Reason)
	}
	for _, tc := range []struct {
		keep, expected string
		want           bool
	}{
		{KeepFailures, checker.Unsafe, true}, // safe where unsafe was expected is a failure
		{KeepFailures, checker.Safe, false},
		{KeepAll, checker.Safe, true},
		{KeepNone, checker.Unsafe, false},
	} {
		o.Expected = tc.expected
		if got := ShouldKeep(tc.keep, o); got != tc.want {
			t.Errorf("ShouldKeep(%s) with expected %s = %v, want %v", tc.keep, tc.expected, got, tc.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	rows := sampleRows()
	rows = append(rows, rows[1])
	aggs := Aggregate(rows)
	if len(aggs) != 3 || aggs[0].Runs != 1 || aggs[0].Matched != 0 || aggs[1].Runs != 2 || aggs[1].Matched != 2 {
		t.Fatalf("aggregate %+v", aggs)
	}
	var buf bytes.Buffer
	if err := WriteAggregate(&buf, aggs, FormatTable); err != nil || !strings.Contains(buf.String(), "2/2") {
		t.Errorf("aggregate table: %v\n%s", err, buf.String())
	}
	// The same layout as the verdict table: its header's first column,
	// scenarios as headings, implementations indented under them, no box.
	var verdicts bytes.Buffer
	if err := WriteTable(&verdicts, rows, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	agg, tab := strings.Split(buf.String(), "\n"), strings.Split(verdicts.String(), "\n")
	if !strings.HasPrefix(agg[0], "scenario / impl  ") || !strings.HasPrefix(tab[0], "scenario / impl  ") {
		t.Errorf("headers differ in style:\n%s\n%s", agg[0], tab[0])
	}
	if strings.ContainsAny(buf.String(), "│┌─┬") {
		t.Errorf("aggregate table is boxed, the verdict table is not:\n%s", buf.String())
	}
	if agg[1] != tab[1] || !strings.HasPrefix(agg[2], "  "+rows[0].Impl+" ") {
		t.Errorf("aggregate rows are not grouped as the verdict table's:\n%s\n%s", buf.String(), verdicts.String())
	}
}

func TestMissedOnlyForExploratoryNotFound(t *testing.T) {
	for _, tc := range []struct {
		r    Row
		want bool
	}{
		{Row{Identity: history.Identity{Gated: false, Expected: "unsafe"}, Verdict: "safe"}, true},
		{Row{Identity: history.Identity{Gated: false, Expected: "deadlock"}, Verdict: "safe"}, true},
		{Row{Identity: history.Identity{Gated: false, Expected: "unsafe"}, Verdict: "inconclusive"}, true},
		{Row{Identity: history.Identity{Gated: true, Expected: "unsafe"}, Verdict: "inconclusive"}, false},
		{Row{Identity: history.Identity{Gated: false, Expected: "safe"}, Verdict: "inconclusive"}, false},
		{Row{Identity: history.Identity{Gated: true, Expected: "unsafe"}, Verdict: "safe"}, false},
		{Row{Identity: history.Identity{Gated: false, Expected: "safe"}, Verdict: "unsafe"}, false},
		{Row{Identity: history.Identity{Gated: false, Expected: "unsafe"}, Verdict: "unsafe", AsExpected: true}, false},
	} {
		if got := tc.r.Missed(); got != tc.want {
			t.Errorf("%+v: Missed() = %v, want %v", tc.r, got, tc.want)
		}
		var buf bytes.Buffer
		Write(&buf, []Row{tc.r}, FormatTable, false)
		if tc.want != strings.Contains(buf.String(), "miss") {
			t.Errorf("%+v: table mark wrong:\n%s", tc.r, buf.String())
		}
	}
}

// TestTimelineSentinelMarks: Sentinel events become one mark each (the
// first Sentinel to report it), chatty ones are left out, and the witness
// names each holder's master.
func TestTimelineSentinelMarks(t *testing.T) {
	h := history.History{
		{Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Type: history.Ok, Value: "s3 +sdown master n1 n1", Time: 5e8},
		{Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Type: history.Ok, Value: "s1 +sdown master n1 n1", Time: 6e8},
		{Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Type: history.Ok, Value: "s2 +vote-for-leader abc 1", Time: 7e8},
		{Process: history.NemesisProcess, Client: -1, F: history.FSentinel, Type: history.Ok, Value: "s3 +switch-master n1 n1 r1", Time: 2e9},
	}
	marks := sentinelMarks(h)
	want := []sentinelMark{{5e8, "+sdown master n1 n1 (s3)"}, {2e9, "+switch-master n1 n1 r1 (s3)"}}
	if fmt.Sprint(marks) != fmt.Sprint(want) {
		t.Fatalf("marks %v, want %v", marks, want)
	}
	res := checker.Result{Exclusion: checker.Exclusion{Witness: &checker.Witness{Key: "k", A: checker.Hold{Client: 0, Key: "k", From: 0, To: 3e9, Master: "n1"},
		B: checker.Hold{Client: 1, Key: "k", From: 2.1e9, To: 2.2e9, Master: "r1"}, FromNs: 2.1e9, ToNs: 2.2e9}}}
	var b strings.Builder
	if err := WriteTimeline(&b, h, res, "t"); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"+switch-master n1 n1 r1 (s3)", "Sentinel events", "c0 was talking to n1, c1 to r1"} {
		if !strings.Contains(html.UnescapeString(b.String()), s) {
			t.Errorf("timeline lacks %q", s)
		}
	}
	if strings.Contains(b.String(), "vote-for-leader") {
		t.Error("timeline marks a chatty event")
	}
}

func TestTimelineDrawsServerEvents(t *testing.T) {
	h := readGolden(t, "good.jsonl")
	var key string
	var at int64
	for _, op := range h {
		if op.F == history.FAcquire && op.Type == history.Ok {
			key, at = op.Key, op.Time
			break
		}
	}
	h = append(h, history.Op{Index: len(h), Type: history.Ok, Process: history.ServerProcess, Client: -1, F: history.FServer,
		Key: key, Value: "set", Node: "n1", Owner: "tok<1>", Time: at})
	res := checker.Check(h, history.Options{})
	var buf bytes.Buffer
	if err := WriteTimeline(&buf, h, res, "server events"); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if !strings.Contains(page, "n1: set "+key+" at ") || !strings.Contains(page, "value tok&lt;1&gt;") {
		t.Error("server event not drawn on its key's row")
	}
	if err := wellFormedSVG(page); err != nil {
		t.Error(err)
	}
}

// The replay command of a run whose lock is the spec's client program
// carries the consent that program needs; a Go lock's does not.
func TestReplayCommandAllowsExec(t *testing.T) {
	spec, err := spec.Parse("exec.yaml", []byte("name: m\nduration: 1s\nclients: 2\nimpls: [v, set-nx-px]\nvariants:\n  v:\n    exec: [cat]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		impl string
		want bool
	}{{"v", true}, {"set-nx-px", false}} {
		o := &scenarios.Outcome{Identity: history.Identity{Scenario: "m", Impl: tc.impl, Seed: 1, Backend: "embedded"}, Spec: spec}
		if got := strings.HasSuffix(ReplayCommand(o), " --allow-exec"); got != tc.want {
			t.Errorf("%s: %q, want --allow-exec %v", tc.impl, ReplayCommand(o), tc.want)
		}
	}
}
