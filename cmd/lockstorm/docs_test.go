package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// The docs test (docs/docs-test.md says how to mark a snippet): every
// fenced block of README.md and docs/*.md in a checked language is
// extracted and checked, so a snippet or a shown output that goes stale
// fails the build.
//
//   - ```console: a transcript. Each "$ " line is run with bash in a
//     scratch folder (the doc's own; PATH starts with the lockstorm just
//     built), it must exit 0 (or N given by a "# exit N" comment on the
//     line), and its stdout must match the lines shown under it: compared
//     as words, numbers and plural s ignored, a "..." word standing for
//     any words. "console norun" (slow commands) only checks the
//     commands' subcommands and flags against their -h.
//   - ```sh: commands, one a line; subcommands and flags are checked
//     against -h, make targets against the Makefile, cd folders against
//     the repository; "sh run" also runs them, each must exit 0.
//   - ```yaml: must parse; "yaml file=NAME" is also written as NAME in the
//     doc's scratch folder before its commands run.
//
// LOCKSTORM_DOCS_UPDATE=1 rewrites the output of "console generated"
// transcripts (the -h reference) with what the tool prints.

// docBlock is one fenced block of a doc.
type docBlock struct {
	file  string
	line  int // of the opening fence
	lang  string
	attrs map[string]string
	body  []string
}

func (b docBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

var fenceRe = regexp.MustCompile("^(```+|~~~+)\\s*(\\S*)(.*)$")

// readBlocks returns the fenced blocks of a markdown file.
func readBlocks(path, name string) ([]docBlock, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var blocks []docBlock
	var cur *docBlock
	var fence string
	for i, line := range strings.Split(string(b), "\n") {
		m := fenceRe.FindStringSubmatch(line)
		switch {
		case cur == nil && m != nil:
			cur = &docBlock{file: name, line: i + 1, lang: m[2], attrs: map[string]string{}}
			fence = m[1]
			for _, a := range strings.Fields(m[3]) {
				k, v, _ := strings.Cut(a, "=")
				cur.attrs[k] = v
			}
		case cur != nil && strings.TrimSpace(line) == fence:
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.body = append(cur.body, line)
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: fence not closed", name, cur.line)
	}
	return blocks, nil
}

// docFiles are README.md and docs/*.md, by path relative to the root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	more, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range more {
		rel, _ := filepath.Rel(root, m)
		files = append(files, rel)
	}
	return files
}

// linkRe finds a markdown link's target.
var linkRe = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// staleCountRe finds a count of scenarios in prose: it goes stale with the
// next scenario added. Docs show `lockstorm list` instead.
var staleCountRe = regexp.MustCompile(`\b\d+ (?:[a-z-]+ )?scenarios\b`)

func TestDocs(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	d := &docsRun{t: t, root: root, bin: buildBinary(t), help: map[string]string{}, update: os.Getenv("LOCKSTORM_DOCS_UPDATE") == "1"}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is not installed (make test installs it): the docs' outputs are redis-server's")
		}
		t.Logf("redis-server is not installed: transcripts are only flag-checked, not run")
		d.noRun = true
	}
	checked := 0
	for _, name := range docFiles(t, root) {
		blocks, err := readBlocks(filepath.Join(root, name), name)
		if err != nil {
			t.Fatal(err)
		}
		prose, _ := os.ReadFile(filepath.Join(root, name))
		for _, m := range staleCountRe.FindAllString(stripFences(string(prose)), -1) {
			t.Errorf("%s: %q: a count of scenarios goes stale; point to `lockstorm list`", name, m)
		}
		for _, m := range linkRe.FindAllStringSubmatch(stripFences(string(prose)), -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.Dir(name), target)); err != nil {
				t.Errorf("%s: the link %s leads nowhere", name, m[1])
			}
		}
		t.Run(name, func(t *testing.T) {
			dir := d.scratch(t, blocks)
			for _, b := range blocks {
				if d.check(t, dir, b) {
					checked++
				}
			}
		})
		if d.update {
			d.applyEdits(filepath.Join(root, name))
		}
	}
	if checked < 10 {
		t.Errorf("only %d blocks checked: are the docs' fences still marked?", checked)
	}
}

type docsRun struct {
	t      *testing.T
	root   string
	bin    string
	help   map[string]string // subcommand → its -h output
	noRun  bool
	update bool
	edits  []edit
}

// edit replaces lines [from, to) (0-based) of a file with lines.
type edit struct {
	from, to int
	lines    []string
}

