package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
)

// JUnit XML, the subset CI systems read: one testsuite, one testcase per
// scenario × implementation, a failure element when the verdict is not the
// expected one.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnitCase is what a testcase carries.
type JUnitCase struct {
	Row     Row
	Seconds float64
}

// WriteJUnit writes rows as JUnit XML.
func WriteJUnit(w io.Writer, cases []JUnitCase) error {
	s := junitSuite{Name: "lockstorm", Tests: len(cases)}
	for _, c := range cases {
		r := c.Row
		jc := junitCase{Name: r.Scenario + "/" + r.Impl, Classname: "lockstorm." + r.Scenario, Time: c.Seconds,
			SystemOut: fmt.Sprintf("verdict %s (expected %s); %s; replay: %s", r.Verdict, r.Expected, r.Reason, r.Replay)}
		switch {
		case r.Fails():
			s.Failures++
			jc.Failure = &junitFailure{
				Message: fmt.Sprintf("expected %s, got %s", r.Expected, r.Verdict),
				Type:    "verdict",
				Text:    fmt.Sprintf("expected %s, got %s\nreason: %s\nwitness: %s\nreplay: %s\n", r.Expected, r.Verdict, r.Reason, r.Witness, r.Replay),
			}
			if un := r.Unpermitted(); len(un) > 0 {
				// A kind the expectation forbids fails the run whatever
				// its verdict: name it first.
				jc.Failure.Type = "finding"
				jc.Failure.Message = "not permitted: " + FindingsBrief(un) + "; " + jc.Failure.Message
				for _, f := range un {
					jc.Failure.Text = fmt.Sprintf("not permitted: %s ×%d (%s)\nfirst: %s\n", f.Kind, f.Count, f.Why, f.Witness) + jc.Failure.Text
				}
			}
		case r.Missed():
			// Reported, not failed, as in the table and the exit code: CI
			// shows it as skipped with the reason.
			s.Skipped++
			jc.Skipped = &junitSkipped{Message: fmt.Sprintf("miss: expected %s, got %s on this seed (exploratory: not a regression)", r.Expected, r.Verdict)}
		}
		s.Time += c.Seconds
		s.Cases = append(s.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnitFile writes the XML to path.
func WriteJUnitFile(path string, cases []JUnitCase) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := WriteJUnit(f, cases); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadJUnit parses what WriteJUnit wrote: the case names and failure
// messages, for round-trip tests and for tools that merge reports.
func ReadJUnit(r io.Reader) (cases []string, failures map[string]string, err error) {
	var s junitSuites
	if err := xml.NewDecoder(r).Decode(&s); err != nil {
		return nil, nil, fmt.Errorf("junit: %w", err)
	}
	failures = map[string]string{}
	for _, su := range s.Suites {
		for _, c := range su.Cases {
			cases = append(cases, c.Name)
			if c.Failure != nil {
				failures[c.Name] = c.Failure.Message
			}
		}
	}
	return cases, failures, nil
}
