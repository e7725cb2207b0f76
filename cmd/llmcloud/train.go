// The train command: llmcloud train [--config FILE] [flags] trains a Llama-family model on
// prepared token shards (package train; flags and config keys in docs/training.md), as one
// process, as --nproc local ranks (train_launch.go), or as one rank under an external launcher;
// llmcloud train export --ckpt DIR --gguf FILE|--hf DIR writes a checkpoint's weights out.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/train"
)

func init() {
	register("train", "train a model on prepared token shards (train export: checkpoint to GGUF/HF; train draft-head: a learned draft head)", runTrain)
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "export" {
		return runTrainExport(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "draft-head" {
		return runTrainDraftHead(args[1:], stdout, stderr)
	}
	fs := newFlags("train", stderr)
	flagCfg := train.DefaultConfig()
	train.BindFlags(fs, &flagCfg)
	cfgFile := fs.String("config", "", "config file (YAML or JSON, keys = flag names); flags given override it")
	resume := fs.String("resume", "", "resume from a checkpoint directory, a run directory, \"latest\" (the --out run's newest) or \"auto\" (latest if there is one, else start)")
	uiAddr := fs.String("ui", "", "serve the web console of this run on ADDR (host:port, e.g. 127.0.0.1:8090) while it trains, and after it finished until Ctrl-C (needs --out)")
	nproc := fs.Int("nproc", 0, "start this many local ranks of a distributed run (torchrun-like); ignored when a launcher has set RANK, SLURM_PROCID or JOB_COMPLETION_INDEX")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud train [--config FILE] [--resume DIR|latest|auto] [--nproc N] --data DIR --out DIR [flags]")
		fmt.Fprintln(stderr, "       llmcloud train export --ckpt DIR (--gguf FILE | --hf DIR) [--type T]")
		fmt.Fprintln(stderr, "       llmcloud train draft-head --model TARGET.gguf --data DIR --out FILE [--heads K] [--steps N]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *nproc < 0 {
		return usagef("--nproc %d must not be negative", *nproc)
	}
	cfg, ckDir, err := trainConfig(fs, *cfgFile, *resume, flagCfg.Out)
	if err != nil {
		return err
	}
	warnResumeSteps(ckDir, cfg.Steps, flagGiven(fs, "steps"), stderr)
	threadsGiven := flagGiven(fs, "threads")
	if *cfgFile != "" && !threadsGiven {
		var fromFile train.Config
		if err := train.LoadFile(*cfgFile, &fromFile); err == nil && fromFile.Threads != 0 {
			threadsGiven = true
		}
	}
	if comm.HasEnv() { // a rank: the process that started it serves --ui (train_ui.go)
		if *nproc > 1 && os.Getenv("LOCAL_WORLD_SIZE") == "" { // not our own children
			fmt.Fprintf(stderr, "llmcloud train: --nproc %d ignored: a launcher has set this process's rank\n", *nproc)
		}
		return trainRank(cfg, ckDir, threadsGiven, stdout, stderr)
	}
	var console *trainUI
	if *uiAddr != "" {
		if console, err = startTrainUI(*uiAddr, cfg, stderr); err != nil {
			return err
		}
	}
	if *nproc > 1 {
		err = launchTrain(args, *nproc, cfg, stdout, stderr)
	} else {
		err = trainOne(cfg, ckDir, nil, stdout, stderr)
	}
	if console != nil {
		console.finish(err, stderr)
	}
	return err
}

// trainConfig is the run's configuration: the resumed checkpoint's (ResumeConfig), then the
// config file, then the flags given. ckDir is the checkpoint to resume from ("" for none).
func trainConfig(fs *flag.FlagSet, cfgFile, resume, out string) (cfg train.Config, ckDir string, err error) {
	cfg = train.DefaultConfig()
	if resume != "" {
		if out == "" && cfgFile != "" { // --resume latest|auto with the run directory in the config file
			var c train.Config
			if err := train.LoadFile(cfgFile, &c); err == nil {
				out = c.Out
			}
		}
		if ckDir, err = train.ResolveCheckpoint(resume, out); err != nil {
			return cfg, "", err
		}
		if ckDir != "" {
			st, err := train.ReadState(ckDir)
			if err != nil {
				return cfg, "", err
			}
			cfg = train.ResumeConfig(st)
		}
	}
	if cfgFile != "" {
		if err := train.LoadFile(cfgFile, &cfg); err != nil {
			return cfg, "", err
		}
	}
	if err := train.OverlayFlags(fs, &cfg); err != nil {
		return cfg, "", err
	}
	if err := cfg.Validate(); err != nil {
		return cfg, "", usageError{err.Error()}
	}
	return cfg, ckDir, nil
}

func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// trainOne trains cfg as one process, or as one rank of world.
func trainOne(cfg train.Config, ckDir string, world *comm.Group, stdout, stderr io.Writer) error {
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		return err
	}
	defer closeData()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	t, err := train.NewParallel(cfg, d, log, world)
	if err != nil {
		return err
	}
	defer t.Close()
	lead := t.Rank() == 0 // only rank 0 reports
	if ckDir != "" {
		ck, err := train.LoadCheckpoint(ckDir)
		if err != nil {
			return err
		}
		if err := t.Restore(ck); err != nil {
			return err
		}
		if lead {
			fmt.Fprintf(stderr, "resumed from %s at step %d\n", ck.Dir, t.StepNum())
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := t.Run(ctx, train.RunOptions{Progress: stderr, Bar: isTerminal(stderr)})
	if err != nil && sum != nil && errors.Is(err, context.Canceled) {
		// A signal here or on another rank: every rank stopped after the same step.
		err = fmt.Errorf("interrupted after step %d (a checkpoint was saved; continue with --resume latest)", sum.Steps)
	}
	if !lead {
		return err
	}
	if sum != nil && sum.Checkpoint != "" {
		fmt.Fprintf(stdout, "checkpoint %s\n", sum.Checkpoint)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "trained %d steps, %d tokens in %s: train loss %.4f", sum.Steps, sum.Tokens,
		sum.Elapsed.Round(time.Second), sum.TrainLoss)
	if sum.ValPPL > 0 {
		fmt.Fprintf(stdout, ", val loss %.4f, val ppl %.2f", sum.ValLoss, sum.ValPPL)
	}
	fmt.Fprintf(stdout, "; %.0f tokens/s, MFU %.1f%% of %.1f GFLOP/s\n", sum.TokensPerS, 100*sum.MFU, sum.PeakFLOPS/1e9)
	if sum.LossCurvePNG != "" {
		fmt.Fprintf(stdout, "loss curve %s\n", sum.LossCurvePNG)
	}
	for _, out := range []string{cfg.ExportGGUF, cfg.ExportHF} {
		if out != "" {
			fmt.Fprintf(stdout, "exported %s\n", out)
		}
	}
	return nil
}

func runTrainExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("train export", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint directory, or a run directory (its latest checkpoint)")
	gguf := fs.String("gguf", "", "write a GGUF file")
	hf := fs.String("hf", "", "write a Hugging Face directory")
	typ := fs.String("type", "f32", "weight type: f32, f16, bf16, q8_0, q4_0, q4_k, q4_k_m, q6_k (HF: float types only)")
	tok := fs.String("tokenizer", "", "tokenizer.json to use instead of the checkpoint's")
	name := fs.String("name", train.ExportName, "model name to record (general.name)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if *ckpt == "" || (*gguf == "" && *hf == "") {
		return usagef("give --ckpt DIR and --gguf FILE and/or --hf DIR")
	}
	dir, err := train.ResolveCheckpoint(*ckpt, "")
	if err != nil {
		return err
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		return err
	}
	for _, o := range []struct {
		path string
		f    train.Format
	}{{*gguf, train.GGUF}, {*hf, train.HF}} {
		if o.path == "" {
			continue
		}
		if err := train.ExportCheckpoint(ck, o.path, o.f, *typ, *tok, *name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "wrote %s from %s (step %d)\n", o.path, dir, ck.State.Step)
	}
	return nil
}