// scratch is a doc's own folder: the repository's examples and scenarios
// linked in (snippets name them relative to the root), and its yaml
// file=NAME blocks written out.
func (d *docsRun) scratch(t *testing.T, blocks []docBlock) string {
	dir := t.TempDir()
	for _, l := range []string{"examples", "scenarios", "checker"} {
		if err := os.Symlink(filepath.Join(d.root, l), filepath.Join(dir, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range blocks {
		if name := b.attrs["file"]; name != "" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(b.body, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// check checks one block and says whether its language is one the test
// checks.
func (d *docsRun) check(t *testing.T, dir string, b docBlock) bool {
	switch b.lang {
	case "yaml":
		var v any
		if err := yaml.Unmarshal([]byte(strings.Join(b.body, "\n")), &v); err != nil {
			t.Errorf("%s: not YAML: %v", b.where(), err)
		}
	case "sh":
		for _, c := range commandLines(b.body) {
			d.flagCheck(t, b, c.text)
			if _, run := b.attrs["run"]; run && !d.noRun {
				if _, stderr, code := d.exec(t, dir, c.text); code != 0 {
					t.Errorf("%s: %s: exit %d: %s", b.where(), c.text, code, stderr)
				}
			}
		}
	case "console":
		d.checkTranscript(t, dir, b)
	default:
		return false
	}
	return true
}

// command is one command of a block: its text and, for a transcript, the
// output shown under it and where that output is in the file.
type command struct {
	text     string
	exit     int
	output   []string
	from, to int // the output's lines in the file, 0-based, [from, to)
}

var exitRe = regexp.MustCompile(`#\s*exits?\s+(\d+)`)

// commandLines reads a sh block: one command a line ("\" continues it),
// blank and comment lines skipped.
func commandLines(body []string) []command {
	var out []command
	var cur string
	for _, l := range body {
		cur += l
		if strings.HasSuffix(cur, `\`) {
			cur = strings.TrimSuffix(cur, `\`) + " "
			continue
		}
		if s := strings.TrimSpace(cur); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, command{text: s})
		}
		cur = ""
	}
	return out
}

// transcript reads a console block into its commands and outputs.
func transcript(b docBlock) []command {
	var out []command
	for i, l := range b.body {
		if s, ok := strings.CutPrefix(l, "$ "); ok {
			c := command{text: s, from: b.line + i + 1, to: b.line + i + 1}
			if m := exitRe.FindStringSubmatch(s); m != nil {
				c.exit, _ = strconv.Atoi(m[1])
			}
			out = append(out, c)
			continue
		}
		if len(out) > 0 {
			c := &out[len(out)-1]
			c.output = append(c.output, l)
			c.to = b.line + i + 1
		}
	}
	return out
}

func (d *docsRun) checkTranscript(t *testing.T, dir string, b docBlock) {
	cmds := transcript(b)
	if len(cmds) == 0 {
		t.Errorf("%s: a console block without a \"$ \" command", b.where())
	}
	_, norun := b.attrs["norun"]
	_, generated := b.attrs["generated"]
	for _, c := range cmds {
		d.flagCheck(t, b, c.text)
		if norun || d.noRun {
			continue
		}
		stdout, stderr, code := d.exec(t, dir, c.text)
		if code != c.exit {
			t.Errorf("%s: $ %s: exit %d, the doc says %d\nstdout:\n%s\nstderr:\n%s", b.where(), c.text, code, c.exit, stdout, stderr)
			continue
		}
		if generated && d.update {
			lines := strings.Split(strings.TrimRight(stdout, "\n"), "\n")
			for i := range lines {
				lines[i] = strings.TrimRight(lines[i], " ")
			}
			d.edits = append(d.edits, edit{c.from, c.to, lines})
			continue
		}
		if len(c.output) == 0 {
			continue
		}
		if why := matchOutput(strings.Join(c.output, "\n"), stdout); why != "" {
			t.Errorf("%s: $ %s: the output shown is not what it prints: %s\nprinted:\n%s", b.where(), c.text, why, stdout)
		}
	}
}

// exec runs a command line with bash in dir, lockstorm first on PATH.
func (d *docsRun) exec(t *testing.T, dir, line string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(d.bin)+":"+os.Getenv("PATH"), "REPO="+d.root)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil && cmd.ProcessState == nil {
		t.Fatalf("%s: %v", line, err)
	}
	return o.String(), e.String(), cmd.ProcessState.ExitCode()
}

var helpFlagRe = regexp.MustCompile(`(?m)^  -(\S+)`)

// flagCheck checks what can be checked of a command line without running
// it: every lockstorm subcommand exists and every flag given is one its -h
// lists; every make target is in the Makefile; every cd folder exists.
func (d *docsRun) flagCheck(t *testing.T, b docBlock, line string) {
	t.Helper()
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	for _, part := range regexp.MustCompile(`&&|\|\||;|\|`).Split(line, -1) {
		words := shellWords(part)
		for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		switch words[0] {
		case "lockstorm":
			d.checkLockstorm(t, b, words[1:])
		case "make":
			mk, err := os.ReadFile(filepath.Join(d.root, "Makefile"))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range words[1:] {
				if strings.Contains(w, "=") || strings.HasPrefix(w, "-") {
					continue
				}
				if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(w) + `:`).Match(mk) {
					t.Errorf("%s: make %s: no such target in the Makefile", b.where(), w)
				}
			}
		case "cd":
			if len(words) > 1 {
				if st, err := os.Stat(filepath.Join(d.root, words[1])); err != nil || !st.IsDir() {
					t.Errorf("%s: cd %s: no such folder in the repository", b.where(), words[1])
				}
			}
		}
	}
}

func (d *docsRun) checkLockstorm(t *testing.T, b docBlock, args []string) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return
	}
	sub := args[0]
	help, ok := d.help[sub]
	if !ok {
		out, stderr, code := runCLI(t, d.bin, sub, "-h")
		if code != 0 {
			t.Errorf("%s: lockstorm %s: not a command (lockstorm %s -h: exit %d: %s)", b.where(), sub, sub, code, stderr)
		}
		help, d.help[sub] = out, out
	}
	flags := map[string]bool{"h": true, "help": true}
	for _, m := range helpFlagRe.FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	for _, w := range args[1:] {
		if w == "--" {
			break
		}
		if !strings.HasPrefix(w, "-") || w == "-" {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
		if !flags[name] {
			t.Errorf("%s: lockstorm %s has no flag %s (see lockstorm %s -h)", b.where(), sub, w, sub)
		}
	}
}

// shellWords splits a command line into words, honouring quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// stripFences is a doc without its fenced blocks (prose only).
func stripFences(doc string) string {
	var out []string
	in := false
	for _, l := range strings.Split(doc, "\n") {
		if t := strings.TrimSpace(l); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			in = !in
			continue
		}
		if !in {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// remarkRe is the harness's remark that a run was judged again after its
// own stalls left one inconclusive (--rejudge): it depends on the
// machine's load, not on the lock, so a shown output need not have it.
var remarkRe = regexp.MustCompile(`;?\s*run \d+ times: the harness's own\s+stalls left \d+ run\(s\) before it inconclusive`)

var numberRe = regexp.MustCompile(`[+-]?[0-9][0-9.,:]*`)

// words normalises text for comparison: whitespace (the table's column
// widths and wrapping) ignored, every number "#", trailing punctuation, the
// table's cut mark and a plural s dropped, the rejudge remark removed, so a shown output stays true from run to run while a
// changed word, column, line or order does not.
func words(s string) []string {
	s = remarkRe.ReplaceAllString(s, "")
	var out []string
	for _, w := range strings.Fields(s) {
		if w == "..." {
			out = append(out, w)
			continue
		}
		// The table ends an evidence longer than its lines with "…": the
		// words cut there are matched by a "..." in the doc, as any other
		// words that may or may not be printed.
		w = strings.TrimSuffix(w, "…")
		w = numberRe.ReplaceAllString(w, "#")
		w = strings.TrimRight(w, ",;:.")
		if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = strings.TrimSuffix(w, "s")
		}
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// matchOutput says how printed differs from the output a doc shows ("" when
// it matches): words compared in order, "..." in the doc matching any
// words (none included).
func matchOutput(shown, printed string) string {
	want, got := words(shown), words(printed)
	// best is the furthest the match got in want, for the message.
	best, bestGot := 0, 0
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i > best {
			best, bestGot = i, j
		}
		if i == len(want) {
			return j == len(got)
		}
		if want[i] == "..." {
			for k := j; k <= len(got); k++ {
				if match(i+1, k) {
					return true
				}
			}
			return false
		}
		return j < len(got) && want[i] == got[j] && match(i+1, j+1)
	}
	if match(0, 0) {
		return ""
	}
	ctx := func(ws []string, at int) string {
		return strings.Join(ws[max(0, at-4):min(len(ws), at+6)], " ")
	}
	return fmt.Sprintf("shown (words, numbers as #) %q ... but printed %q", ctx(want, best), ctx(got, bestGot))
}

// applyEdits writes the collected output rewrites into path, bottom first.
func (d *docsRun) applyEdits(path string) {
	if len(d.edits) == 0 {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i := len(d.edits) - 1; i >= 0; i-- {
		e := d.edits[i]
		lines = append(lines[:e.from], append(e.lines, lines[e.to:]...)...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		d.t.Fatal(err)
	}
	d.edits = nil
}

// TestSpecReferenceComplete: docs/spec.md's field reference names every
// field a spec can have (read from the spec's types, so a new field fails
// until it is documented) and no field that does not exist.
func TestSpecReferenceComplete(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "spec.md"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]bool{}
	specFields(reflect.TypeOf(spec.Spec{}), "", fields, map[reflect.Type]bool{})
	if len(fields) < 40 {
		t.Fatalf("only %d fields found: the walk no longer reads the spec's types", len(fields))
	}
	// The reference's rows: | `path` | ...
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.\\[\\]<>]+)`").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for f := range fields {
		if !documented[f] {
			t.Errorf("docs/spec.md does not document the spec field %s (a row | `%s` | ... |)", f, f)
		}
	}
	for f := range documented {
		if !fields[f] {
			t.Errorf("docs/spec.md documents %s, which is not a spec field", f)
		}
	}
}

// specFields adds the YAML paths of typ's fields under prefix: a.b for a
// nested field, a[].b for one of a list's items, a.<key>.b for a map's
// values. A struct type met again (a failpoint's fault is a fault, a
// variant's options are lock options) is documented once, where it is
// met first, so its fields are not walked again.
func specFields(typ reflect.Type, prefix string, out map[string]bool, seen map[reflect.Type]bool) {
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct || typ.PkgPath() == "time" || seen[typ] {
		return
	}
	seen[typ] = true
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() && !f.Anonymous {
			continue
		}
		if opts == "inline" || f.Anonymous && name == "" {
			specFields(f.Type, prefix, out, seen)
			continue
		}
		if name == "" {
			continue
		}
		path := prefix + name
		out[path] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Slice:
			specFields(ft.Elem(), path+"[].", out, seen)
		case reflect.Map:
			specFields(ft.Elem(), path+".<key>.", out, seen)
		case reflect.Struct:
			specFields(ft, path+".", out, seen)
		}
	}
}

// TestMatchOutput pins the doc matcher on the cases a shown run output
// meets: numbers and wrapping vary, a "..." stands for words printed on
// some runs only (a permitted finding's clause, the tail of an evidence the
// table cut with "…"), a changed word fails.
func TestMatchOutput(t *testing.T) {
	const shown = "redisson-hash  unsafe   unsafe    ok    ... c0 and c1 both held lock:0 at 314.1 ms;\n" +
		"     points: 13 hit, 0 faulted; ...\n  fenced  safe  safe  ok"
	const held = "c0 and c1 both held lock:0 at 317.6 ms;\n points: 9 hit, 0 faulted;"
	for _, tc := range []struct {
		name, printed string
		ok            bool
	}{
		{"same words, other numbers and wrapping", "redisson-hash unsafe unsafe ok " + held + "\nfenced safe safe ok", true},
		{"a clause the doc leaves to ...", "redisson-hash unsafe unsafe ok " + held + " stopped 600 ms after the first overlap\nfenced safe safe ok", true},
		{"optional clause, the evidence cut", "redisson-hash unsafe unsafe ok permitted: release-false-success ×1; " + held + "…\nfenced safe safe ok", true},
		{"verdict changed", "redisson-hash safe unsafe DIFF " + held + "\nfenced safe safe ok", false},
		{"word after the ... changed", "redisson-hash unsafe unsafe ok c0 or c1 both held lock:0 at 317.6 ms; points: 9 hit, 0 faulted;\nfenced safe safe ok", false},
		{"next row changed", "redisson-hash unsafe unsafe ok " + held + "\nfenced unsafe safe DIFF", false},
		{"a row missing", "redisson-hash unsafe unsafe ok " + held, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if why := matchOutput(shown, tc.printed); (why == "") != tc.ok {
				t.Errorf("matchOutput: %q, want match=%v", why, tc.ok)
			}
		})
	}
}
