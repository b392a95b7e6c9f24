package reports

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
)

// suiteFixture writes run folders and the suite page of a small suite to a
// temporary folder: two scenarios × three implementations, one cell with
// three seeds, one run without a folder, one cell not run; a violation under
// a fault, a deadlock, clean runs, a DIFF and a miss.
func suiteFixture(t *testing.T) (string, []SuiteRun) {
	t.Helper()
	root := t.TempDir()
	overlap := withFault(readGolden(t, "overlap.jsonl"), faultDesc, 802_000_000, 905_000_000)
	stale := withFault(readGolden(t, "stale-hold.jsonl"), "partition n1", 5_000_000, 30_000_000)
	good := readGolden(t, "good.jsonl")
	type spec struct {
		scen, impl, mode, expected string
		seed                       uint64
		h                          history.History
		keep                       bool
	}
	var runs []SuiteRun
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, s := range []spec{
		{"del-race", "setnx-del", "scheduled", checker.Unsafe, 1, overlap, true},
		{"del-race", "set-nx-px", "scheduled", checker.Safe, 1, good, false},
		{"del-race", "getset", "scheduled", checker.Safe, 1, stale, true}, // a DIFF
		{"crash-random", "setnx-expire", "random", checker.Deadlock, 1, deadlockHistory(), true},
		{"crash-random", "setnx-expire", "random", checker.Deadlock, 2, good, true}, // a miss
		{"crash-random", "setnx-expire", "random", checker.Deadlock, 3, deadlockHistory(), true},
		{"crash-random", "set-nx-px", "random", checker.Safe, 1, good, true},
	} {
		o := outcome(t, s.h, nil, s.expected)
		o.Scenario, o.Impl, o.Mode, o.Seed, o.Gated = s.scen, s.impl, s.mode, s.seed, s.mode == "scheduled"
		row := FromOutcome(o)
		if s.keep {
			dir, err := WriteRunDir(root, o, when)
			if err != nil {
				t.Fatal(err)
			}
			row.RunDir = dir
		}
		runs = append(runs, NewSuiteRun(row, o.History, o.Result, root))
	}
	info := SuiteInfo{Backend: "embedded", Seeds: 3, Date: when, Version: LockstormVersion(), Wall: 83 * time.Second}
	if err := WriteSuiteFile(filepath.Join(root, IndexFile), runs, info); err != nil {
		t.Fatal(err)
	}
	return root, runs
}

// TestSuitePage: the page is one self-contained file whose links are
// relative and lead to the kept runs' timelines; cells carry their verdict,
// mark and evidence; the header says what the brief asks.
func TestSuitePage(t *testing.T) {
	root, runs := suiteFixture(t)
	b, err := os.ReadFile(filepath.Join(root, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, bad := range []string{"http://", "https://", "<link", " src=", "@import", "url(http"} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page refers outside itself: %q", bad)
		}
	}
	for _, s := range []string{"backend <b>embedded</b>", "seeds <b>3</b>", "2026-01-02 03:04:05 UTC", "lockstorm <b>", "wall time <b>1m23s</b>",
		`class="cell v-unsafe m-ok"`, `class="cell v-unsafe m-DIFF"`, `class="cell v-deadlock m-miss"`, "found 2/3",
		`title="unsafe: c1 and c2 both held lock:0 at 812.3 ms for 87.7 ms; 1 stale write (expected unsafe)"`,
		`<td class="none">·</td>`, `id="impl-setnx-del"`, "into fault &#34;" + faultDesc + "&#34;"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	hrefs := regexp.MustCompile(`href="([^"#][^"]*)"`).FindAllStringSubmatch(page, -1)
	kept := 0
	for _, r := range runs {
		if r.Row.RunDir != "" {
			kept++
		}
	}
	if len(hrefs) != kept {
		t.Errorf("%d links, want one per kept run (%d)", len(hrefs), kept)
	}
	timelines := 0
	for _, h := range hrefs {
		if filepath.IsAbs(h[1]) || strings.Contains(h[1], "..") {
			t.Errorf("link %q is not relative to the page", h[1])
		}
		p := filepath.Join(root, filepath.FromSlash(h[1]))
		if _, err := os.Stat(p); err != nil {
			t.Errorf("link %q: %v", h[1], err)
		}
		if strings.HasSuffix(h[1], "/"+TimelineFile) {
			timelines++
		}
	}
	if timelines < 3 {
		t.Errorf("%d links to timelines, want the violations' (3+)", timelines)
	}
	if n := strings.Count(page, `<svg class="strip"`); n != 5 {
		t.Errorf("%d strips, want one per scenario × implementation (5)", n)
	}
	var out bytes.Buffer
	if err := WriteBreakdown(&out, runs); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"setnx-del\n  del-race", "first violation at 812.3 ms, 10.3 ms into fault", "set-nx-px\n  safe in every scenario it ran"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("breakdown lacks %q:\n%s", s, out.String())
		}
	}
}

