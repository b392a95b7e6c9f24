package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// Where an expectation comes from.
const (
	// FromSpec: the spec names the lock under expected.
	FromSpec = "spec"
	// FromClaims: derived from the lock's claims by the spec's rules.
	FromClaims = "claims"
	// FromBaseline: a recorded baseline (lockstorm baseline).
	FromBaseline = "baseline"
)

// Expectation is the verdict a run is expected to give, why, and where that
// came from. The zero value is no expectation: the verdict is reported and
// never counted as a difference.
type Expectation struct {
	Verdict string `json:"verdict,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Source  string `json:"source,omitempty"`
	// Search: the verdict is what a search finds on some schedules, not one
	// the spec forces (a rule's search: true); see Rule.Search.
	Search bool `json:"search,omitempty"`
	// Permissions say which kinds of finding the run may show (set by
	// scenarios.Compile from the claims, the spec's facts and its rules).
	Permissions []history.Permission `json:"permissions,omitempty"`
}

// Rule derives an expectation from a lock's claims: when every claim named
// under If has one of the listed values, the lock is expected to give
// Expect, because of Because (the scenario's fault, said in one sentence).
// A numeric claim (renewal_every) is compared, not listed: its value must
// meet every comparison given ({renewal_every: ">=0.5"}).
// A spec's rules are tried in order; the first that matches applies.
//
//	derive:
//	  - if: {fencing: true}
//	    expect: safe
//	    because: the resource refuses the paused holder's older token
//	  - if: {expiry: [server, server-separate, client-clock]}
//	    expect: unsafe
//	    because: the lock expires during the pause; a second client acquires while the first still writes
//	  - expect: safe
//	    because: the lock never expires; the second client waits out the pause
//
// Search marks a rule whose verdict the spec's schedule does not force for
// the locks it matches: a scheduled spec that forces its interleaving for a
// single-instance lock may leave a quorum lock's votes to fall as they
// will, so the failure is possible there but not certain. Such a rule's run
// is treated as a random mode's is: exploratory, a miss reported rather
// than a regression (an unexpected violation still is one).
type Rule struct {
	If      map[string]OneOf `yaml:"if"`
	Expect  string           `yaml:"expect"`
	Because string           `yaml:"because"`
	Search  bool             `yaml:"search"`
	// Permit and Forbid name kinds of finding (history.Kinds) the locks
	// this rule matches may, or may not, show here, over the defaults their
	// claims give (Permissions).
	Permit OneOf `yaml:"permit"`
	Forbid OneOf `yaml:"forbid"`
}

// OneOf is one value or a list of values (YAML scalar or sequence).
type OneOf []string

// UnmarshalYAML accepts a scalar or a sequence of scalars.
func (o *OneOf) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	switch x := v.(type) {
	case []any:
		out := make(OneOf, len(x))
		for i, e := range x {
			out[i] = fmt.Sprint(e)
		}
		*o = out
	default:
		*o = OneOf{fmt.Sprint(x)}
	}
	return nil
}

// Matches says whether c satisfies every condition of the rule.
func (r Rule) Matches(c lockimpl.Claims) bool {
	for name, want := range r.If {
		v, values, ok := c.ClaimField(name)
		if !ok {
			return false
		}
		if values == nil { // numeric: every comparison holds (checked at load)
			for _, cond := range want {
				if m, err := lockimpl.CompareClaim(v, cond); err != nil || !m {
					return false
				}
			}
			continue
		}
		if !slices.Contains(want, v) {
			return false
		}
	}
	return true
}

// validateRules checks the derive rules: known claims and values, a known
// verdict and a reason for each.
func (v *validation) validateRules() error {
	s := v.s
	for i, r := range s.Derive {
		at := fmt.Sprintf("derive.%d", i)
		for name, vals := range r.If {
			_, allowed, ok := lockimpl.Claims{}.ClaimField(name)
			if !ok {
				return v.bad(at+".if."+name, "unknown claim (known: %s)", strings.Join(lockimpl.ClaimNames(), ", "))
			}
			if len(vals) == 0 {
				return v.bad(at+".if."+name, "no value")
			}
			for _, val := range vals {
				if allowed == nil {
					if _, err := lockimpl.CompareClaim("0", val); err != nil {
						return v.bad(at+".if."+name, "%v", err)
					}
					continue
				}
				if !slices.Contains(allowed, val) {
					return v.bad(at+".if."+name, "%q: want one of %s", val, strings.Join(allowed, ", "))
				}
			}
		}
		if !validVerdict(r.Expect) {
			return v.bad(at+".expect", "verdict must be safe, unsafe, deadlock or inconclusive, got %q", r.Expect)
		}
		if err := v.validateKinds(at+".permit", r.Permit); err != nil {
			return err
		}
		if err := v.validateKinds(at+".forbid", r.Forbid); err != nil {
			return err
		}
		if strings.TrimSpace(r.Because) == "" {
			return v.bad(at+".because", "missing: say which part of the fault leads to the verdict")
		}
	}
	return nil
}

func validVerdict(v string) bool {
	switch v {
	case checker.Safe, checker.Unsafe, checker.Deadlock, checker.Inconclusive:
		return true
	}
	return false
}

// Derived returns the expectation the spec's rules give a lock with claims
// c: the first matching rule's, or none when c declares nothing or no rule
// matches.
func (s *Spec) Derived(c lockimpl.Claims) Expectation {
	if !c.Declared() {
		return Expectation{}
	}
	for _, r := range s.Derive {
		if r.Matches(c) {
			return Expectation{Verdict: r.Expect, Reason: r.Because, Source: FromClaims, Search: r.Search}
		}
	}
	return Expectation{}
}

// ExpectFor is the expectation of the lock run under name with claims c: the
// spec's own verdict when it lists name under expected (with the comment
// written beside it as the reason), else the one derived from c.
func (s *Spec) ExpectFor(name string, c lockimpl.Claims) Expectation {
	if v, ok := s.Expected[name]; ok {
		why := s.expectedWhy[name]
		if d := s.Derived(c); why == "" && d.Verdict == v {
			// No comment beside the entry: the rule that agrees says why.
			why = d.Reason
		}
		return Expectation{Verdict: v, Reason: why, Source: FromSpec}
	}
	return s.Derived(c)
}

// Expect is the expected verdict of the registered implementation or
// variant name ("" when there is none): the spec's own, else derived from
// its claims under the spec's options.
func (s *Spec) Expect(name string) string {
	if v, ok := s.Expected[name]; ok {
		return v
	}
	info, o, err := s.Resolve(name)
	if err != nil {
		return ""
	}
	return s.Derived(info.ClaimsUnder(o)).Verdict
}

// expectedComments reads the comment lines written above each entry of
// the spec's expected block (or after it on the same line): the reason for
// that verdict. A flow-style expected map has no comments.
func expectedComments(b []byte) map[string]string {
	out := map[string]string{}
	in := false
	var pending []string
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if !in {
			in = strings.HasPrefix(line, "expected:") && strings.TrimSpace(strings.TrimPrefix(line, "expected:")) == ""
			continue
		}
		switch {
		case trimmed == "":
			continue
		case !strings.HasPrefix(line, " ") && !strings.HasPrefix(line, "\t"):
			return out // the block ended
		case strings.HasPrefix(trimmed, "#"):
			pending = append(pending, strings.TrimSpace(strings.TrimPrefix(trimmed, "#")))
			continue
		}
		key, rest, ok := strings.Cut(trimmed, ":")
		if !ok {
			continue
		}
		why := strings.Join(pending, " ")
		if _, c, ok := strings.Cut(rest, "#"); ok && why == "" {
			why = strings.TrimSpace(c)
		}
		out[strings.Trim(strings.TrimSpace(key), `"'`)] = why
		pending = nil
	}
	return out
}
