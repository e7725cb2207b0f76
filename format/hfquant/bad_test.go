package hfquant

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

// TestRepackBadShapes mutates the shapes, dtypes and sizes of generated AWQ and GPTQ tensors
// at random: Repack must return an error naming a tensor (never panic) or, when the mutation
// left a consistent checkpoint, succeed.
func TestRepackBadShapes(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for iter := 0; iter < 600; iter++ {
		c := Config{Method: "awq", Bits: 4, GroupSize: 64, ZeroPoint: true, Version: "gemm"}
		sc := newSpecCase(r, 16, 128, 4, 64, false, 0)
		ts := sc.awqTensors("l")
		if iter%2 == 1 {
			c = Config{Method: "gptq", Bits: 4, GroupSize: 64, CheckpointFormat: "gptq"}
			ts = sc.gptqTensors("l", true)
		}
		names := []string{"l.qweight", "l.qzeros", "l.scales", "l.g_idx"}
		victim := ts[names[r.Intn(len(names))]]
		if victim == nil {
			continue
		}
		switch r.Intn(6) {
		case 0:
			victim.Shape = []int{r.Intn(300), r.Intn(300)}
		case 1:
			victim.Shape = []int{victim.Shape[0]}
		case 2:
			victim.Data = victim.Data[:len(victim.Data)/2]
		case 3:
			victim.Type = tensor.F16
		case 4:
			c.Bits = 8
		case 5:
			c.GroupSize = []int{32, 128, -1}[r.Intn(3)]
		}
		_, _, err := Repack(&c, ts, func(string) ([]int, bool) { return []int{16, 128}, true })
		if err != nil && !strings.Contains(err.Error(), "l.") {
			t.Fatalf("error names no tensor: %v", err)
		}
	}
}
