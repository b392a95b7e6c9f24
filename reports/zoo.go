package reports

import (
	"fmt"
	"html/template"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The zoo page (`lockstorm report --zoo FILE`, `make zoo-page`): every
// library the zoo ran against every scenario, one cell per pair, coloured
// by the worst verdict any seed gave it, so a maintainer sees at a glance
// where their library broke; each cell links to its witness (the runs'
// verdicts, evidence, replay commands, and the kept run folder's spec and
// history), because a colour alone cannot be acted on.

// ZooCell is one library × scenario over the seeds.
type ZooCell struct {
	Impl, Scenario string
	// Verdict is the worst of the seeds' verdicts (severity below);
	// "skipped" when the library did not run the scenario.
	Verdict string
	// Unexpected counts the seeds whose verdict was not the expected one
	// (a finding of the matrix); Runs are the seeds' rows, in seed order.
	Unexpected int
	Runs       []Row
	// Anchor is the id of the cell's witness on the page.
	Anchor string
}

// severity orders verdicts for a cell: a seed that found a violation
// outweighs seeds that did not, an unknown outweighs a clean pass.
func severity(v string) int {
	switch v {
	case "unsafe":
		return 4
	case "deadlock":
		return 3
	case "inconclusive":
		return 2
	case "safe":
		return 1
	}
	return 0
}

// ZooMatrix groups rows by library (Impl) and scenario: the sorted
// libraries, the sorted scenarios any library ran, and the cells, one per
// pair (rows[i][j] for libs[i], scens[j]), "skipped" where no row was.
func ZooMatrix(rows []Row) (libs, scens []string, cells [][]ZooCell) {
	byPair := map[[2]string][]Row{}
	for _, r := range rows {
		k := [2]string{r.Impl, r.Scenario}
		if byPair[k] == nil {
			if !slices.Contains(libs, r.Impl) {
				libs = append(libs, r.Impl)
			}
			if !slices.Contains(scens, r.Scenario) {
				scens = append(scens, r.Scenario)
			}
		}
		byPair[k] = append(byPair[k], r)
	}
	slices.Sort(libs)
	slices.Sort(scens)
	for i, l := range libs {
		cells = append(cells, make([]ZooCell, len(scens)))
		for j, s := range scens {
			c := ZooCell{Impl: l, Scenario: s, Verdict: "skipped", Anchor: fmt.Sprintf("w%d-%d", i, j)}
			runs := byPair[[2]string{l, s}]
			slices.SortStableFunc(runs, func(a, b Row) int { return int(a.Seed) - int(b.Seed) })
			for _, r := range runs {
				if c.Runs == nil || severity(r.Verdict) > severity(c.Verdict) {
					c.Verdict = r.Verdict
				}
				if r.Expected != "" && r.Verdict != r.Expected {
					c.Unexpected++
				}
				c.Runs = append(c.Runs, r)
			}
			cells[i][j] = c
		}
	}
	return libs, scens, cells
}

// zooLink is a run folder's file as the page links it: relative to the
// page's folder when it can be, so the page and build/zoo move together.
func zooLink(pageDir, runDir, file string) string {
	if runDir == "" {
		return ""
	}
	p := filepath.Join(runDir, file)
	// Rows carry absolute run folders (make zoo's), a page a relative
	// path: both made absolute, the link is relative whenever they share
	// a root, so a page opened from a copy of the tree still finds them.
	if pageDir != "" {
		ap, err1 := filepath.Abs(p)
		ad, err2 := filepath.Abs(pageDir)
		if err1 == nil && err2 == nil {
			if rel, err := filepath.Rel(ad, ap); err == nil {
				p = rel
			}
		}
	}
	return filepath.ToSlash(p)
}

var zooTmpl = template.Must(template.New("zoo").Funcs(template.FuncMap{
	"short": func(v string) string {
		if v == "inconclusive" {
			return "inconc."
		}
		return v
	},
	"link": zooLink,
}).Parse(zooHTML))

// WriteZooPage writes the zoo page for rows to w; pageDir is the folder
// the page will be in (run-folder links are made relative to it).
func WriteZooPage(w io.Writer, rows []Row, pageDir, title string) error {
	libs, scens, cells := ZooMatrix(rows)
	counts := map[string]int{}
	for _, row := range cells {
		for _, c := range row {
			counts[c.Verdict]++
		}
	}
	return zooTmpl.Execute(w, map[string]any{
		"Title": title, "Libs": libs, "Scens": scens, "Cells": cells, "PageDir": pageDir,
		"Legend": []string{"unsafe", "deadlock", "inconclusive", "safe", "skipped"}, "Counts": counts,
	})
}

// WriteZooFile writes the zoo page to path, making its folder.
func WriteZooFile(path string, rows []Row, title string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	var b strings.Builder
	if err := WriteZooPage(&b, rows, filepath.Dir(path), title); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

const zooHTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>
body{font:13px/1.35 system-ui,sans-serif;margin:16px;color:#222}
table.zoo{border-collapse:collapse}
table.zoo th,table.zoo td{border:1px solid #ccc;padding:0}
table.zoo th.lib{text-align:left;padding:2px 6px;white-space:nowrap}
table.zoo thead th{height:150px;vertical-align:bottom;padding:2px}
table.zoo thead th div{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
td a{display:block;min-width:26px;height:20px;text-align:center;line-height:20px;text-decoration:none;color:#111;font-size:11px}
.unsafe{background:#e53935;color:#fff!important}.deadlock{background:#8e24aa;color:#fff!important}
.inconclusive{background:#fbc02d}.safe{background:#66bb6a}.skipped{background:#eee;color:#999!important}
td.diff a{outline:2px solid #000;outline-offset:-3px;font-weight:bold}
.legend span{display:inline-block;padding:2px 8px;margin-right:6px}
.w{margin:6px 0;padding:4px 8px;border-left:6px solid #ccc}
.w:target{background:#fff8d0}
code{font-size:12px}
</style></head><body>
<h1>{{.Title}}</h1>
<p class="legend">{{range .Legend}}<span class="{{.}}">{{.}}: {{index $.Counts .}}</span>{{end}}
<span style="outline:2px solid #000">bold, framed: a seed's verdict differs from the expected one</span></p>
<p>One cell per library × scenario: its colour is the worst verdict over the seeds, its number (framed) on how many seeds the verdict differed from what the library's claims predict; each cell links to its witness below.</p>
<table class="zoo"><thead><tr><th></th>{{range .Scens}}<th><div>{{.}}</div></th>{{end}}</tr></thead><tbody>
{{range $i, $row := .Cells}}<tr><th class="lib">{{index $.Libs $i}}</th>{{range $row}}<td class="{{if .Unexpected}}diff{{end}}">{{if .Runs}}<a class="{{.Verdict}}" href="#{{.Anchor}}" title="{{.Impl}} × {{.Scenario}}: {{.Verdict}}">{{if .Unexpected}}{{.Unexpected}}{{end}}</a>{{else}}<a class="skipped" title="{{.Impl}} × {{.Scenario}}: not run"></a>{{end}}</td>{{end}}</tr>
{{end}}</tbody></table>
<h2>Witnesses</h2>
{{range .Cells}}{{range .}}{{if .Runs}}<div class="w {{.Verdict}}-w" id="{{.Anchor}}"><b>{{.Impl}} × {{.Scenario}}</b>: <span class="{{.Verdict}}">&nbsp;{{.Verdict}}&nbsp;</span>
<ul>{{range .Runs}}<li>seed {{.Seed}}: {{.Verdict}}{{if .Expected}} (expected {{.Expected}}){{end}}: {{.Reason}}{{if and .Evidence (ne .Evidence "—")}}; {{.Evidence}}{{end}}<br>
replay: <code>{{.Replay}}</code>{{if .RunDir}}<br>run folder: <a href="{{link $.PageDir .RunDir "scenario.yaml"}}">spec</a> · <a href="{{link $.PageDir .RunDir "history.jsonl"}}">history</a> · <a href="{{link $.PageDir .RunDir "summary.json"}}">summary</a>{{end}}</li>{{end}}</ul></div>
{{end}}{{end}}{{end}}
</body></html>
`
