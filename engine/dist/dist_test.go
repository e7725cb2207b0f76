// Tests of the serving group in one process: the ranks are goroutines joined over real TCP
// (comm.Init), each with its own shard of a random model written to GGUF; rank 0's batches,
// broadcast by the Leader and run by Work on the others, give the single model's logits.
package dist

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
)

func writeModel(t *testing.T, arch, typ string) string {
	t.Helper()
	return writeModelWith(t, arch, typ, nil)
}

// writeModelWith is writeModel with the options changed by edit (nil: none).
func writeModelWith(t *testing.T, arch, typ string, edit func(*synth.Options)) string {
	t.Helper()
	o := synth.Options{Arch: arch, Dim: 64, Layers: 4, Heads: 8, KVHeads: 4, HeadDim: 8, FFN: 128, Vocab: 264, CtxLen: 64, Seed: 3, Std: 0.1}
	if edit != nil {
		edit(&o)
	}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), arch+".gguf")
	if err := convert.WriteGGUF(path, p, convert.Options{Type: typ}); err != nil {
		t.Fatal(err)
	}
	return path
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// loadShard opens path as rank r of the group.
func loadShard(path string, r *Ranks) (*model.Model, func(), error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, nil, err
	}
	m, err := model.LoadGGUFPart(f, r.Part())
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return m, func() { f.Close() }, nil
}

// batches are a prefill of two sequences, then decodes, over block tables of 4-token blocks.
func batches() [][]model.BatchSeq {
	a, b := []int32{0, 1, 2, 3}, []int32{5, 4, 7, 6}
	return [][]model.BatchSeq{
		{{Tokens: []int{1, 2, 3, 4, 5, 6}, BlockTable: a, NeedsLogits: true}, {Tokens: []int{9, 8, 7}, BlockTable: b, NeedsLogits: true}},
		{{Tokens: []int{11}, StartPos: 6, BlockTable: a, NeedsLogits: true}, {Tokens: []int{12, 13}, StartPos: 3, BlockTable: b, NeedsLogits: true, NumLogits: 2}},
		{{Tokens: []int{263}, StartPos: 7, BlockTable: a, NeedsLogits: true}},
	}
}

// moe makes the model a mixture of experts: 4 experts, 2 per token, each 64 wide (a shared
// expert 128 wide for qwen2moe), so TP=2 and TP=4 split them by width or by expert.
func moe(o *synth.Options) {
	o.Experts, o.ExpertsUsed = 4, 2
	if o.Arch == "qwen2moe" {
		o.ExpertFFN, o.SharedFFN = 64, 128
	} else {
		o.FFN = 64 // Mixtral's experts are FFN wide
	}
}