// chromiumPath finds Debian's chromium. Under CI=true a missing one fails
// the test: the page check is part of the suite, not an option.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium is missing; run: sudo apt-get install -y --no-install-recommends chromium (make test does it as root)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// headless runs chromium on a page from disk with one action (--dump-dom,
// --screenshot=...) and returns its stdout and the page's console lines.
func headless(ctx context.Context, bin, profile, page string, action ...string) (string, []string, error) {
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0", "--window-size=1400,1000"}, action...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS=/dev/null")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	var console []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, ":CONSOLE") {
			console = append(console, l)
		}
	}
	if err != nil {
		err = fmt.Errorf("chromium %s: %w\n%s", strings.Join(action, " "), err, stderr.String())
	}
	return stdout.String(), console, err
}

// TestPagesRenderInChromium opens the suite page and a timeline as a person
// would, in headless Chromium from disk, and fails on any page error: a
// console message (an uncaught exception is one), the page's own error
// attribute, or the suite page not marking itself rendered. It also takes a
// screenshot of the suite page (kept in $LOCKSTORM_SCREENSHOT when set) and
// checks it is a picture, not a blank.
func TestPagesRenderInChromium(t *testing.T) {
	bin := chromiumPath(t)
	root, runs := suiteFixture(t)
	var timeline string
	for _, r := range runs {
		if strings.HasSuffix(r.Link, TimelineFile) {
			timeline = filepath.Join(root, filepath.FromSlash(r.Link))
			break
		}
	}
	shot := os.Getenv("LOCKSTORM_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "suite.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		dom     string
		console []string
		err     error
	}
	jobs := map[string][]string{"index": {"--dump-dom"}, "timeline": {"--dump-dom"}, "shot": {"--screenshot=" + shot}}
	pages := map[string]string{"index": filepath.Join(root, IndexFile), "timeline": timeline, "shot": filepath.Join(root, IndexFile)}
	res := map[string]result{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for name, action := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dom, console, err := headless(ctx, bin, t.TempDir(), pages[name], action...)
			mu.Lock()
			res[name] = result{dom, console, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("chromium: %s for three pages at once", time.Since(start).Round(time.Millisecond))
	for name, r := range res {
		if r.err != nil {
			t.Fatalf("%s: %v", name, r.err)
		}
		if len(r.console) > 0 {
			t.Errorf("%s: console messages (page errors):\n%s", name, strings.Join(r.console, "\n"))
		}
	}
	idx := res["index"].dom
	if strings.Contains(idx, "data-error=") {
		t.Errorf("suite page error: %s", regexp.MustCompile(`data-error="[^"]*"`).FindString(idx))
	}
	if !strings.Contains(idx, `data-rendered="ok"`) || !strings.Contains(idx, `data-cells="5"`) || !strings.Contains(idx, `data-strips="5"`) {
		t.Errorf("suite page did not mark itself rendered with 5 cells and 5 strips: %s", regexp.MustCompile(`<body[^>]*>`).FindString(idx))
	}
	tl := res["timeline"].dom
	if !strings.Contains(tl, `<svg id="overview"`) || !strings.Contains(tl, `class="witness"`) {
		t.Errorf("timeline DOM lacks its overview or witness (%d bytes)", len(tl))
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	bd := img.Bounds()
	colours := map[[3]uint32]bool{}
	for y := bd.Min.Y; y < bd.Max.Y; y += 7 {
		for x := bd.Min.X; x < bd.Max.X; x += 7 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
		}
	}
	if bd.Dx() < 1000 || len(colours) < 20 {
		t.Errorf("screenshot %v with %d colours: blank?", bd, len(colours))
	}
}

// TestSuiteHistory: the suite page draws a run from SuiteHistory's part of
// its history exactly as from the whole (an open fault, a healed one, a
// stall and a history that ends on a client's entry).
func TestSuiteHistory(t *testing.T) {
	for _, h := range []history.History{
		withFault(readGolden(t, "overlap.jsonl"), faultDesc, 802_000_000, 905_000_000),
		withFault(readGolden(t, "stale-hold.jsonl"), "partition n1", 5_000_000, -1),
		append(readGolden(t, "good.jsonl"), history.Op{Type: history.Ok, Process: history.NemesisProcess, Client: 2,
			F: history.FStall, N: int64(80 * time.Millisecond), Time: 100_000_000}),
		nil,
	} {
		o := outcome(t, h, nil, checker.Safe)
		row := FromOutcome(o)
		whole, slim := NewSuiteRun(row, h, o.Result, ""), NewSuiteRun(row, SuiteHistory(h), o.Result, "")
		if fmt.Sprint(whole) != fmt.Sprint(slim) {
			t.Errorf("from the whole history:\n%+v\nfrom SuiteHistory:\n%+v", whole, slim)
		}
		if len(h) > 0 && len(SuiteHistory(h)) >= len(h) {
			t.Errorf("SuiteHistory kept %d of %d entries", len(SuiteHistory(h)), len(h))
		}
	}
}
