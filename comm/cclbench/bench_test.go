// Tests of the benchmark: the test binary re-executes itself as 3 ranks through Launch (real
// processes and sockets) and every collective's table must have zero wrong elements; a failing
// rank makes Launch fail naming it.
package cclbench

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/comm"
)

const childEnv = "LLMCLOUD_CCLBENCH_TEST_OP"

func TestMain(m *testing.M) {
	if op := os.Getenv(childEnv); op != "" {
		os.Exit(child(op))
	}
	os.Exit(m.Run())
}

func child(op string) int {
	if op == "fail" {
		if os.Getenv("RANK") == "1" {
			fmt.Fprintln(os.Stderr, "rank 1 gives up")
			return 3
		}
		op = "allreduce"
	}
	env, err := comm.EnvFromOS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	opts := comm.DefaultOptions()
	opts.Timeout = 30 * time.Second
	g, err := comm.Init(env, opts, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer g.Close()
	cfg := Config{Op: op, MinBytes: 4, MaxBytes: 1 << 20, StepFactor: 16, Iters: 3, Warmup: 1}
	if _, err := Run(g, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestEveryOpOnThreeRanks(t *testing.T) {
	for _, op := range Ops {
		t.Run(op, func(t *testing.T) {
			t.Setenv(childEnv, op)
			for _, tr := range []string{"tcp", "shm"} {
				t.Setenv("LLMCLOUD_CCL_TRANSPORT", tr)
				var out, errb bytes.Buffer
				if err := Launch(os.Args[0], []string{"-test.run=^$"}, 3, &out, &errb, 30*time.Second); err != nil {
					t.Fatalf("%s: %v\n%s%s", tr, err, out.String(), errb.String())
				}
				lines := strings.Split(strings.TrimSpace(out.String()), "\n")
				if len(lines) != 2+5 { // header, column names, sizes 4 B .. 1 MiB by 16
					t.Fatalf("%s: %d lines:\n%s", tr, len(lines), out.String())
				}
				for _, l := range lines[2:] {
					f := strings.Fields(l)
					if len(f) != 10 || f[8] != "0" {
						t.Errorf("%s: bad row %q", tr, l)
					}
				}
			}
		})
	}
}

func TestLaunchNamesFailedRank(t *testing.T) {
	t.Setenv(childEnv, "fail")
	var out, errb bytes.Buffer
	err := Launch(os.Args[0], []string{"-test.run=^$"}, 3, &out, &errb, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "rank") {
		t.Fatalf("Launch = %v, want an error naming a rank\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "[rank 1] rank 1 gives up") {
		t.Errorf("stderr lacks rank 1's prefixed line:\n%s", errb.String())
	}
}

func TestBusFactor(t *testing.T) {
	for _, tc := range []struct {
		op   string
		n    int
		want float64
	}{{"allreduce", 2, 1}, {"allreduce", 4, 1.5}, {"allgather", 4, 0.75}, {"reducescatter", 8, 0.875},
		{"alltoall", 2, 0.5}, {"broadcast", 8, 1}, {"reduce", 3, 1}, {"sendrecv", 4, 1}} {
		if got := BusFactor(tc.op, tc.n); got != tc.want {
			t.Errorf("BusFactor(%s, %d) = %v, want %v", tc.op, tc.n, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	good := Config{Op: "allreduce", MinBytes: 8, MaxBytes: 64, StepFactor: 2, Iters: 1}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Config{
		{Op: "allscatter", MinBytes: 8, MaxBytes: 64, StepFactor: 2, Iters: 1},
		{Op: "allreduce", MinBytes: 64, MaxBytes: 8, StepFactor: 2, Iters: 1},
		{Op: "allreduce", MinBytes: 8, MaxBytes: 64, StepFactor: 1, Iters: 1},
		{Op: "allreduce", MinBytes: 8, MaxBytes: 64, StepFactor: 2, Iters: 0},
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v validated", bad)
		}
	}
}

func TestMeanMedian(t *testing.T) {
	for _, tc := range []struct {
		ts           []float32
		mean, median float64
	}{{[]float32{3}, 3, 3}, {[]float32{4, 1, 2}, 7.0 / 3, 2}, {[]float32{8, 1, 2, 5}, 4, 3.5}} {
		mean, median := meanMedian(tc.ts)
		if math.Abs(mean-tc.mean) > 1e-6 || median != tc.median {
			t.Errorf("meanMedian(%v) = %v, %v; want %v, %v", tc.ts, mean, median, tc.mean, tc.median)
		}
	}
}