func TestTensorParallelLogits(t *testing.T) {
	for _, c := range []struct {
		arch, typ string
		layouts   []Layout
		edit      func(*synth.Options)
		ep        bool
		partition []int
	}{{"llama", "f32", []Layout{{2, 1}, {4, 1}, {1, 2}, {2, 2}, {1, 4}}, nil, false, nil}, {"qwen3", "f32", []Layout{{2, 1}, {4, 1}, {2, 2}}, nil, false, nil},
		{"qwen2", "f16", []Layout{{2, 1}}, nil, false, nil}, {"llama", "q8_0", []Layout{{2, 1}, {1, 2}}, nil, false, nil},
		// Uneven stages: 3 layers and 1, 1 and 3.
		{"llama", "f32", []Layout{{1, 2}, {2, 2}}, nil, false, []int{3, 1}}, {"qwen3", "f32", []Layout{{1, 2}}, nil, false, []int{1, 3}},
		// Mixtral (llama with experts) and Qwen2-MoE, the experts split by width, then by expert.
		{"llama", "f32", []Layout{{2, 1}, {4, 1}}, moe, false, nil}, {"qwen2moe", "f32", []Layout{{2, 1}, {2, 2}}, moe, false, nil},
		{"llama", "q8_0", []Layout{{2, 1}}, moe, false, nil},
		{"llama", "f32", []Layout{{2, 1}, {4, 1}, {2, 2}}, moe, true, nil}, {"qwen2moe", "f16", []Layout{{2, 1}, {4, 1}}, moe, true, nil},
		{"qwen2moe", "q8_0", []Layout{{2, 1}}, moe, true, nil}} {
		path := writeModelWith(t, c.arch, c.typ, c.edit)
		whole, err := model.OpenGGUF(path)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := whole.NewPagedKV(8, 4)
		if err != nil {
			t.Fatal(err)
		}
		var b model.Batch
		var want [][]float32
		for _, seqs := range batches() {
			l, err := whole.ForwardBatch(&b, kv, seqs)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, slices.Clone(l))
		}
		// A pipeline runs a batch's sequences as micro-batches of one sequence each, and the
		// kernels may take another path for fewer rows (a few tokens as one-token decodes,
		// kernels.PerTokenFaster), whose last bits differ and, through the Q8_0 activations'
		// rounding, move logits by ~1e-2: the pipelines are compared with the whole model run
		// one sequence at a time.
		wantSeq := perSequence(t, whole)
		for _, lay := range c.layouts {
			idle := time.Duration(0)
			if c.arch == "llama" && c.typ == "f32" && lay == (Layout{2, 2}) {
				idle = PingInterval * 3 / 2
			}
			got, bytes, err := runGroup(t, path, lay, groupOpts{c.ep, c.partition}, idle)
			if err != nil {
				t.Fatalf("%s %s %+v experts %v expert-parallel %v partition %v: %v", c.arch, c.typ, lay, c.edit != nil, c.ep, c.partition, err)
			}
			ref := want
			if lay.PP > 1 {
				ref = wantSeq
			}
			for i := range ref {
				if d := maxDiff(got[i], ref[i]); len(got[i]) != len(ref[i]) || d > 2e-4 {
					t.Errorf("%s %s %+v experts %v expert-parallel %v batch %d: %d logits, max difference %g from the whole model's", c.arch, c.typ, lay, c.edit != nil, c.ep, i, len(got[i]), d)
				}
			}
			var sum int64
			for r, n := range bytes {
				sum += n
				if f := float64(n*int64(lay.TP)) / float64(whole.WeightBytes()); lay.PP == 1 && (f < 0.95 || f > 1.05) {
					t.Errorf("%s TP=%d rank %d binds %d of %d weight bytes (%.3f of its share)", c.arch, lay.TP, r, n, whole.WeightBytes(), f)
				}
			}
			if f := float64(sum) / float64(whole.WeightBytes()); f < 0.99 || f > 1.05 {
				t.Errorf("%s %+v: the ranks bind %d weight bytes together, the model %d", c.arch, lay, sum, whole.WeightBytes())
			}
		}
		whole.Close()
	}
}

// runGroup runs batches() on size ranks of path (idle between the first two) and returns rank
// 0's logits and every rank's weight bytes.
// groupOpts are a group's choices beyond its layout.
type groupOpts struct {
	ep        bool  // Ranks.ExpertParallel
	partition []int // Ranks.Partition
}

