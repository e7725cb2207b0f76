package lora

import (
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/model"
)

// forward runs seqs (each from position 0 with a fresh table) as one batch and returns each
// sequence's last-row logits.
func forward(t *testing.T, m *model.Model, b *model.Batch, prompts [][]int, ids []uint32) [][]float32 {
	t.Helper()
	kv, err := m.NewPagedKV(4*len(prompts), 16)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []model.BatchSeq
	for i, p := range prompts {
		seqs = append(seqs, model.BatchSeq{Tokens: p, BlockTable: []int32{int32(4 * i), int32(4*i + 1), int32(4*i + 2), int32(4*i + 3)},
			NeedsLogits: true, Adapter: ids[i]})
	}
	lg, err := m.ForwardBatch(b, kv, seqs)
	if err != nil {
		t.Fatal(err)
	}
	v := m.Config.Vocab
	out := make([][]float32, len(prompts))
	for i := range out {
		out[i] = slices.Clone(lg[i*v : (i+1)*v])
	}
	return out
}

func relErr(a, ref []float32) float64 {
	var d, s float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-ref[i])))
		s = max(s, math.Abs(float64(ref[i])))
	}
	return d / s
}

var prompts = [][]int{{1, 5, 9, 13, 2, 7, 30}, {4, 4, 8, 60, 11}, {3, 17, 22, 9, 41, 2, 2, 6, 50, 12}}

// TestMergedEqualsRunTime: a merged F32 model's logits equal the base with the adapter applied at
// run time (1e-5 relative), and the base rows of the batch are the base model's.
func TestMergedEqualsRunTime(t *testing.T) {
	cfg := testConfig()
	m := testModel(t, cfg, 7)
	reg := &Registry{}
	var ids []uint32
	var merged []*model.Model
	for s := uint64(0); s < 2; s++ {
		a := randomAdapter(t, &cfg, 8+8*int(s), 11+s)
		id, err := reg.Add(string(rune('a'+s)), "", a)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		ws, err := Merge(m.Weights, a, "test")
		if err != nil {
			t.Fatal(err)
		}
		mm, err := model.New(cfg, ws)
		if err != nil {
			t.Fatal(err)
		}
		merged = append(merged, mm)
	}
	b := &model.Batch{LoRA: reg}
	got := forward(t, m, b, prompts, []uint32{ids[0], ids[1], 0})
	want0 := forward(t, merged[0], &model.Batch{}, prompts[:1], []uint32{0})[0]
	want1 := forward(t, merged[1], &model.Batch{}, prompts[1:2], []uint32{0})[0]
	base := forward(t, m, &model.Batch{}, prompts[2:], []uint32{0})[0]
	if e := relErr(got[0], want0); e > 1e-5 {
		t.Errorf("adapter a: run time vs merged: relative error %g", e)
	}
	if e := relErr(got[1], want1); e > 1e-5 {
		t.Errorf("adapter b: run time vs merged: relative error %g", e)
	}
	if e := relErr(got[2], base); e > 1e-6 {
		t.Errorf("base row: relative error %g", e)
	}
	if e := relErr(base, want0); e < 1e-3 {
		t.Errorf("the adapter changes the logits by only %g", e)
	}
}

// TestBatchInvariant: in invariant mode a sequence's logits are bit-identical whatever the
// other sequences of the batch and their adapters.
func TestBatchInvariant(t *testing.T) {
	cfg := testConfig()
	m := testModel(t, cfg, 8)
	reg := &Registry{MaxLoRAs: 2, MaxRank: 16}
	a1, _ := reg.Add("x", "", randomAdapter(t, &cfg, 8, 21))
	a2, _ := reg.Add("y", "", randomAdapter(t, &cfg, 16, 22))
	if _, err := reg.Add("z", "", randomAdapter(t, &cfg, 8, 23)); err == nil {
		t.Fatal("a third adapter past --max-loras 2 was accepted")
	}
	reg.Remove("y")
	if _, err := reg.Add("big", "", randomAdapter(t, &cfg, 32, 24)); err == nil {
		t.Fatal("rank 32 above --max-lora-rank 16 was accepted")
	}
	a2, _ = reg.Add("y", "", randomAdapter(t, &cfg, 16, 22))
	ids := []uint32{a1, a2, 0}
	together := forward(t, m, &model.Batch{Invariant: true, LoRA: reg}, prompts, ids)
	for i := range prompts {
		alone := forward(t, m, &model.Batch{Invariant: true, LoRA: reg}, prompts[i:i+1], ids[i:i+1])[0]
		if !slices.Equal(alone, together[i]) {
			t.Errorf("sequence %d (adapter %d): batched logits differ from alone (rel %g)", i, ids[i], relErr(together[i], alone))
		}
	}
	// Swapping the other sequences' adapters does not change sequence 0.
	swapped := forward(t, m, &model.Batch{Invariant: true, LoRA: reg}, prompts, []uint32{a1, 0, a2})
	if !slices.Equal(swapped[0], together[0]) {
		t.Error("sequence 0 depends on the other sequences' adapters")
	}
}

