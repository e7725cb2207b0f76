package exec_test

import (
	"bytes"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/graph/exec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/profile"
	"github.com/llmcloud/llmcloud/tensor"
)

// TestProfiledRun runs the ragged schedule with a recorder attached: the logits stay those of
// the unprofiled model, every node of every step is one op slice on the caller's track with
// its cost, the second worker's parts are on its own track, and the trace is well formed.
func TestProfiledRun(t *testing.T) {
	cfg := archConfigs()["llama"]
	m := randModel(t, cfg, tensor.Q8_0, 13)
	m.Pool = kernels.NewPool(2)
	p := compile(t, m, false, graph.ServingPipeline())
	rec := profile.New()
	p.SetRecorder(rec)
	s := newPair(t, m, p, randPrompts(cfg.Vocab, []int{2, 5, 23, 40}, 3), false, 5)
	raggedRun(t, s)
	steps := 9
	var ops, parts int
	costed := false
	for _, tr := range rec.Tracks() {
		for _, sl := range tr.Slices() {
			switch {
			case sl.Cat == "op" && tr.Name == exec.WorkerTrack(0):
				ops++
				costed = costed || (sl.Name == "matmul" && sl.FLOPs > 0 && sl.Bytes > 0)
			case sl.Cat == "worker" && (tr.Name == exec.WorkerTrack(0) || tr.Name == exec.WorkerTrack(1)):
				// Parallel parts, the caller's own (track 0) or the helper's (track 1); with work
				// items taken from a shared counter the caller may run them all when the other
				// vCPU is busy, so only their sum is asserted.
				parts++
			default:
				t.Errorf("slice %+v on track %s", sl, tr.Name)
			}
		}
	}
	if want := steps * len(p.Graph().Nodes); ops != want {
		t.Errorf("%d op slices, want %d (%d steps of %d nodes)", ops, want, steps, len(p.Graph().Nodes))
	}
	if parts == 0 || !costed {
		t.Errorf("%d worker parts; matmuls costed: %v", parts, costed)
	}
	var b bytes.Buffer
	if err := rec.WriteTrace(&b); err != nil {
		t.Fatal(err)
	}
	if _, err := profile.Validate(b.Bytes()); err != nil {
		t.Fatal(err)
	}
	// Detached: no more slices.
	p.SetRecorder(nil)
	rec.Reset()
	s.step(t, []int{1, 1, 1, 1})
	for _, tr := range rec.Tracks() {
		if n := len(tr.Slices()); n != 0 {
			t.Errorf("track %s: %d slices with the recorder detached", tr.Name, n)
		}
	}
}
