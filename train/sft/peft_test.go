package sft_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
	"github.com/llmcloud/llmcloud/train/nn"
	"github.com/llmcloud/llmcloud/train/sft"
)

// The trained pairs, through lora.WritePEFT, have PEFT's names, shapes, config fields and data; q/k B rows come back
// to GGUF order through PermuteRope; Merge adds (alpha/r)·B·A.
func TestWritePEFT(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 16, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 8,
		FFN: 32, Vocab: 32, CtxLen: 8, RopeTheta: 10000, NormEps: 1e-5, Tied: true}
	shapes := cfg.Shapes()
	ws, sh := map[string][]float32{}, map[string][]int{}
	r := 2
	for _, w := range []string{"blk.0.attn_q.weight", "blk.1.attn_k.weight", "blk.1.ffn_down.weight"} {
		a, b := nn.AdapterNames(w)
		s := shapes[w]
		sh[a], sh[b] = []int{r, s[1]}, []int{s[0], r}
		for _, n := range []string{a, b} {
			x := make([]float32, sh[n][0]*sh[n][1])
			for i := range x {
				x[i] = float32(i%13) - 6 + float32(len(n))/10
			}
			ws[n] = x
		}
	}
	dir := t.TempDir()
	ad, err := sft.ToLoRA("t", &sft.PEFTAdapter{Config: cfg, Base: "base.gguf", Rank: r, Alpha: 4, Targets: []string{"attn_q", "attn_k", "ffn_down"},
		Tensors: ws, ShapeOf: sh})
	if err != nil {
		t.Fatal(err)
	}
	if err := lora.WritePEFT(dir, ad, &cfg); err != nil {
		t.Fatal(err)
	}
	var conf map[string]any
	cb, _ := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
	if err := json.Unmarshal(cb, &conf); err != nil {
		t.Fatal(err)
	}
	if conf["peft_type"] != "LORA" || conf["r"] != float64(r) || conf["lora_alpha"] != float64(4) {
		t.Fatalf("config %v", conf)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
	n := binary.LittleEndian.Uint64(raw)
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		t.Fatal(err)
	}
	data := raw[8+n:]
	read := func(name string) ([]int, []float32) {
		var e struct {
			Dtype   string `json:"dtype"`
			Shape   []int  `json:"shape"`
			Offsets []int  `json:"data_offsets"`
		}
		if err := json.Unmarshal(hdr[name], &e); err != nil || e.Dtype != "F32" {
			t.Fatalf("%s: %s (%v)", name, hdr[name], err)
		}
		x := make([]float32, (e.Offsets[1]-e.Offsets[0])/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[e.Offsets[0]+4*i:]))
		}
		return e.Shape, x
	}
	if len(hdr) != 7 { // 6 tensors and __metadata__
		t.Fatalf("%d header entries", len(hdr))
	}
	s, a := read("base_model.model.model.layers.1.mlp.down_proj.lora_A.weight")
	if !slices.Equal(s, []int{r, 32}) || !slices.Equal(a, ws["blk.1.ffn_down.weight.lora_a"]) {
		t.Fatalf("down_proj lora_A shape %v", s)
	}
	s, b := read("base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight")
	if !slices.Equal(s, []int{16, r}) {
		t.Fatalf("q_proj lora_B shape %v", s)
	}
	buf := make([]byte, 4*len(b))
	for i, v := range b {
		binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
	}
	back, err := model.PermuteRope(&tensor.Tensor{Name: "q", Type: tensor.F32, Shape: s, Data: buf}, cfg.Heads)
	if err != nil {
		t.Fatal(err)
	}
	want := ws["blk.0.attn_q.weight.lora_b"]
	for i := range want {
		if got := math.Float32frombits(binary.LittleEndian.Uint32(back.Data[4*i:])); got != want[i] {
			t.Fatalf("q_proj lora_B row order: %d: %g, want %g", i, got, want[i])
		}
	}
	if slices.Equal(b, want) {
		t.Fatal("q_proj lora_B not reordered to Hugging Face's rotate-half rows")
	}
	// Merge: W + 2·B·A on the adapted weights, others unchanged.
	base := map[string][]float32{"blk.1.ffn_down.weight": make([]float32, 16*32), "blk.0.ffn_up.weight": {1, 2}}
	m := sft.Merge(base, shapes, ws, r, 2)
	A, B := ws["blk.1.ffn_down.weight.lora_a"], ws["blk.1.ffn_down.weight.lora_b"]
	if got, want := m["blk.1.ffn_down.weight"][3*32+5], 2*(B[3*r]*A[5]+B[3*r+1]*A[32+5]); math.Abs(float64(got-want)) > 1e-4 {
		t.Fatalf("merged [3,5] = %g, want %g", got, want)
	}
	if m["blk.0.ffn_up.weight"][1] != 2 {
		t.Fatal("an unadapted weight changed")
	}
}
