// This file implements the rank processes: Run re-executes the test binary N times with
// torchrun's environment (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK) and the
// run's config as JSON; Main, called from the test package's TestMain, runs a named scenario in
// such a child instead of the tests. The default scenario "steps" joins the world, builds
// train.NewParallel and prints every step's loss; tests register others with Register.
package disttest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/dist"
)

const (
	envScenario = "LLMCLOUD_DISTTEST_SCENARIO"
	envConfig   = "LLMCLOUD_DISTTEST_CONFIG"
	lossPrefix  = "disttest loss "
	// EnvResume names a checkpoint directory the "steps" scenario restores before stepping.
	EnvResume = "LLMCLOUD_DISTTEST_RESUME"
	// EnvEval, when set, makes the "steps" scenario print the validation loss after its steps.
	EnvEval    = "LLMCLOUD_DISTTEST_EVAL"
	evalPrefix = "disttest eval "
)

// Scenario is what a rank process runs with the test's config. Its output lines go to the
// test (Result.Output); a non-nil error makes the process print it and exit 1.
type Scenario func(cfg train.Config) error

var scenarios = map[string]Scenario{"steps": Steps}

// Register adds a scenario (call it before Main, e.g. in TestMain).
func Register(name string, s Scenario) { scenarios[name] = s }

// Main runs the tests, or, in a rank process started by Run, the scenario it was started for.
func Main(m *testing.M) {
	name := os.Getenv(envScenario)
	if name == "" {
		os.Exit(m.Run())
	}
	os.Exit(child(name))
}

func child(name string) int {
	s, ok := scenarios[name]
	if !ok {
		fmt.Printf("ERROR: unknown scenario %q\n", name)
		return 2
	}
	var cfg train.Config
	if err := json.Unmarshal([]byte(os.Getenv(envConfig)), &cfg); err != nil {
		fmt.Println("ERROR: config:", err)
		return 2
	}
	if err := s(cfg); err != nil {
		fmt.Println("ERROR:", err)
		return 1
	}
	return 0
}

// Steps is the default scenario: join the world, build this rank's trainer, restore the
// checkpoint named by $LLMCLOUD_DISTTEST_RESUME if set, take steps up to cfg.Steps, printing
// "disttest loss STEP LOSS" after each, with $LLMCLOUD_DISTTEST_EVAL set print the validation
// loss ("disttest eval LOSS"), and save a checkpoint at the end when cfg.Out is set.
func Steps(cfg train.Config) error {
	tr, done, err := Join(cfg)
	if err != nil {
		return err
	}
	defer done()
	if dir := os.Getenv(EnvResume); dir != "" {
		ck, err := train.LoadCheckpoint(dir)
		if err != nil {
			return err
		}
		if err := tr.Restore(ck); err != nil {
			return err
		}
	}
	for tr.StepNum() < cfg.Steps {
		s, err := tr.Step()
		if err != nil {
			return err
		}
		PrintLoss(s.Step, s.Loss)
	}
	if os.Getenv(EnvEval) != "" {
		loss, _, ok, err := tr.Eval()
		if err != nil {
			return err
		}
		if ok {
			fmt.Printf("%s%s\n", evalPrefix, strconv.FormatFloat(loss, 'g', -1, 64))
		}
	}
	if cfg.Out != "" {
		if _, err := tr.Save(); err != nil {
			return err
		}
	}
	m := tr.Memory()
	fp, fg, fo := m.Formula()
	fmt.Printf("disttest memory %d %d %d %d %d %d\n", m.ParamsBytes, m.GradsBytes, m.OptimBytes, fp, fg, fo)
	fmt.Print(m)
	buckets, launched, early := tr.Overlap()
	fmt.Printf("disttest overlap %d %d %d\n", buckets, launched, early)
	fmt.Printf("disttest gathers %d\n", tr.ZeROGathers())
	return nil
}

