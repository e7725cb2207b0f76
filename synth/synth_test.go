// Tests of synth: deterministic per-tensor streams, N(0, 0.02) statistics, unit norms, preset
// shapes, the byte vocabulary and configuration errors.
package synth

import (
	"bytes"
	"math"
	"testing"

	"github.com/llmcloud/llmcloud/tokenizer"
)

func TestGenerate(t *testing.T) {
	a := Generate("blk.0.attn_q.weight", []int{64, 128}, 7)
	b := Generate("blk.0.attn_q.weight", []int{64, 128}, 7)
	c := Generate("blk.0.attn_q.weight", []int{64, 128}, 8)
	d := Generate("blk.0.attn_k.weight", []int{64, 128}, 7)
	if !bytes.Equal(a.Data, b.Data) || bytes.Equal(a.Data, c.Data) || bytes.Equal(a.Data, d.Data) {
		t.Fatal("streams are not deterministic per (seed, name)")
	}
	f, _ := a.Float32()
	var sum, sq float64
	for _, x := range f {
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	n := float64(len(f))
	if mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n)); math.Abs(mean) > 0.002 || math.Abs(sd-0.02) > 0.001 {
		t.Errorf("mean %g sd %g, want 0 and 0.02", mean, sd)
	}
	norm, _ := Generate("blk.0.attn_norm.weight", []int{16}, 7).Float32()
	for _, x := range norm {
		if x != 1 {
			t.Fatalf("norm weight %v", x)
		}
	}
}

func TestPresetsAndDefaults(t *testing.T) {
	o := Presets["qwen2.5-0.5b"]
	c, err := o.Config()
	if err != nil {
		t.Fatal(err)
	}
	if c.HeadDim != 64 || !c.QKVBias || !c.RopeNeoX || !c.Tied || c.Vocab != 151936 {
		t.Errorf("qwen2.5-0.5b: %+v", c)
	}
	p, err := Presets["tinyllama-1.1b"].Plan()
	if err != nil {
		t.Fatal(err)
	}
	var params int
	for _, t := range p.Tensors {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		params += n
	}
	if params != 1100048384 { // TinyLlama-1.1B's parameter count
		t.Errorf("tinyllama params %d", params)
	}
	c, err = Options{}.Config()
	if err != nil || c.Arch != "llama" || c.Vocab != 258 || c.Dim != 64 || c.FFN != 256 {
		t.Errorf("defaults %+v %v", c, err)
	}
	if _, err := (Options{Arch: "llama", Heads: 3, KVHeads: 2}).Config(); err == nil {
		t.Error("3 heads over 2 KV heads accepted")
	}
	if _, err := (Options{Vocab: 100}).Config(); err == nil {
		t.Error("vocabulary smaller than the byte tokenizer accepted")
	}
}

func TestByteVocab(t *testing.T) {
	tok, err := tokenizer.New(ByteVocab())
	if err != nil {
		t.Fatal(err)
	}
	s := "any bytes \x00\xff ok ✓"
	ids := tok.Encode(s, true, false)
	if ids[0] != 256 || len(ids) != len(s)+1 || tok.Decode(ids[1:]) != s {
		t.Errorf("%v -> %q", ids, tok.Decode(ids))
	}
}
