package locktest

import (
	"flag"
	"regexp"
	"strings"
	"testing"
)

// subtestFilter says which of t's subtests `go test -run` and `-skip` would
// run, by the rules of the testing package: both patterns are split on
// slashes (outside brackets and parentheses) and on top-level bars, and a
// subtest's full name (t's name, "/", its label) is matched level by level.
// Run asks it before starting anything, so `-run 'TestMyLock/del-race'`
// runs that scenario alone instead of the whole battery (t.Run would only
// hide the others' results after they ran). Without the flags (outside
// `go test`) everything is kept.
func subtestFilter(t testing.TB) func(label string) bool {
	return filterFor(t.Name(), testFlag("test.run"), testFlag("test.skip"))
}

// filterFor is subtestFilter for a test named parent under the patterns
// run and skip.
func filterFor(parent, run, skip string) func(label string) bool {
	runM, err1 := compileMatch(run)
	skipM, err2 := compileMatch(skip)
	if err1 != nil || err2 != nil {
		// The testing package already refused a bad pattern; never drop
		// scenarios on a pattern this copy of its rules reads differently.
		return func(string) bool { return true }
	}
	return func(label string) bool {
		elem := strings.Split(parent+"/"+rewrite(label), "/")
		if run != "" {
			if ok, _ := runM.matches(elem); !ok {
				return false
			}
		}
		if skip != "" {
			// As in testing: a partial skip match (the pattern is deeper
			// than the name) does not skip.
			if ok, partial := skipM.matches(elem); ok && !partial {
				return false
			}
		}
		return true
	}
}

func testFlag(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}

// alternatives are a pattern's top-level |-separated alternatives, each a
// regexp per level.
type alternatives [][]*regexp.Regexp

func (a alternatives) matches(elem []string) (ok, partial bool) {
	for _, levels := range a {
		ok, partial := matchLevels(levels, elem)
		if ok {
			return true, partial
		}
	}
	return false, false
}

func matchLevels(levels []*regexp.Regexp, elem []string) (ok, partial bool) {
	for i, s := range elem {
		if i >= len(levels) {
			break
		}
		if !levels[i].MatchString(s) {
			return false, false
		}
	}
	return true, len(elem) < len(levels)
}

// compileMatch splits pattern as the testing package does: on top-level
// bars into alternatives, each on slashes into levels.
func compileMatch(pattern string) (alternatives, error) {
	var out alternatives
	for _, alt := range split(pattern, '|') {
		var levels []*regexp.Regexp
		for _, p := range split(alt, '/') {
			re, err := regexp.Compile(p)
			if err != nil {
				return nil, err
			}
			levels = append(levels, re)
		}
		out = append(out, levels)
	}
	return out, nil
}

// split cuts s at every sep outside brackets and parentheses (and not
// escaped), as testing's splitRegexp does.
func split(s string, sep byte) []string {
	var parts []string
	cs, cp, start := 0, 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			cs++
		case ']':
			if cs--; cs < 0 {
				cs = 0
			}
		case '(':
			if cs == 0 {
				cp++
			}
		case ')':
			if cs == 0 {
				cp--
			}
		case '\\':
			i++
		case sep:
			if cs == 0 && cp == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// rewrite is how testing turns a subtest's name into its path element:
// spaces become underscores.
func rewrite(s string) string {
	return strings.Map(func(r rune) rune {
		if r == ' ' {
			return '_'
		}
		return r
	}, s)
}
