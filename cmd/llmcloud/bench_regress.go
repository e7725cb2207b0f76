// The `bench regress` command: a performance-regression check between two builds of llmcloud
// (package regress). Both binaries run `bench kernels --json` round after round, alternating,
// and each benchmark's median head/base ratio is tested against 1 and the threshold.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/regress"
)

func init() {
	benchModes["regress"] = runBenchRegress
}

func runBenchRegress(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench regress", stderr)
	base := fs.String("base", "", "the baseline llmcloud binary (e.g. built from main)")
	head := fs.String("head", "", "the llmcloud binary under test")
	suite := fs.String("suite", "kernels", "benchmark suite: kernels (`llmcloud bench kernels --list`)")
	rounds := fs.Int("rounds", 40, "rounds; each runs the suite once with each binary, the order alternating")
	threshold := fs.String("threshold", "5%", "smallest slowdown flagged, as 5% or 0.05")
	confidence := fs.Float64("confidence", 0.95, "family-wise confidence over the suite's benchmarks")
	threads := fs.Int("threads", 1, "matmul pool workers in the suite")
	ops := fs.Int("ops", 200, "ops of each benchmark timed one by one in each round (the 10th percentile counts)")
	filter := fs.String("filter", "", "only the benchmarks whose name matches this regular expression")
	jsonOut := fs.String("json", "", "also write the result, with every round's figures, to this file")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	thr, terr := parseFraction(*threshold)
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *base == "" || *head == "":
		return usagef("--base and --head (two llmcloud binaries) are required")
	case *suite != "kernels":
		return usagef("--suite %q: the only suite is kernels", *suite)
	case terr != nil:
		return usagef("--threshold %q: %v", *threshold, terr)
	case !(*confidence > 0 && *confidence < 1):
		return usagef("--confidence %g: want a number in (0, 1)", *confidence)
	case *threads < 1 || *ops < 1:
		return usagef("--threads and --ops must be positive")
	}
	suiteArgs := []string{"bench", "kernels", "--json", "--threads", strconv.Itoa(*threads), "--ops", strconv.Itoa(*ops)}
	if *filter != "" {
		suiteArgs = append(suiteArgs, "--filter", *filter)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := regress.Config{Base: *base, Head: *head, SuiteArgs: suiteArgs, Rounds: *rounds, Threshold: thr, Confidence: *confidence}
	if !*quiet {
		cfg.Progress = stderr
	}
	res, err := regress.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if min := regress.MinRounds(res.Alpha); *rounds < min {
		fmt.Fprintf(stderr, "warning: %d rounds cannot reach %g%% confidence over %d benchmarks (need %d): nothing can be flagged\n",
			*rounds, 100**confidence, len(res.Comparisons), min)
	}
	res.Print(stdout)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if res.Regressions > 0 {
		return fmt.Errorf("%d benchmark(s) regressed", res.Regressions)
	}
	return nil
}

// parseFraction reads "5%" or "0.05".
func parseFraction(s string) (float64, error) {
	pct := strings.HasSuffix(s, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(s, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("not a number or percentage")
	}
	if pct {
		f /= 100
	}
	if f < 0 || f >= 1 {
		return 0, fmt.Errorf("want a fraction in [0, 1) (0%% to 100%%)")
	}
	return f, nil
}
