// Command testsum reads `go test -json` output on stdin and prints what a person needs from a
// whole-module run: each package's result line, the full output of every failed test and of
// every package that failed to build, the skipped tests grouped by reason (one line per reason,
// however many tests share it), and a closing line `N passed, N failed, N skipped`. It exits 1
// when a test or a package failed (a package that fails without a failed test, such as a build
// error or a panic outside a test, counts as one failure).
//
//	go test -json -count=1 ./... | go run ./internal/testsum
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
}

type key struct{ pkg, test string }

// summary accumulates the counts and the skip reasons while the events stream by.
type summary struct {
	w                       io.Writer
	out                     map[key][]string // output lines of tests (and packages) not finished yet
	build                   map[string][]string
	pkgFailedTests          map[string]int
	passed, failed, skipped int
	skips                   map[string][]string // reason -> "pkg.Test" names
}

func newSummary(w io.Writer) *summary {
	return &summary{w: w, out: map[key][]string{}, build: map[string][]string{},
		pkgFailedTests: map[string]int{}, skips: map[string][]string{}}
}

func (s *summary) add(e event) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "build-output":
		s.build[e.ImportPath] = append(s.build[e.ImportPath], e.Output)
	case "build-fail":
		fmt.Fprint(s.w, strings.Join(s.build[e.ImportPath], ""))
		delete(s.build, e.ImportPath)
	case "output":
		s.out[k] = append(s.out[k], e.Output)
	case "pass", "fail", "skip":
		lines := s.out[k]
		delete(s.out, k)
		if e.Test == "" {
			s.packageDone(e, lines)
			return
		}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
			s.pkgFailedTests[e.Package]++
			fmt.Fprint(s.w, strings.Join(lines, ""))
		case "skip":
			s.skipped++
			r := skipReason(lines)
			s.skips[r] = append(s.skips[r], e.Package+"."+e.Test)
		}
	}
}

// packageDone prints a package's own output (its `ok`/`FAIL` line and anything printed outside
// a test) and counts a package that failed without a failed test.
func (s *summary) packageDone(e event, lines []string) {
	for _, l := range lines {
		if l != "PASS\n" {
			fmt.Fprint(s.w, l)
		}
	}
	if e.Action == "fail" && s.pkgFailedTests[e.Package] == 0 {
		s.failed++
		if len(lines) == 0 {
			fmt.Fprintf(s.w, "FAIL\t%s\n", e.Package)
		}
	}
}

var (
	fileLine = regexp.MustCompile(`^\s*[\w.\-]+\.go:\d+: `)
	header   = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)|--- (SKIP|PASS|FAIL))`)
)

// skipReason is what the skipped test logged (t.Skip's message), without the file:line
// prefix, so that tests skipped for the same reason group together.
func skipReason(lines []string) string {
	var msg []string
	for _, l := range lines {
		if header.MatchString(l) {
			continue
		}
		l = strings.TrimSpace(fileLine.ReplaceAllString(l, ""))
		if l != "" {
			msg = append(msg, l)
		}
	}
	if len(msg) == 0 {
		return "(no reason given)"
	}
	return strings.Join(msg, " / ")
}

// maxNames is how many test names report lists under one skip reason.
const maxNames = 8

// report prints the skip reasons, most frequent first, and the closing line.
func (s *summary) report() {
	// A package whose run was cut short leaves unfinished tests; their output is the clue.
	for k, lines := range s.out {
		if k.test != "" && len(lines) > 0 {
			fmt.Fprint(s.w, strings.Join(lines, ""))
		}
	}
	if len(s.skips) > 0 {
		reasons := make([]string, 0, len(s.skips))
		for r := range s.skips {
			reasons = append(reasons, r)
		}
		sort.Slice(reasons, func(i, j int) bool {
			a, b := reasons[i], reasons[j]
			if len(s.skips[a]) != len(s.skips[b]) {
				return len(s.skips[a]) > len(s.skips[b])
			}
			return a < b
		})
		fmt.Fprintf(s.w, "\nskipped tests (%d), by reason:\n", s.skipped)
		for _, r := range reasons {
			tests := s.skips[r]
			sort.Strings(tests)
			fmt.Fprintf(s.w, "  %d: %s\n", len(tests), r)
			for i, t := range tests {
				if i == maxNames && len(tests) > maxNames+1 {
					fmt.Fprintf(s.w, "      ... and %d more\n", len(tests)-i)
					break
				}
				fmt.Fprintf(s.w, "      %s\n", t)
			}
		}
	}
	fmt.Fprintf(s.w, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

func run(r io.Reader, w io.Writer) (failed bool, err error) {
	s := newSummary(w)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			// Not an event (go test prints some errors, such as a bad package pattern, as text).
			fmt.Fprintln(w, sc.Text())
			s.failed++
			continue
		}
		s.add(e)
	}
	if err := sc.Err(); err != nil {
		return true, err
	}
	s.report()
	return s.failed > 0, nil
}

func main() {
	failed, err := run(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	}
	if failed {
		os.Exit(1)
	}
}
