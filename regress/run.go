package regress

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Config is one regression check.
type Config struct {
	Base, Head string  // the two binaries
	Suites     []Suite // what each binary runs per round, in this order
	Rounds     int
	Threshold  float64 // a slowdown smaller than this fraction is never flagged (0.05 = 5%)
	// Confidence is the family-wise confidence over all the suite's benchmarks (Bonferroni):
	// each benchmark's interval has two-sided error (1-Confidence)/benchmarks.
	Confidence float64
	Progress   io.Writer // one line per round; nil for none
}

// Result is a check's outcome (also its --json file).
type Result struct {
	Base        string       `json:"base"`
	Head        string       `json:"head"`
	BaseInject  string       `json:"base_injected_slowdown,omitempty"`
	HeadInject  string       `json:"head_injected_slowdown,omitempty"`
	BaseCommit  string       `json:"base_commit,omitempty"` // the binaries' VCS revisions (Revision)
	HeadCommit  string       `json:"head_commit,omitempty"`
	Suites      []string     `json:"suites"`
	SuiteArgs   [][]string   `json:"suite_args"`
	Rounds      int          `json:"rounds"`
	Threshold   float64      `json:"threshold"`
	Confidence  float64      `json:"confidence"`
	Alpha       float64      `json:"alpha_per_benchmark"`
	LoadBefore  string       `json:"loadavg_before,omitempty"`
	LoadAfter   string       `json:"loadavg_after,omitempty"`
	Seconds     float64      `json:"seconds"`
	Comparisons []Comparison `json:"benchmarks"`
	Regressions int          `json:"regressions"`
}

// Comparison is one benchmark's verdict.
type Comparison struct {
	Name   string `json:"name"`
	Kernel string `json:"kernel"`
	Unit   string `json:"unit"` // of the figures: "ns/op", "ms", "tok/s"
	// HigherIsBetter marks a throughput: Ratio is then base/head.
	HigherIsBetter bool    `json:"higher_is_better,omitempty"`
	BaseMedian     float64 `json:"base_median"`
	HeadMedian     float64 `json:"head_median"`
	// Ratio is the Hodges-Lehmann estimate over the rounds (stats.go) of the time ratio:
	// head/base for a time or latency, base/head for a throughput; above 1 is slower.
	Ratio   float64   `json:"ratio"`
	Lo      float64   `json:"ci_low"`
	Hi      float64   `json:"ci_high"`
	P       float64   `json:"signed_rank_p"`
	Verdict string    `json:"verdict"` // "regression", "faster" or "~"
	BaseRaw []float64 `json:"base"`    // every round's figure
	HeadRaw []float64 `json:"head"`
	Bytes   int64     `json:"bytes_per_op,omitempty"`
}

// Run alternates the binaries for cfg.Rounds rounds (base first in even rounds, head first in
// odd ones) and compares them.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Rounds < 1 || cfg.Threshold < 0 || !(cfg.Confidence > 0 && cfg.Confidence < 1) {
		return nil, fmt.Errorf("regress: rounds %d must be >= 1, threshold %g >= 0, confidence %g in (0, 1)", cfg.Rounds, cfg.Threshold, cfg.Confidence)
	}
	if len(cfg.Suites) == 0 {
		return nil, fmt.Errorf("regress: no suite to run")
	}
	for _, b := range []string{cfg.Base, cfg.Head} {
		if st, err := os.Stat(b); err != nil {
			return nil, fmt.Errorf("regress: binary: %w", err)
		} else if st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("regress: %s is not an executable file", b)
		}
	}
	start := time.Now()
	res := &Result{Base: cfg.Base, Head: cfg.Head, Rounds: cfg.Rounds,
		Threshold: cfg.Threshold, Confidence: cfg.Confidence, LoadBefore: loadavg()}
	res.BaseCommit, _ = Revision(cfg.Base)
	res.HeadCommit, _ = Revision(cfg.Head)
	for _, s := range cfg.Suites {
		res.Suites, res.SuiteArgs = append(res.Suites, s.Name), append(res.SuiteArgs, s.Args)
	}
	tmp, err := os.MkdirTemp("", "llmcloud-regress-out-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var base, head []*SuiteResult
	for r := 0; r < cfg.Rounds; r++ {
		bins, order := [2]string{cfg.Base, cfg.Head}, [2]int{0, 1}
		if r%2 == 1 {
			order = [2]int{1, 0}
		}
		got := [2]*SuiteResult{{}, {}}
		for _, s := range cfg.Suites {
			for _, i := range order {
				sr, err := runSuite(ctx, bins[i], s, tmp)
				if err != nil {
					return nil, err
				}
				if sr.Injected != "" {
					got[i].Injected = sr.Injected
				}
				got[i].Benchmarks = append(got[i].Benchmarks, sr.Benchmarks...)
			}
		}
		base, head = append(base, got[0]), append(head, got[1])
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "round %d/%d done (%.0fs)\n", r+1, cfg.Rounds, time.Since(start).Seconds())
		}
	}
	res.BaseInject, res.HeadInject = base[0].Injected, head[0].Injected
	cmp, err := compare(base, head, cfg)
	if err != nil {
		return nil, err
	}
	res.Comparisons = cmp
	if len(cmp) > 0 {
		res.Alpha = (1 - cfg.Confidence) / float64(len(cmp))
	}
	for _, c := range cmp {
		if c.Verdict == "regression" {
			res.Regressions++
		}
	}
	res.LoadAfter = loadavg()
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// runSuite runs one round of suite s in bin and reads its figures; tmp is a directory for the
// output file of a suite that writes one.
func runSuite(ctx context.Context, bin string, s Suite, tmp string) (*SuiteResult, error) {
	var out, errb bytes.Buffer
	port := 0
	if s.Server != nil {
		var err error
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("regress: a free port for %s: %v", s.Name, err)
		}
		stop, err := startServer(ctx, bin, expand(s.Server, port, tmp), port)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	args, file := expand(s.Args, port, tmp), ""
	switch {
	case s.OutputFlag != "":
		file = filepath.Join(tmp, s.Name+".json")
		args = append(args, s.OutputFlag, file)
	case s.ResultFile != "":
		file = filepath.Join(tmp, s.ResultFile)
	}
	if file != "" {
		os.Remove(file)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("regress: %s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(lastLines(errb.String(), 5)))
	}
	data := out.Bytes()
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("regress: %s %s wrote no result file: %v", bin, strings.Join(args, " "), err)
		}
	}
	var sr *SuiteResult
	if s.Parse != nil {
		var err error
		if sr, err = s.Parse(data); err != nil {
			return nil, fmt.Errorf("regress: %s %s: %v", bin, strings.Join(args, " "), err)
		}
	} else {
		sr = new(SuiteResult)
		if err := json.Unmarshal(data, sr); err != nil {
			return nil, fmt.Errorf("regress: %s %s printed no suite JSON (%v): %.200q", bin, strings.Join(args, " "), err, out.String())
		}
	}
	if len(sr.Benchmarks) == 0 {
		return nil, fmt.Errorf("regress: %s %s ran no benchmark", bin, strings.Join(args, " "))
	}
	return sr, nil
}

