// The whole run loop distributed: only rank 0 reports and writes files, and the progress
// line and log.jsonl carry MFU and HFU over the whole world.
package dist_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/train"
	"github.com/llmcloud/llmcloud/train/internal/disttest"
)

func TestRunReportsFromRankZero(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	cfg.Steps, cfg.LogEvery, cfg.DP, cfg.ZeroStage = 6, 2, 2, 1
	cfg.Out = filepath.Join(t.TempDir(), "run")
	res := disttest.Run(t, 2, cfg, &disttest.Options{Scenario: "run"})
	if !strings.Contains(res.Output[0], "| MFU ") || !strings.Contains(res.Output[0], "| HFU ") ||
		!strings.Contains(res.Output[0], "memory per rank (ZeRO stage 1, N_d = 2") {
		t.Errorf("rank 0's progress lacks MFU, HFU or the memory table:\n%s", res.Output[0])
	}
	if strings.Contains(res.Output[1], "step ") {
		t.Errorf("rank 1 printed progress:\n%s", res.Output[1])
	}
	f, err := os.Open(filepath.Join(cfg.Out, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d, closeData, err := train.OpenData(cfg.Data, cfg.Batch, cfg.Seq)
	if err != nil {
		t.Fatal(err)
	}
	defer closeData()
	one := cfg
	one.DP, one.ZeroStage = 1, 0
	ref, err := train.New(one, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	flops, _ := ref.Net.FLOPsPerToken(cfg.Seq)
	steps := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r train.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Loss == nil {
			continue
		}
		steps++
		// 1 GFLOP/s a rank: MFU = the world's tokens/s x FLOPs/token / (2 x 1e9); HFU = MFU
		// (no recomputation).
		want := r.TokensPerS * flops / 2e9
		if !(r.MFU > 0) || math.Abs(r.MFU-want) > 1e-9*want || r.HFU != r.MFU {
			t.Errorf("step %d: mfu %g (want %g), hfu %g", r.Step, r.MFU, want, r.HFU)
		}
	}
	if steps != cfg.Steps {
		t.Errorf("log.jsonl has %d steps, want %d", steps, cfg.Steps)
	}
	if _, err := os.Stat(filepath.Join(cfg.Out, "loss.png")); err != nil {
		t.Error(err)
	}
}
