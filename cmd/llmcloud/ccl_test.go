// Tests of `llmcloud ccl bench` run in-process as a single rank (RANK set, as under an external
// launcher) and of its flag errors; multi-rank runs are tested in comm/cclbench.
package main

import (
	"strings"
	"testing"
)

func TestCCLBenchOneRank(t *testing.T) {
	t.Setenv("RANK", "0")
	t.Setenv("WORLD_SIZE", "1")
	out, _ := run(t, "ccl", "bench", "--min-bytes", "8", "--max-bytes", "1K", "--step-factor", "4", "--iters", "2", "--warmup", "0")
	if !strings.Contains(out, "busbw(GB/s)") || strings.Count(out, "\n") != 2+4 {
		t.Fatalf("unexpected table:\n%s", out)
	}
}

func TestCCLBenchBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"ccl"}, {"ccl", "bench", "--op", "allscatter"}, {"ccl", "bench", "--algo", "butterfly"},
		{"ccl", "bench", "--transport", "ib"}, {"ccl", "bench", "--max-bytes", "lots"},
	} {
		var out, errb strings.Builder
		if code := runMain(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, errb.String())
		}
	}
}