// TestPEFTPermutationMerges: merging a PEFT adapter into the HF-layout (rotate-half) base and
// then permuting q/k rows, as the HF loader does, gives the merge of the adapter as ReadPEFT
// returns it into the permuted base.
func TestPEFTPermutationMerges(t *testing.T) {
	cfg := testConfig()
	m := testModel(t, cfg, 9)
	a := randomAdapter(t, &cfg, 8, 31)
	dir := t.TempDir()
	if err := WritePEFT(dir, a, &cfg); err != nil {
		t.Fatal(err)
	}
	read, err := ReadPEFT(dir, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Open(filepath.Join(dir, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, tc := range []struct {
		name, mod string
		heads     int
	}{{"blk.1.attn_q.weight", "q_proj", cfg.Heads}, {"blk.0.attn_k.weight", "k_proj", cfg.KVHeads}} {
		p := read.Pairs[tc.name]
		hfW, err := model.UnpermuteRope(m.Weights[tc.name], tc.heads)
		if err != nil {
			t.Fatal(err)
		}
		fb, _ := f.Tensor(PEFTName(p.Layer, tc.mod, "B"))
		fbv, _ := fb.Float32()
		hp := *p
		hp.B = fbv // B exactly as PEFT holds it, for HF's q/k rows
		hfMerged, err := MergeTensor(hfW, &hp)
		if err != nil {
			t.Fatal(err)
		}
		viaHF, err := model.PermuteRope(hfMerged, tc.heads)
		if err != nil {
			t.Fatal(err)
		}
		ours, err := MergeTensor(m.Weights[tc.name], p)
		if err != nil {
			t.Fatal(err)
		}
		v1, _ := viaHF.Float32()
		v2, _ := ours.Float32()
		if !slices.Equal(v1, v2) {
			t.Fatalf("%s: merging in HF's layout then permuting differs from merging the read adapter", tc.name)
		}
	}
}

// TestEightAdaptersDecodeInvariant: 8 adapters (ranks 8 and 16) and the base, 9 sequences
// prefilled then decoded a step as one batch: each sequence's logits equal those of the
// sequence run alone (batch-invariant mode), at both steps.
func TestEightAdaptersDecodeInvariant(t *testing.T) {
	cfg := testConfig()
	m := testModel(t, cfg, 12)
	reg := &Registry{}
	ids := []uint32{0}
	for i := range 8 {
		id, err := reg.Add(string(rune('a'+i)), "", randomAdapter(t, &cfg, 8+8*(i%2), uint64(40+i)))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	run := func(which []int) map[int][2][]float32 {
		kv, err := m.NewPagedKV(2*len(ids), 16)
		if err != nil {
			t.Fatal(err)
		}
		b := &model.Batch{Invariant: true, LoRA: reg}
		seq := func(i, start int, toks []int) model.BatchSeq {
			return model.BatchSeq{Tokens: toks, StartPos: start, BlockTable: []int32{int32(2 * i), int32(2*i + 1)}, NeedsLogits: true, Adapter: ids[i]}
		}
		out := map[int][2][]float32{}
		for step := 0; step < 2; step++ {
			var bs []model.BatchSeq
			for _, i := range which {
				p := []int{1 + i, 7, 9 + 3*i, 20, 5, 2*i + 1}
				if step == 0 {
					bs = append(bs, seq(i, 0, p))
				} else {
					bs = append(bs, seq(i, len(p), []int{40 + i}))
				}
			}
			lg, err := m.ForwardBatch(b, kv, bs)
			if err != nil {
				t.Fatal(err)
			}
			for j, i := range which {
				o := out[i]
				o[step] = slices.Clone(lg[j*cfg.Vocab : (j+1)*cfg.Vocab])
				out[i] = o
			}
		}
		return out
	}
	all := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	together := run(all)
	for _, i := range all {
		alone := run([]int{i})[i]
		for step := range 2 {
			if !slices.Equal(alone[step], together[i][step]) {
				t.Errorf("sequence %d (adapter %d) step %d: batched logits differ from alone", i, ids[i], step)
			}
		}
	}
}
