// This file implements the "run" scenario: a rank runs the whole train.Run loop (progress
// lines on its output, log.jsonl, loss.png and checkpoints in cfg.Out from rank 0 only),
// printing every step's loss as "steps" does.
package disttest

import (
	"context"
	"os"

	"github.com/llmcloud/llmcloud/train"
)

func init() { scenarios["run"] = RunLoop }

// RunLoop is the "run" scenario.
func RunLoop(cfg train.Config) error {
	tr, done, err := Join(cfg)
	if err != nil {
		return err
	}
	defer done()
	_, err = tr.Run(context.Background(), train.RunOptions{Progress: os.Stdout, PeakFLOPS: 1e9,
		OnStep: func(s train.StepStats) { PrintLoss(s.Step, s.Loss) }})
	return err
}
