// Data-parallel runs against one process: real rank processes (the test binary re-executed by
// train/internal/disttest) train the same tiny model on the same data and seed; every step's
// loss must match the one-process run within 1e-5 relative.
package dist_test

import (
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/train/internal/disttest"
)

func TestMain(m *testing.M) { disttest.Main(m) }

func TestDDPEqualsOneProcess(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<14))
	want := disttest.Reference(t, cfg)
	for _, n := range []int{2, 4} {
		cfg.DP = n
		got := disttest.Run(t, n, cfg, nil)
		disttest.CompareLosses(t, want, got.Losses, 1e-5)
	}
}

// A grid the world cannot hold is an error on every rank, not a hang.
func TestBadGridIsAnError(t *testing.T) {
	cfg := disttest.TinyConfig(disttest.Data(t, 64, 1<<12))
	cfg.DP, cfg.Batch = 3, 6 // 2 ranks
	res := disttest.Run(t, 2, cfg, &disttest.Options{AllowFail: true})
	for r, err := range res.Errs {
		if err == nil || !strings.Contains(res.Output[r], "--dp 3 x --tp 1 x --pp 1 = 3 ranks, but the world has 2") {
			t.Errorf("rank %d: %v\n%s", r, err, res.Output[r])
		}
	}
}
