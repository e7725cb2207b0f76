// The distributed side of `llmcloud train`: with --nproc N (and no rank in the environment) the
// command starts N ranks of itself through package launch, torchrun-like; with a rank in the
// environment (set by that launcher, torchrun, srun or a Kubernetes Indexed Job) it joins the
// job through comm.Init and trains as that rank. See docs/distributed-training.md.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/launch"
	"github.com/llmcloud/llmcloud/train"
	"github.com/prometheus/client_golang/prometheus"
)

// launchGraceSeconds is added to the collective timeout for the ranks to report a failed one
// and exit before the launcher kills them.
const launchGraceSeconds = 5

// launchTrain runs `llmcloud train args` as n local ranks and waits for them.
func launchTrain(args []string, n int, cfg train.Config, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	grace := time.Duration((collectiveTimeout(cfg).Seconds() + launchGraceSeconds) * float64(time.Second))
	err = launch.Run(launch.Options{Exe: exe, Args: append([]string{"train"}, args...), NProc: n,
		Stdout: stdout, Stderr: stderr, Grace: grace, Signals: sigs,
		Log: slog.New(slog.NewTextHandler(stderr, nil)).With("launcher", "train")})
	if err != nil {
		return fmt.Errorf("%d ranks: %w", n, err)
	}
	return nil
}

// collectiveTimeout is --timeout (0: 60 s).
func collectiveTimeout(cfg train.Config) time.Duration {
	if cfg.TimeoutSec > 0 {
		return time.Duration(cfg.TimeoutSec * float64(time.Second))
	}
	return 60 * time.Second
}

// trainRank joins the job the environment describes and trains as its rank. Without --threads
// (flag or config file) the rank takes its share of the machine: NumCPU / LOCAL_WORLD_SIZE.
func trainRank(cfg train.Config, ckDir string, threadsGiven bool, stdout, stderr io.Writer) error {
	env, err := comm.EnvFromOS()
	if err != nil {
		return usageError{err.Error()}
	}
	if !threadsGiven {
		if local, err := strconv.Atoi(os.Getenv("LOCAL_WORLD_SIZE")); err == nil && local > 0 {
			cfg.Threads = max(1, runtime.NumCPU()/local)
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	opts := comm.DefaultOptions()
	opts.Timeout = collectiveTimeout(cfg)
	world, err := comm.Init(env, opts, log, prometheus.NewRegistry())
	if err != nil {
		return fmt.Errorf("rank %d of %d: %w", env.Rank, env.WorldSize, err)
	}
	defer world.Close()
	if err := trainOne(cfg, ckDir, world, stdout, stderr); err != nil {
		return fmt.Errorf("rank %d of %d: %w", env.Rank, env.WorldSize, err)
	}
	return nil
}
