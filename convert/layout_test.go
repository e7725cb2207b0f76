// Tests of the q/k row permutation direction, quantized output with block fallbacks, and
// llama2.c output.
package convert_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/llama2c"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tensor"
)

// An HF llama (rotate-half q/k rows) run with NeoX RoPE must match the permuted weights run
// with adjacent-pair RoPE, which is what LoadHF produces and WriteHF undoes.
func TestPermutationDirection(t *testing.T) {
	o := synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, Seed: 11}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := convert.WriteHF(dir, p, convert.Options{Type: "f32"}); err != nil {
		t.Fatal(err)
	}
	m, err := model.LoadHF(dir) // permuted, normal RoPE
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := m.Config
	if cfg.RopeNeoX {
		t.Fatal("LoadHF of a llama should run normal RoPE")
	}
	hfw := map[string]*tensor.Tensor{}
	for n, w := range m.Weights {
		hfw[n] = w
		heads := 0
		switch {
		case strings.HasSuffix(n, "attn_q.weight"):
			heads = cfg.Heads
		case strings.HasSuffix(n, "attn_k.weight"):
			heads = cfg.KVHeads
		}
		if heads > 0 {
			if hfw[n], err = model.UnpermuteRope(w, heads); err != nil {
				t.Fatal(err)
			}
			back, err := model.PermuteRope(hfw[n], heads)
			if err != nil || !bytes.Equal(back.Data, w.Data) {
				t.Fatalf("%s: PermuteRope(UnpermuteRope(w)) != w (%v)", n, err)
			}
		}
	}
	neox := cfg
	neox.RopeNeoX = true
	m2, err := model.New(neox, hfw)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int{1, 50, 100, 7, 200, 33, 90}
	a, err := m.Forward(m.NewCache(len(ids)), ids, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m2.Forward(m2.NewCache(len(ids)), ids, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	var maxDiff float64
	for i := range a {
		maxDiff = math.Max(maxDiff, math.Abs(float64(a[i]-b[i])))
	}
	if maxDiff > 1e-5 {
		t.Fatalf("permuted/normal and unpermuted/neox logits differ by %g", maxDiff)
	}
	// The wrong pairing (unpermuted weights, normal RoPE) must differ, or the test is blind.
	wrong := neox
	wrong.RopeNeoX = false
	m3, err := model.New(wrong, hfw)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m3.Forward(m3.NewCache(len(ids)), ids, 0, true)
	var wrongDiff float64
	for i := range a {
		wrongDiff = math.Max(wrongDiff, math.Abs(float64(a[i]-c[i])))
	}
	if wrongDiff < 100*maxDiff || wrongDiff < 1e-5 {
		t.Fatalf("unpermuted weights with normal RoPE differ by only %g", wrongDiff)
	}
}

func TestQuantizedOutputAndFallback(t *testing.T) {
	// FFN 96: ffn_down rows are 96 wide, not a multiple of 256 (k-quants) but of 32.
	o := synth.Options{Arch: "llama", Dim: 256, Layers: 1, Heads: 4, KVHeads: 4, FFN: 96, Vocab: 300, Seed: 2}
	p, err := o.Plan()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct{ typ, down string }{{"q8_0", "Q8_0"}, {"q4_0", "Q4_0"}, {"q4_k", "Q8_0"}, {"q6_k", "Q8_0"}} {
		var warns []string
		out := filepath.Join(dir, tc.typ+".gguf")
		if err := convert.WriteGGUF(out, p, convert.Options{Type: tc.typ, Warn: func(s string) { warns = append(warns, s) }}); err != nil {
			t.Fatal(err)
		}
		f, err := gguf.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := f.Tensor("blk.0.attn_q.weight")
		down, _ := f.Tensor("blk.0.ffn_down.weight")
		norm, _ := f.Tensor("blk.0.attn_norm.weight")
		if q.Type.String() != strings.ToUpper(tc.typ) || down.Type.String() != tc.down || norm.Type != tensor.F32 {
			t.Errorf("%s: attn_q %s, ffn_down %s, attn_norm %s", tc.typ, q.Type, down.Type, norm.Type)
		}
		if (tc.down != strings.ToUpper(tc.typ)) != (len(warns) > 0) {
			t.Errorf("%s: warnings %q", tc.typ, warns)
		}
		m, err := model.LoadGGUF(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Forward(m.NewCache(2), []int{1, 2}, 0, false); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := convert.WriteHF(filepath.Join(dir, "hf"), p, convert.Options{Type: "q8_0"}); err == nil || !strings.Contains(err.Error(), "f32, f16 or bf16") {
		t.Errorf("HF q8_0: %v", err)
	}
	if err := convert.WriteGGUF(filepath.Join(dir, "x.gguf"), p, convert.Options{Type: "q5_1"}); err == nil || !strings.Contains(err.Error(), "q5_1") {
		t.Errorf("unknown type: %v", err)
	}
}

func TestLlama2CRoundTrip(t *testing.T) {
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	dir := t.TempDir()
	out := filepath.Join(dir, "copy.bin")
	convertFile(t, bin, out, convert.Options{})
	fa, err := llama2c.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := llama2c.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if fa.Header != fb.Header || len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("header %+v vs %+v, %d vs %d tensors", fa.Header, fb.Header, len(fa.Tensors), len(fb.Tensors))
	}
	for i, x := range fa.Tensors {
		// The precomputed RoPE tables are recomputed by llama2c.Write (unused by llmcloud).
		if y := fb.Tensors[i]; !strings.HasPrefix(x.Name, "rope.") && !bytes.Equal(x.Data, y.Data) {
			t.Errorf("%s differs after llama2.c -> llama2.c", x.Name)
		}
	}
	tokA, _ := os.ReadFile(fixture.Path(t, "models", "stories260K", "tok512.bin"))
	tokB, err := os.ReadFile(filepath.Join(dir, "tokenizer.bin"))
	if err != nil || !bytes.Equal(tokA, tokB) {
		t.Errorf("tokenizer.bin differs from tok512.bin (%v)", err)
	}
	// GGUF -> llama2.c gives the same logits.
	gg := filepath.Join(dir, "s.gguf")
	convertFile(t, bin, gg, convert.Options{})
	want, _ := logits(t, bin)
	got, _ := logits(t, out)
	sameBits(t, "llama2.c copy", want, got)
	qwen, err := (synth.Options{Arch: "qwen2", Dim: 32, Layers: 1, Heads: 2}).Plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := convert.WriteLlama2C(filepath.Join(dir, "q.bin"), qwen, convert.Options{}); err == nil || !strings.Contains(err.Error(), "qwen2") {
		t.Errorf("qwen2 to llama2.c: %v", err)
	}
}
