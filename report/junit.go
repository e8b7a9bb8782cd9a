package report

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/locklab/locklab/verdict"
)

// JUnit is one JUnit XML test suite, the file CI systems show natively.
type JUnit struct {
	suite junitSuite
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// NewJUnit starts a suite.
func NewJUnit(name string) *JUnit { return &JUnit{suite: junitSuite{Name: name}} }

// Pass adds a passing test case.
func (j *JUnit) Pass(class, name string, seconds float64) { j.add(class, name, seconds) }

// Fail adds a failed test case: the lock did something it must not.
func (j *JUnit) Fail(class, name string, seconds float64, message, text string) {
	j.add(class, name, seconds).Failure = &junitMessage{Message: message, Text: text}
	j.suite.Failures++
}

// Error adds a test case that could not be decided: it is not a pass.
func (j *JUnit) Error(class, name string, seconds float64, message string) {
	j.add(class, name, seconds).Error = &junitMessage{Message: message}
	j.suite.Errors++
}

// Skip adds a test case that does not apply.
func (j *JUnit) Skip(class, name, message string) {
	j.add(class, name, 0).Skipped = &junitMessage{Message: message}
	j.suite.Skipped++
}

func (j *JUnit) add(class, name string, seconds float64) *junitCase {
	j.suite.Cases = append(j.suite.Cases, junitCase{Name: name, Classname: class, Time: seconds})
	j.suite.Tests++
	return &j.suite.Cases[len(j.suite.Cases)-1]
}

// XML is the suite as a file.
func (j *JUnit) XML() ([]byte, error) {
	b, err := xml.MarshalIndent(j.suite, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("junit: %w", err)
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// RunsJUnit is JUnit XML for a bench or a scenario run: one test case per
// case (approach and setting). A case that contradicted its expectation
// fails with its explanation and violations (the deciding incidents
// first); one that could not be
// verified is an error; regressions (by case name, from a comparison with
// a baseline) fail the case too.
func RunsJUnit(kind string, runs []Run, regressions map[string][]string) ([]byte, error) {
	j := NewJUnit("locklab " + kind)
	for _, r := range runs {
		class := "locklab." + kind + "." + r.Approach
		var why []string
		if r.Status == verdict.Contradicts {
			why = append(why, r.Explanation)
			why = append(why, violationNotes(r)...)
		}
		if reg := regressions[r.Case]; len(reg) > 0 {
			why = append(why, "regression: "+strings.Join(reg, "; "))
		}
		switch {
		case len(why) > 0:
			j.Fail(class, r.Case, r.Seconds, why[0], strings.Join(why, "\n"))
		case r.Status == verdict.Undecided || !r.Complete:
			j.Error(class, r.Case, r.Seconds, "not verified: "+r.Explanation)
		default:
			j.Pass(class, r.Case, r.Seconds)
		}
	}
	return j.XML()
}
