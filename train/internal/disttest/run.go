// This file implements the "run" scenario: a rank runs the whole train.Run loop (progress
// lines on its output, log.jsonl, loss.png and checkpoints in cfg.Out from rank 0 only),
// printing every step's loss as "steps" does.
package disttest

import (
	"context"
	"os"
	"time"

	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/dist"
)

func init() { scenarios["run"] = RunLoop }

// RunLoop is the "run" scenario.
func RunLoop(cfg train.Config) error {
	world, err := dist.InitWorld(time.Duration(cfg.TimeoutSec*float64(time.Second)), nil, nil)
	if err != nil {
		return err
	}
	defer world.Close()
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		return err
	}
	defer closeData()
	tr, err := train.NewParallel(cfg, d, nil, world)
	if err != nil {
		return err
	}
	defer tr.Close()
	_, err = tr.Run(context.Background(), train.RunOptions{Progress: os.Stdout, PeakFLOPS: 1e9,
		OnStep: func(s train.StepStats) { PrintLoss(s.Step, s.Loss) }})
	return err
}
