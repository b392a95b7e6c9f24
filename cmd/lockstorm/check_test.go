package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestCheckInputs: check's table names a damaged history's problems by
// line beside a violation found in its well-formed part; --json is
// accepted as run accepts it; a file that is not a history at all (no line
// is an entry, or empty) is bad input, exit 2, not an inconclusive row.
func TestCheckInputs(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	good, err := os.ReadFile(filepath.Join("..", "..", "checker", "testdata", "overlap.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(good)), "\n")
	damaged := filepath.Join(dir, "damaged.jsonl")
	os.WriteFile(damaged, []byte(strings.Join(lines, "")+"\n"+lines[len(lines)-1]+"\n"), 0o644)
	notHistory := filepath.Join(dir, "notes.txt")
	os.WriteFile(notHistory, []byte("remember to buy milk\n"), 0o644)
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, nil, 0o644)
	dup := len(lines) + 1
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr string
	}{
		{"damaged: problems in the table", []string{"check", damaged}, 1,
			[]string{"unsafe", "found in a damaged history", "line " + strconv.Itoa(dup) + ": duplicate of line " + strconv.Itoa(dup-1)}, ""},
		{"--json", []string{"check", "--json", damaged}, 1, []string{`"verdict":"unsafe"`, `"history_problems":1`}, ""},
		{"--json after the path", []string{"check", damaged, "--json"}, 1, []string{`"verdict":"unsafe"`}, ""},
		{"not a history", []string{"check", notHistory}, 2, nil, "notes.txt: not a history (no line is a history entry; line 1:"},
		{"empty", []string{"check", empty}, 2, nil, "empty.jsonl: not a history (no line is a history entry: the file is empty)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, bin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
			flat := strings.Join(strings.Fields(stdout), " ")
			for _, w := range tc.stdout {
				if !strings.Contains(flat, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			if strings.Contains(strings.Join(tc.args, " "), "--json") {
				var row map[string]any
				if err := json.Unmarshal([]byte(stdout), &row); err != nil {
					t.Errorf("not one JSON row: %v: %s", err, stdout)
				}
			}
		})
	}
}