// Join joins the world the environment describes (with cfg's timeout), opens cfg's data and
// builds this rank's trainer; done closes all three.
func Join(cfg train.Config) (tr *train.Trainer, done func(), err error) {
	world, err := dist.InitWorld(time.Duration(cfg.TimeoutSec*float64(time.Second)), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		world.Close()
		return nil, nil, err
	}
	if tr, err = train.NewParallel(cfg, d, nil, world); err != nil {
		closeData()
		world.Close()
		return nil, nil, err
	}
	return tr, func() { tr.Close(); closeData(); world.Close() }, nil
}

// PrintLoss prints a step's loss in the form Run collects (exactly: float32 round trip).
func PrintLoss(step int, loss float32) {
	fmt.Printf("%s%d %s\n", lossPrefix, step, strconv.FormatFloat(float64(loss), 'g', -1, 32))
}

// Options are Run's extras.
type Options struct {
	Scenario string        // "" = "steps"
	Env      []string      // more environment variables for every rank
	Limit    time.Duration // how long the ranks may take (0: 2 minutes)
	// AllowFail lets ranks exit non-zero (fault tests); Run then returns their errors in
	// Result.Errs instead of failing the test.
	AllowFail bool
}

// Result is what the ranks of one Run did.
type Result struct {
	Losses []float64 // rank 0's losses by step (lines printed by PrintLoss)
	Output []string  // each rank's whole output
	Errs   []error   // each rank's exit error (nil: exit 0)
}

// Run starts n rank processes of scenario o.Scenario with cfg and waits for them. Unless
// o.AllowFail, any rank that fails fails the test with every rank's output; it also checks
// that every rank printed the same losses as rank 0.
func Run(t testing.TB, n int, cfg train.Config, o *Options) *Result {
	t.Helper()
	if o == nil {
		o = &Options{}
	}
	sc, limit := o.Scenario, o.Limit
	if sc == "" {
		sc = "steps"
	}
	if limit == 0 {
		limit = 2 * time.Minute
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cmds := make([]*exec.Cmd, n)
	outs := make([]*proc.Buffer, n)
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envScenario+"="+sc, envConfig+"="+string(js),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), "WORLD_SIZE="+strconv.Itoa(n),
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r))
		cmd.Env = append(cmd.Env, o.Env...)
		outs[r] = &proc.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	res := &Result{Output: make([]string, n), Errs: make([]error, n)}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for r, c := range cmds {
		wg.Add(1)
		go func() { defer wg.Done(); res.Errs[r] = c.Wait() }()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		for _, c := range cmds {
			c.Process.Kill()
		}
		<-done
		t.Fatalf("ranks still running after %v:\n%s", limit, allOutput(outs))
	}
	for r := range n {
		res.Output[r] = outs[r].String()
	}
	if !o.AllowFail {
		for r, err := range res.Errs {
			if err != nil {
				t.Fatalf("rank %d: %v\n%s", r, err, allOutput(outs))
			}
		}
	}
	res.Losses = ParseLosses(res.Output[0])
	for r := 1; r < n && !o.AllowFail; r++ {
		if l := ParseLosses(res.Output[r]); len(l) > 0 && !slices.Equal(l, res.Losses) {
			t.Fatalf("rank %d logged losses %v, rank 0 %v", r, l, res.Losses)
		}
	}
	return res
}

// ParseEval reads the validation loss the "steps" scenario printed in out.
func ParseEval(out string) (float64, bool) {
	_, rest, ok := strings.Cut(out, evalPrefix)
	if f := strings.Fields(rest); ok && len(f) > 0 {
		v, err := strconv.ParseFloat(f[0], 64)
		return v, err == nil
	}
	return 0, false
}

// ParseLosses reads the losses PrintLoss printed in out, by step.
func ParseLosses(out string) []float64 {
	var ls []float64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), lossPrefix)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err == nil {
			ls = append(ls, v)
		}
	}
	return ls
}

func allOutput(outs []*proc.Buffer) string {
	var b strings.Builder
	for r, o := range outs {
		fmt.Fprintf(&b, "--- rank %d ---\n%s", r, o.String())
	}
	return b.String()
}

func freePort(t testing.TB) int {
	port, err := proc.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}