func runGroup(t *testing.T, path string, lay Layout, o groupOpts, idle time.Duration) ([][]float32, []int64, error) {
	size := lay.TP * lay.PP
	port := freePort(t)
	log := slog.New(slog.DiscardHandler)
	errs := make([]error, size)
	bytes := make([]int64, size)
	var out [][]float32
	var wg sync.WaitGroup
	for r := range size {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = func() error {
				rk, err := Join(comm.Env{Rank: r, WorldSize: size, MasterAddr: "127.0.0.1", MasterPort: port}, lay, 10*time.Second, log)
				if err != nil {
					return err
				}
				defer rk.Close()
				rk.ExpertParallel, rk.Partition = o.ep, o.partition
				m, done, err := loadShard(path, rk)
				if err != nil {
					return err
				}
				defer done()
				bytes[r] = m.WeightBytes()
				if r > 0 {
					return Work(rk, m, log)
				}
				kv, err := m.NewPagedKV(8, 4)
				if err != nil {
					return err
				}
				l, err := NewLeader(rk, m, Setup{NumBlocks: 8, BlockSize: 4, KVDType: m.KVCacheDType.String()}, log)
				if err != nil {
					return err
				}
				m.MicroBatches = 2 // with a pipeline, the batches of two sequences go as two micro-batches
				// Every rank's weights are its copies, measured resident, and none of the file.
				if ws := l.Weights(); len(ws) != size {
					t.Errorf("%+v: %d ranks reported their weights, want %d", lay, len(ws), size)
				}
				for _, w := range l.Weights() {
					if f := float64(w.Copies) / float64(w.Bound); w.Bound <= 0 || f < 0.95 || f > 1.05 || w.File < 0 || w.File > 16<<10 {
						t.Errorf("%+v rank %d: binds %d weight bytes, %d resident as copies, %d of the file", lay, w.Rank, w.Bound, w.Copies, w.File)
					}
				}
				var b model.Batch
				for _, seqs := range batches() {
					lg, err := m.ForwardBatch(&b, kv, seqs)
					if err != nil {
						return err
					}
					out = append(out, slices.Clone(lg))
					if idle > 0 && len(out) == 1 {
						time.Sleep(idle) // the leader pings the idle ranks
					}
				}
				return l.Close()
			}()
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	return out, bytes, nil
}

// perSequence runs batches() through whole one sequence at a time (as a pipeline's
// micro-batches run them), each batch's logits in the batch's order.
func perSequence(t *testing.T, whole *model.Model) [][]float32 {
	t.Helper()
	kv, err := whole.NewPagedKV(8, 4)
	if err != nil {
		t.Fatal(err)
	}
	var b model.Batch
	var out [][]float32
	for _, seqs := range batches() {
		var l []float32
		for _, s := range seqs {
			ls, err := whole.ForwardBatch(&b, kv, []model.BatchSeq{s})
			if err != nil {
				t.Fatal(err)
			}
			l = append(l, ls...)
		}
		out = append(out, l)
	}
	return out
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range min(len(a), len(b)) {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

// A Q8_0 model whose row-parallel matrices' per-rank columns are not whole blocks is refused
// naming the weight.
func TestTensorParallelQuantBlocks(t *testing.T) {
	path := writeModel(t, "llama", "q8_0")
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cerr error
	for i := range f.Tensors {
		cerr = errors.Join(cerr, model.CheckTPTensor(&f.Tensors[i], 4, graph.TPOptions{}))
		if err := model.CheckTPTensor(&f.Tensors[i], 2, graph.TPOptions{}); err != nil {
			t.Errorf("TP=2: %v", err)
		}
	}
	if cerr == nil || !strings.Contains(cerr.Error(), "columns per rank are not whole Q8_0 blocks") {
		t.Errorf("CheckTPTensor, TP=4 of 64-column Q8_0 attn_output: %v", cerr)
	}
	_, _, err = runGroup(t, path, Layout{4, 1}, groupOpts{}, 0)
	if err == nil || !strings.Contains(err.Error(), "columns per rank are not whole Q8_0 blocks") {
		t.Errorf("TP=4 of 64-column Q8_0 attn_output: %v", err)
	}
}

func TestPlanRoundTrip(t *testing.T) {
	for _, seqs := range batches() {
		got, err := decodePlan(encodePlan(nil, seqs), nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(seqs) {
			t.Errorf("%v became %v", seqs, got)
		}
	}
	b := encodePlan(nil, batches()[0])
	for _, cut := range []int{3, 10, len(b) - 1} {
		if _, err := decodePlan(b[:cut], nil); err == nil {
			t.Errorf("a message cut at %d bytes of %d decoded", cut, len(b))
		}
	}
}

func TestSetupRoundTrip(t *testing.T) {
	for _, s := range []Setup{
		{NumBlocks: 8, BlockSize: 16, KVDType: "f32", Shape: [7]int{1, 2, 3, 4, 5, 6, 7}},
		{NumBlocks: 9, BlockSize: 4, KVDType: "q8_0", Invariant: true, ExpertParallel: true, Partition: []int{3, 1}},
	} {
		got, err := decodeSetup(s.encode())
		if err != nil || fmt.Sprint(got) != fmt.Sprint(s) {
			t.Errorf("%+v became %+v (%v)", s, got, err)
		}
	}
	b := Setup{Partition: []int{3, 1}, KVDType: "f16"}.encode()
	for _, cut := range []int{3, 80, 88, 95} {
		if _, err := decodeSetup(b[:cut]); err == nil {
			t.Errorf("a setup cut at %d bytes of %d decoded", cut, len(b))
		}
	}
}
