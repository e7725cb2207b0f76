package main

import (
	"strings"
	"testing"
)

// TestRun feeds a recorded-style event stream: a pass, a skip with a reason shared by two tests
// (one a subtest), a failed test and a package that failed to build.
func TestRun(t *testing.T) {
	in := `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:12: set X=1 to run\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- SKIP: TestB (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestB"}
{"Action":"output","Package":"q","Test":"TestC/sub","Output":"        c_test.go:7: set X=1 to run\n"}
{"Action":"skip","Package":"q","Test":"TestC/sub"}
{"Action":"output","Package":"q","Test":"TestD","Output":"    d_test.go:3: got 1, want 2\n"}
{"Action":"output","Package":"q","Test":"TestD","Output":"--- FAIL: TestD (0.00s)\n"}
{"Action":"fail","Package":"q","Test":"TestD"}
{"Action":"output","Package":"q","Output":"FAIL\tq\t0.01s\n"}
{"Action":"fail","Package":"q"}
{"ImportPath":"r","Action":"build-output","Output":"r/x.go:1:1: syntax error\n"}
{"ImportPath":"r","Action":"build-fail"}
{"Action":"output","Package":"r","Output":"FAIL\tr [build failed]\n"}
{"Action":"fail","Package":"r"}
`
	var out strings.Builder
	failed, err := run(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if !failed {
		t.Error("failed = false")
	}
	got := out.String()
	for _, want := range []string{
		"got 1, want 2", "syntax error", "FAIL\tr [build failed]",
		"  2: set X=1 to run\n      p.TestB\n      q.TestC/sub\n",
		"\n1 passed, 2 failed, 2 skipped\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.HasSuffix(got, "2 skipped\n") == false {
		t.Errorf("closing line is not last:\n%s", got)
	}
}
