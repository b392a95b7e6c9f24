package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/scenarios"
)

func sampleRows() []Row {
	fv := 12.5
	return []Row{
		{Scenario: "del-race", Impl: "setnx-del", Seed: 1, Backend: "redis-server", Mode: "scheduled", Gated: true,
			Verdict: "unsafe", Expected: "unsafe", AsExpected: true, Acquired: 10, FirstViolationMs: &fv, Witness: "c1 and c2"},
		{Scenario: "del-race", Impl: "set-nx-px", Seed: 1, Backend: "redis-server", Mode: "scheduled", Gated: true,
			Verdict: "unsafe", Expected: "safe", AsExpected: false, Acquired: 7, Replay: "lockstorm run ..."},
	}
}

func TestWriteJSONRoundTrip(t *testing.T) {
	rows := sampleRows()
	var buf bytes.Buffer
	if err := Write(&buf, rows, FormatJSON, false); err != nil {
		t.Fatal(err)
	}
	var back []Row
	dec := json.NewDecoder(&buf)
	for {
		var r Row
		if err := dec.Decode(&r); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		back = append(back, r)
	}
	if !reflect.DeepEqual(back, rows) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, rows)
	}
}

func TestWriteMarkdownIsATable(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, sampleRows(), FormatMarkdown, false); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2+len(sampleRows()) {
		t.Fatalf("%d lines, want header + separator + %d rows:\n%s", len(lines), len(sampleRows()), strings.Join(lines, "\n"))
	}
	cols := strings.Count(lines[0], "|")
	for i, l := range lines {
		if !strings.HasPrefix(l, "|") || !strings.HasSuffix(l, "|") || strings.Count(l, "|") != cols {
			t.Errorf("line %d is not a table row with %d pipes: %q", i, cols, l)
		}
	}
	if strings.Trim(lines[1], "|-: ") != "" {
		t.Errorf("second line is not a separator: %q", lines[1])
	}
}

func TestWriteTableMarksDifferences(t *testing.T) {
	for _, color := range []bool{false, true} {
		var buf bytes.Buffer
		if err := Write(&buf, sampleRows(), FormatTable, color); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, want := range []string{"del-race", "setnx-del", "set-nx-px", "unsafe", "DIFF"} {
			if !strings.Contains(out, want) {
				t.Errorf("color=%v: table lacks %q", color, want)
			}
		}
		if got := strings.Contains(out, "\x1b["); got != color {
			t.Errorf("color=%v: ANSI codes present = %v", color, got)
		}
	}
}

func TestJUnitRoundTrip(t *testing.T) {
	rows := sampleRows()
	var cases []JUnitCase
	for _, r := range rows {
		cases = append(cases, JUnitCase{Row: r, Seconds: 1.5})
	}
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, cases); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, token by token.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
	names, failures, err := ReadJUnit(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"del-race/setnx-del", "del-race/set-nx-px"}; !reflect.DeepEqual(names, want) {
		t.Errorf("cases %v, want %v", names, want)
	}
	if len(failures) != 1 || failures["del-race/set-nx-px"] != "expected safe, got unsafe" {
		t.Errorf("failures %v", failures)
	}
}

// outcomeFrom builds an outcome from a golden checker history.
func outcomeFrom(t *testing.T, golden string) *scenarios.Outcome {
	t.Helper()
	h, err := checker.ReadFile(filepath.Join("..", "checker", "testdata", golden))
	if err != nil {
		t.Fatal(err)
	}
	// A fault window around the violation, as the nemesis records it.
	h = append(h,
		checker.Op{Index: len(h), Type: checker.Ok, Process: checker.NemesisProcess, Client: -1, F: checker.FStart, Value: "pause clients=[1]", N: 1, Time: 790e6},
		checker.Op{Index: len(h) + 1, Type: checker.Ok, Process: checker.NemesisProcess, Client: -1, F: checker.FStop, Value: "pause clients=[1]", N: 1, Time: 950e6})
	spec, err := scenarios.Parse("t.yaml", []byte("name: t\nduration: 1s\nclients: 3\nimpls: [setnx-del]\nexpected: {setnx-del: unsafe}\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts := checker.Options{}
	return &scenarios.Outcome{Scenario: "t", Impl: "setnx-del", Seed: 42, Backend: "redis-server", Mode: "random",
		Expected: "unsafe", Result: checker.Check(h, opts), CheckOptions: opts, Elapsed: time.Second, History: h, Spec: spec}
}

func TestRunDirRoundTrip(t *testing.T) {
	o := outcomeFrom(t, "overlap.jsonl")
	if o.Result.Verdict != checker.Unsafe || o.Result.Witness == nil {
		t.Fatalf("golden overlap history judged %s", o.Result.Verdict)
	}
	dir, err := WriteRunDir(t.TempDir(), o, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	sum, h, err := ReadRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, o.History) {
		t.Error("history differs after the round trip")
	}
	if sum == nil || !reflect.DeepEqual(sum.Row, FromOutcome(o)) || sum.Result.Verdict != o.Result.Verdict ||
		sum.Result.Overlaps != o.Result.Overlaps || sum.Options != o.CheckOptions {
		t.Errorf("summary differs: %+v", sum)
	}
	b, err := os.ReadFile(filepath.Join(dir, ScenarioFile))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := scenarios.Parse("resolved.yaml", b)
	if err != nil {
		t.Fatalf("scenario.yaml does not parse back: %v", err)
	}
	if spec.Seed != 42 || spec.Name != "t" {
		t.Errorf("resolved spec: seed %d name %q", spec.Seed, spec.Name)
	}
	html, err := os.ReadFile(filepath.Join(dir, TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`class="ov"`, `class="fault"`, "fault: pause clients=[1]", `id="witness"`, `class="hold witness"`} {
		if !strings.Contains(string(html), want) {
			t.Errorf("timeline.html lacks %q", want)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, PorcupineFile)); err != nil || st.Size() == 0 {
		t.Errorf("porcupine.html: %v", err)
	}
	// A bare history.jsonl loads without a summary.
	sum2, h2, err := ReadRunDir(filepath.Join(dir, HistoryFile))
	if err != nil || len(h2) != len(h) || sum2 == nil {
		t.Errorf("bare history: %v, %d entries, summary %v", err, len(h2), sum2 != nil)
	}
}

func TestSafeRunKeepsNoPictures(t *testing.T) {
	o := outcomeFrom(t, "good.jsonl")
	if o.Result.Verdict != checker.Safe {
		t.Fatalf("good history judged %s: %s", o.Result.Verdict, o.Result.Reason)
	}
	if !ShouldKeep(KeepFailures, o) {
		t.Error("a safe verdict where unsafe was expected is a failure, and must be kept")
	}
	o.Expected = checker.Safe
	if ShouldKeep(KeepFailures, o) {
		t.Error("a safe, expected run kept under --keep failures")
	}
	dir, err := WriteRunDir(t.TempDir(), o, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, TimelineFile)); !os.IsNotExist(err) {
		t.Error("timeline.html written for a safe run")
	}
}

func TestAggregate(t *testing.T) {
	rows := sampleRows()
	rows = append(rows, rows[0])
	aggs := Aggregate(rows)
	if len(aggs) != 2 || aggs[0].Runs != 2 || aggs[0].Matched != 2 || aggs[1].Matched != 0 {
		t.Fatalf("aggregate %+v", aggs)
	}
	var buf bytes.Buffer
	if err := WriteAggregate(&buf, aggs, FormatTable); err != nil || !strings.Contains(buf.String(), "2/2") {
		t.Errorf("aggregate table: %v\n%s", err, buf.String())
	}
}
