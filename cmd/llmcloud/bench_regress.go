// The `bench regress` command: a performance-regression check between two builds of llmcloud
// (package regress). Both binaries run the chosen suites (bench kernels, bench latency, bench
// throughput) round after round, alternating, and each benchmark's head/base time ratio is
// tested against 1 and the threshold. The baseline is a binary or a commit of this
// repository built on the spot; each run can be appended to a history file.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/regress"
)

func init() {
	benchModes["regress"] = runBenchRegress
}

func runBenchRegress(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench regress", stderr)
	base := fs.String("base", "", "the baseline llmcloud binary (or --base-commit)")
	baseCommit := fs.String("base-commit", "", "build the baseline from this commit of the repository (main, HEAD~1, a hash) in a temporary git worktree")
	repo := fs.String("repo", ".", "with --base-commit: a directory in the git repository to build from")
	head := fs.String("head", "", "the llmcloud binary under test (default: this binary)")
	suite := fs.String("suite", "kernels", "comma-separated suites: "+strings.Join(regress.SuiteNames, ", "))
	rounds := fs.Int("rounds", 40, "rounds; each runs the suites once with each binary, the order alternating")
	threshold := fs.String("threshold", "5%", "smallest slowdown flagged, as 5% or 0.05")
	confidence := fs.Float64("confidence", 0.95, "family-wise confidence over the suites' benchmarks")
	threads := fs.Int("threads", 1, "compute threads of every suite (matmul pool workers)")
	ops := fs.Int("ops", 200, "kernel suite: ops of each benchmark timed one by one in each round (the 10th percentile counts)")
	filter := fs.String("filter", "", "kernel suite: only the benchmarks whose name matches this regular expression")
	jsonOut := fs.String("json", "", "also write the result, with every round's figures, to this file")
	history := fs.String("history", "", "append the run's figures as one JSON line to this file (e.g. docs/benchmarks/regress/history.jsonl)")
	showHistory := fs.String("show-history", "", "print this history file as tables and exit (no benchmark runs)")
	reportOnly := fs.Bool("report-only", false, "print the verdicts but exit 0 even when a benchmark regressed")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *showHistory != "" {
		return printHistory(*showHistory, stdout)
	}
	thr, terr := parseFraction(*threshold)
	switch {
	case *base != "" && *baseCommit != "":
		return usagef("--base and --base-commit: give one baseline, a binary or a commit")
	case *base == "" && *baseCommit == "":
		return usagef("a baseline is required: --base BINARY or --base-commit REV")
	case terr != nil:
		return usagef("--threshold %q: %v", *threshold, terr)
	case !(*confidence > 0 && *confidence < 1):
		return usagef("--confidence %g: want a number in (0, 1)", *confidence)
	case *threads < 1 || *ops < 1 || *rounds < 1:
		return usagef("--threads, --ops and --rounds must be positive")
	}
	suites, err := regress.Suites(*suite, regress.SuiteOptions{Threads: *threads, Ops: *ops, Filter: *filter})
	if err != nil {
		return usagef("--suite: %v", err)
	}
	if *head == "" {
		if *head, err = os.Executable(); err != nil {
			return fmt.Errorf("--head not given and this binary's path is unknown: %v", err)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var progress io.Writer = stderr
	if *quiet {
		progress = nil
	}
	var built *regress.Build
	if *baseCommit != "" {
		tmp, err := os.MkdirTemp("", "llmcloud-regress-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*base = filepath.Join(tmp, "llmcloud-base")
		t0 := time.Now()
		if built, err = regress.BuildCommit(ctx, *repo, *baseCommit, "./cmd/llmcloud", *base, progress); err != nil {
			return err
		}
		if progress != nil {
			fmt.Fprintf(progress, "built the baseline in %.0fs\n", time.Since(t0).Seconds())
		}
	}
	cfg := regress.Config{Base: *base, Head: *head, Suites: suites, Rounds: *rounds, Threshold: thr, Confidence: *confidence, Progress: progress}
	res, err := regress.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if built != nil {
		res.BaseCommit = built.Commit // go build stamps none with -buildvcs=false (GOFLAGS)
		if res.HeadCommit == "" {
			// The head records no revision either: take the repository's (the tree the head
			// is normally built from), marked dirty if it has changes.
			res.HeadCommit = repoCommit(ctx, built.Repo)
			fmt.Fprintf(stderr, "note: %s records no VCS revision; the head commit is taken from %s: %s\n", *head, built.Repo, res.HeadCommit)
		}
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
	if *history != "" {
		e := res.History(time.Now(), regress.HostInfo())
		if built != nil {
			e.BaseRev = built.Rev
		}
		if err := regress.AppendHistory(*history, e); err != nil {
			return fmt.Errorf("--history: %v", err)
		}
	}
	if res.Regressions > 0 && !*reportOnly {
		return fmt.Errorf("%d benchmark(s) regressed", res.Regressions)
	}
	return nil
}

// repoCommit is the checked-out commit of the repository at dir, with "+dirty" when its tracked
// files have uncommitted changes; "" when git cannot tell.
func repoCommit(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return ""
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += "+dirty"
	}
	return c
}

func printHistory(path string, stdout io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--show-history: %v", err)
	}
	defer f.Close()
	entries, err := regress.ReadHistory(f)
	if err != nil {
		return fmt.Errorf("--show-history %s: %v", path, err)
	}
	regress.PrintHistory(stdout, entries)
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
