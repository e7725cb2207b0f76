package main

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
)

// writeSynthF32 writes a small random F32 llama in out (GGUF or a Hugging Face directory).
func writeSynthF32(t *testing.T, out string) {
	t.Helper()
	p, err := synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 96, Vocab: 300, CtxLen: 64, Std: 0.1, Seed: 5}.Plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := convert.Write(out, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
}

func lastLogits(t *testing.T, m *model.Model, reg *lora.Registry, id uint32, toks []int) []float32 {
	t.Helper()
	kv, err := m.NewPagedKV(2, 32)
	if err != nil {
		t.Fatal(err)
	}
	lg, err := m.ForwardBatch(&model.Batch{LoRA: reg}, kv, []model.BatchSeq{{Tokens: toks, BlockTable: []int32{0, 1}, NeedsLogits: true, Adapter: id}})
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), lg...)
}

// TestLoRAMergeCLI: `lora merge` of a PEFT adapter into an F32 base (GGUF and a Hugging Face
// directory, whose q/k rows the loader permutes) gives the logits of the base with the adapter
// applied at run time, within 1e-5 relative; an adapter for another base is refused naming the
// tensor and both shapes.
func TestLoRAMergeCLI(t *testing.T) {
	dir := t.TempDir()
	for _, base := range []string{filepath.Join(dir, "base.gguf"), filepath.Join(dir, "basehf")} {
		writeSynthF32(t, base)
		ad := filepath.Join(dir, "ad-"+filepath.Base(base))
		var out, errb bytes.Buffer
		if err := runLoRA([]string{"random", base, ad, "--rank", "8", "--amp", "0.05"}, &out, &errb); err != nil {
			t.Fatal(err, errb.String())
		}
		merged := filepath.Join(dir, "merged-"+filepath.Base(base))
		if err := runLoRA([]string{"merge", base, ad, merged}, &out, &errb); err != nil {
			t.Fatal(err, errb.String())
		}
		b, err := loader.Open(base, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		a, err := lora.Open(ad, &b.Model.Config, b.Model.Weights)
		if err != nil {
			t.Fatal(err)
		}
		reg := &lora.Registry{}
		id, _ := reg.Add("ad", ad, a)
		mb, err := loader.Open(merged, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer mb.Close()
		toks := []int{1, 50, 7, 200, 33, 9}
		got := lastLogits(t, b.Model, reg, id, toks)
		want := lastLogits(t, mb.Model, nil, 0, toks)
		baseLg := lastLogits(t, b.Model, nil, 0, toks)
		var d, s, moved float64
		for i := range got {
			d = max(d, math.Abs(float64(got[i]-want[i])))
			s = max(s, math.Abs(float64(want[i])))
			moved = max(moved, math.Abs(float64(baseLg[i]-want[i])))
		}
		if d/s > 1e-5 {
			t.Errorf("%s: merged vs run-time adapter: relative error %g", base, d/s)
		}
		if moved/s < 1e-3 {
			t.Errorf("%s: the adapter moved the logits by only %g relative", base, moved/s)
		}
	}
	// An adapter for another base.
	other := filepath.Join(dir, "other.gguf")
	p, _ := synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, Vocab: 300, CtxLen: 64, Seed: 5}.Plan()
	if err := convert.Write(other, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	err := runLoRA([]string{"merge", other, filepath.Join(dir, "ad-base.gguf"), filepath.Join(dir, "x.gguf")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "ffn_gate.weight") || !strings.Contains(err.Error(), "[96 64]") || !strings.Contains(err.Error(), "[128 64]") {
		t.Fatalf("wrong base: %v", err)
	}
}
