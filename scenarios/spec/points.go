package spec

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// The runner's own failpoints, passed by every client whatever the lock.
const (
	// PointBeforeAcquire is passed before each acquire.
	PointBeforeAcquire = "cycle/before-acquire"
	// PointHold is inside the critical section, after the read.
	PointHold = "cs/hold"
	// PointBeforeRelease is passed once the critical section is over, before the release.
	PointBeforeRelease = "cycle/before-release"
)

// RunnerPoints are the runner's own failpoints.
var RunnerPoints = []string{PointBeforeAcquire, PointHold, PointBeforeRelease}

// knownPoints are every declared failpoint of every implementation (those
// registered and those given in code: LoadFor) and the runner's own. A
// point of an implementation other than the one running is allowed (and
// inert): specs force several algorithms side by side.
func (s *Spec) knownPoints() []string {
	out := append([]string(nil), RunnerPoints...)
	for _, info := range lockimpl.All() {
		out = append(out, info.Points...)
	}
	for _, name := range slices.Sorted(maps.Keys(s.given)) {
		out = append(out, s.given[name].Points...)
	}
	return out
}

// pointMsg says what is wrong with a failpoint name ("" when nothing).
// Patterns ('*' for a segment) are allowed where patterns apply and must
// match some point; command points must have their four segments.
func (s *Spec) pointMsg(p string, patterns bool) string {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Sprintf("bad pattern %q: %v", p, err)
	}
	isPattern := strings.ContainsAny(p, "*?[")
	if isPattern && !patterns {
		return fmt.Sprintf("%q: a pattern cannot be waited for; name one point", p)
	}
	if CmdPoint(p) {
		parts := strings.Split(p, "/")
		if len(parts) != 4 {
			return fmt.Sprintf("%q: want cmd/NODE/COMMAND/before or cmd/NODE/COMMAND/after", p)
		}
		if parts[1] != "*" {
			if _, err := nodeNumber(parts[1]); err != nil && !isPattern {
				return fmt.Sprintf("%q: node %v", p, err)
			}
		}
		switch parts[3] {
		case "before", "after", "*":
		default:
			if !isPattern {
				return fmt.Sprintf("%q: %s", p, enumMsg(parts[3], "before", "after"))
			}
		}
		if parts[2] != strings.ToUpper(parts[2]) && !strings.Contains(parts[2], ":") {
			return fmt.Sprintf("%q: commands are named in upper case (%s)", p, strings.ToUpper(parts[2]))
		}
		return ""
	}
	known := s.knownPoints()
	if isPattern {
		for _, k := range known {
			if ok, _ := path.Match(p, k); ok {
				return ""
			}
		}
		return fmt.Sprintf("pattern %q matches no known failpoint", p)
	}
	if slices.Contains(known, p) {
		return ""
	}
	msg := fmt.Sprintf("unknown failpoint %q", p)
	if n := nearest(p, known); n != "" {
		return msg + fmt.Sprintf(" (did you mean %s?)", n)
	}
	if impl, _, ok := strings.Cut(p, "/"); ok {
		if info, err := s.lookup(impl); err == nil {
			return msg + fmt.Sprintf(" (%s has %s)", impl, strings.Join(info.Points, ", "))
		}
	}
	return msg + " (lockstorm list shows every implementation's points)"
}
