package main

import (
	"strings"
	"unicode/utf8"

	"github.com/lockstorm/lockstorm/reports"
)

// The lines printed around the table (summary, time, replay commands,
// client process counts) fit the table's width too: a CI log or a terminal
// of 100 columns shows every one whole.

// foldLine breaks s at spaces into lines of at most reports.TableWidth
// columns, the later ones indented by hang: a sentence that reads on.
func foldLine(s, hang string) string {
	return strings.Join(fold(s, hang, ""), "\n")
}

// foldCommand breaks a shell command as foldLine does, each broken line
// ending in a backslash: the lines still paste as one command.
func foldCommand(s, hang string) string {
	return strings.Join(fold(s, hang, " \\"), "\n")
}

// fold fills lines greedily with s's words, each at most TableWidth
// columns with cont appended (a word longer than a line stays whole: a
// path is not cut). Every line but the first starts with hang.
func fold(s, hang, cont string) []string {
	var lines []string
	// An indented line keeps its indent: Fields drops it.
	cur := s[:len(s)-len(strings.TrimLeft(s, " "))]
	empty := true
	for _, word := range strings.Fields(s) {
		switch {
		case empty:
			cur += word
		case cols(cur)+1+cols(word)+cols(cont) <= reports.TableWidth:
			cur += " " + word
		default:
			lines = append(lines, cur+cont)
			cur = hang + word
		}
		empty = false
	}
	return append(lines, cur)
}

func cols(s string) int { return utf8.RuneCountInString(s) }
