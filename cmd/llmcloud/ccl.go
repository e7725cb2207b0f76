// The ccl command: `llmcloud ccl bench` measures the collectives of package comm across local
// ranks (nccl-tests' table: size, count, time, algbw, busbw, #wrong). Without RANK etc. in the
// environment it launches --nproc ranks of itself; with them (torchrun, Slurm, a Kubernetes
// Indexed Job) it runs as one rank.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/comm/cclbench"
)

func init() {
	register("ccl", "collective communication: `ccl bench` measures allreduce, allgather, ...", runCCL)
}

func runCCL(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "bench" {
		return usageError{"usage: llmcloud ccl bench [flags] (see llmcloud ccl bench -h)"}
	}
	return runCCLBench(args[1:], stdout, stderr)
}

func runCCLBench(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ccl bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nproc := fs.Int("nproc", 2, "number of local ranks to launch (ignored when RANK/SLURM_PROCID/JOB_COMPLETION_INDEX is set)")
	op := fs.String("op", "allreduce", "collective: "+strings.Join(cclbench.Ops, "|"))
	minB := fs.String("min-bytes", "8", "smallest message size (bytes; K, M, G suffixes)")
	maxB := fs.String("max-bytes", "64M", "largest message size")
	step := fs.Int("step-factor", 2, "multiply the size by this between rows")
	iters := fs.Int("iters", 20, "timed iterations per size")
	warmup := fs.Int("warmup", 5, "untimed iterations per size")
	transport := fs.String("transport", "tcp", "tcp|shm")
	algo := fs.String("algo", "auto", "allreduce algorithm: auto|ring|tree|rhd")
	timeout := fs.Duration("timeout", 60*time.Second, "timeout of every collective")
	verbose := fs.Bool("v", false, "debug logs on stderr")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	cfg := cclbench.Config{Op: *op, StepFactor: *step, Iters: *iters, Warmup: *warmup}
	for _, b := range []struct {
		flag string
		dst  *int
	}{{*minB, &cfg.MinBytes}, {*maxB, &cfg.MaxBytes}} {
		v, err := parseBytes(b.flag) // bench_throughput.go: 8, 64K, 64M, 1GiB
		if err != nil {
			return usageError{err.Error()}
		}
		*b.dst = int(v)
	}
	var err error
	if cfg.Algo, err = comm.ParseAlgo(*algo); err != nil {
		return usageError{err.Error()}
	}
	tr, err := comm.ParseTransport(*transport)
	if err != nil {
		return usageError{err.Error()}
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	if !comm.HasEnv() {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		return cclbench.Launch(exe, append([]string{"ccl", "bench"}, args...), *nproc, stdout, stderr, *timeout+10*time.Second)
	}
	env, err := comm.EnvFromOS()
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	opts := comm.DefaultOptions()
	opts.Timeout, opts.Transport, opts.Algo = *timeout, tr, cfg.Algo
	g, err := comm.Init(env, opts, log, nil)
	if err != nil {
		return err
	}
	defer g.Close()
	_, err = cclbench.Run(g, cfg, stdout)
	if errors.Is(err, cclbench.ErrWrong) {
		return fmt.Errorf("%w (see the #wrong column)", err)
	}
	return err
}
