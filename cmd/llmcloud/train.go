// The train command: llmcloud train [--config FILE] [flags] trains a Llama-family model on
// prepared token shards (package train; flags and config keys in docs/training.md), and
// llmcloud train export --ckpt DIR --gguf FILE|--hf DIR writes a checkpoint's weights out.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/train"
)

func init() {
	register("train", "train a model on prepared token shards (train export: checkpoint to GGUF/HF)", runTrain)
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "export" {
		return runTrainExport(args[1:], stdout, stderr)
	}
	fs := newFlags("train", stderr)
	flagCfg := train.DefaultConfig()
	train.BindFlags(fs, &flagCfg)
	cfgFile := fs.String("config", "", "config file (YAML or JSON, keys = flag names); flags given override it")
	resume := fs.String("resume", "", "resume from a checkpoint directory, a run directory, or \"latest\" (the --out run's newest)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud train [--config FILE] [--resume DIR|latest] --data DIR --out DIR [flags]")
		fmt.Fprintln(stderr, "       llmcloud train export --ckpt DIR (--gguf FILE | --hf DIR) [--type T]")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	cfg := train.DefaultConfig()
	var ck *train.Checkpoint
	if *resume != "" {
		dir, err := train.ResolveCheckpoint(*resume, flagCfg.Out)
		if err != nil {
			return err
		}
		if ck, err = train.LoadCheckpoint(dir); err != nil {
			return err
		}
		cfg = ck.State.Config
	}
	if *cfgFile != "" {
		if err := train.LoadFile(*cfgFile, &cfg); err != nil {
			return err
		}
	}
	if err := train.OverlayFlags(fs, &cfg); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return usageError{err.Error()}
	}
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		return err
	}
	defer closeData()
	log := slog.New(slog.NewTextHandler(stderr, nil))
	t, err := train.New(cfg, d, log)
	if err != nil {
		return err
	}
	if ck != nil {
		if err := t.Restore(ck); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "resumed from %s at step %d\n", ck.Dir, t.StepNum())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sum, err := t.Run(ctx, train.RunOptions{Progress: stderr, Bar: isTerminal(stderr)})
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