// compare pairs the rounds benchmark by benchmark. Both binaries must run the same benchmarks.
func compare(base, head []*SuiteResult, cfg Config) ([]Comparison, error) {
	names := func(s *SuiteResult) string {
		var n []string
		for _, b := range s.Benchmarks {
			n = append(n, b.Name)
		}
		return strings.Join(n, ", ")
	}
	for r := range base {
		if a, b := names(base[r]), names(head[r]); a != b || a != names(base[0]) {
			return nil, fmt.Errorf("regress: round %d: the binaries ran different benchmarks:\nbase: %s\nhead: %s", r+1, a, b)
		}
	}
	nb := len(base[0].Benchmarks)
	alpha := (1 - cfg.Confidence) / float64(nb)
	out := make([]Comparison, nb)
	for i, b0 := range base[0].Benchmarks {
		c := Comparison{Name: b0.Name, Kernel: b0.Kernel, Unit: b0.unit(), HigherIsBetter: b0.HigherIsBetter, Bytes: b0.BytesPerOp}
		ratios := make([]float64, len(base))
		for r := range base {
			hb := head[r].Benchmarks[i]
			if hb.unit() != c.Unit || hb.HigherIsBetter != c.HigherIsBetter {
				return nil, fmt.Errorf("regress: round %d: %s: base measures %s (higher is better: %v), head %s (%v)", r+1, b0.Name, c.Unit, c.HigherIsBetter, hb.unit(), hb.HigherIsBetter)
			}
			bn, hn := base[r].Benchmarks[i].Figure(), hb.Figure()
			if !(bn > 0 && hn > 0) {
				return nil, fmt.Errorf("regress: round %d: %s: %s %g (base) and %g (head) must be positive", r+1, b0.Name, c.Unit, bn, hn)
			}
			c.BaseRaw, c.HeadRaw = append(c.BaseRaw, bn), append(c.HeadRaw, hn)
			ratios[r] = slowdown(bn, hn, c.HigherIsBetter)
		}
		c.BaseMedian, c.HeadMedian = median(c.BaseRaw), median(c.HeadRaw)
		c.Ratio, c.Lo, c.Hi = ratioCI(ratios, alpha)
		logs := make([]float64, len(ratios))
		for i, r := range ratios {
			logs[i] = math.Log(r)
		}
		c.P = signedRankP(logs)
		c.Verdict = verdict(c.Ratio, c.Lo, c.Hi, cfg.Threshold)
		out[i] = c
	}
	return out, nil
}

// verdict applies the rule: significant (the interval excludes 1) and at least the threshold.
func verdict(ratio, lo, hi, threshold float64) string {
	switch {
	case lo > 1 && ratio > 1+threshold:
		return "regression"
	case hi < 1 && ratio < 1-threshold:
		return "faster"
	}
	return "~"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
