// This file reads gpt-oss's released Hugging Face form, whose experts are MXFP4 (config.json
// quantization_config {quant_method: mxfp4}): per fused weight two U8 tensors,
// mlp.experts.gate_up_proj_blocks [E, 2F, D/32, 16] and gate_up_proj_scales [E, 2F, D/32]
// (down_proj_blocks [E, D, F/32, 16], down_proj_scales [E, D, F/32]), already [out, in] unlike
// the float form. A block's 16 bytes hold its 32 E2M1 values in element order, element 2j in
// byte j's low nibble and 2j+1 in its high nibble (transformers' convert_moe_packed_tensors);
// ggml's block_mxfp4 puts element j in byte j's low nibble and j+16 in its high nibble, after
// the E8M0 scale byte (the same byte in both). gptossMergeMXFP4 repacks each pair into one
// MXFP4 tensor under the NameMap's .weight name; the interleaved gate/up rows are then split
// as in the float form (Family.HFInterleaved), and the experts run as MXFP4.
package model

import (
	"fmt"
	"strings"

	"github.com/llmcloud/llmcloud/tensor"
)

// gptossMergeMXFP4 replaces each name.blocks / name.scales pair of ws by the MXFP4 tensor
// name.weight.
func gptossMergeMXFP4(c *Config, ws map[string]*tensor.Tensor) error {
	for name, blocks := range ws {
		base, ok := strings.CutSuffix(name, ".blocks")
		if !ok {
			continue
		}
		scales := ws[base+".scales"]
		if scales == nil {
			return fmt.Errorf("model: %s has no %s.scales (MXFP4 experts, quantization_config mxfp4)", name, base)
		}
		w, err := MXFP4FromHF(base+".weight", blocks, scales)
		if err != nil {
			return err
		}
		delete(ws, name)
		delete(ws, base+".scales")
		ws[w.Name] = w
	}
	for name := range ws {
		if strings.HasSuffix(name, ".scales") {
			return fmt.Errorf("model: %s has no .blocks (MXFP4 experts)", name)
		}
	}
	return nil
}

// MXFP4FromHF makes the MXFP4 tensor [A..., nb*32] from transformers' blocks [A..., nb, 16]
// and scales [A..., nb] (U8).
func MXFP4FromHF(name string, blocks, scales *tensor.Tensor) (*tensor.Tensor, error) {
	k := len(blocks.Shape)
	if blocks.Type != tensor.U8 || scales.Type != tensor.U8 || k < 2 || blocks.Shape[k-1] != 16 ||
		len(scales.Shape) != k-1 || fmt.Sprint(scales.Shape) != fmt.Sprint(blocks.Shape[:k-1]) {
		return nil, fmt.Errorf("model: %s: MXFP4 blocks %s%v and scales %s%v: want U8 [..., nb, 16] and [..., nb]",
			name, blocks.Type, blocks.Shape, scales.Type, scales.Shape)
	}
	if err := blocks.Check(); err != nil {
		return nil, err
	}
	if err := scales.Check(); err != nil {
		return nil, err
	}
	n := len(scales.Data)
	out := make([]byte, 17*n)
	for b := 0; b < n; b++ {
		src, dst := blocks.Data[16*b:16*b+16], out[17*b:17*b+17]
		dst[0] = scales.Data[b]
		nib := func(e int) byte { return src[e/2] >> (4 * (e % 2)) & 0xf }
		for j := 0; j < 16; j++ {
			dst[1+j] = nib(j) | nib(j+16)<<4
		}
	}
	shape := append([]int(nil), blocks.Shape[:k-1]...)
	shape[k-2] *= 32
	return &tensor.Tensor{Name: name, Type: tensor.MXFP4, Shape: shape, Data: out}, nil
}

// MXFP4ToHF is MXFP4FromHF's inverse: transformers' blocks and scales of an MXFP4 tensor.
func MXFP4ToHF(t *tensor.Tensor) (blocks, scales *tensor.Tensor, err error) {
	if t.Type != tensor.MXFP4 {
		return nil, nil, fmt.Errorf("model: %s is %s, not MXFP4", t.Name, t.Type)
	}
	if err := t.Check(); err != nil {
		return nil, nil, err
	}
	n := len(t.Data) / 17
	bd, sd := make([]byte, 16*n), make([]byte, n)
	for b := 0; b < n; b++ {
		src := t.Data[17*b : 17*b+17]
		sd[b] = src[0]
		nib := func(e int) byte { return src[1+e%16] >> (4 * (e / 16)) & 0xf }
		for j := 0; j < 16; j++ {
			bd[16*b+j] = nib(2*j) | nib(2*j+1)<<4
		}
	}
	k := len(t.Shape)
	ss := append(append([]int(nil), t.Shape[:k-1]...), t.Shape[k-1]/32)
	bs := append(append([]int(nil), ss...), 16)
	return &tensor.Tensor{Name: t.Name + ".blocks", Type: tensor.U8, Shape: bs, Data: bd},
		&tensor.Tensor{Name: t.Name + ".scales", Type: tensor.U8, Shape: ss, Data: sd}, nil
}

// gptossMXFP4Shapes replaces the experts' fused weights of s (HF shapes) by their MXFP4
// blocks and scales.
func gptossMXFP4Shapes(c *Config, s map[string][]int) {
	e, f, d := c.Experts, c.ExpertWidth(), c.Dim
	for l := 0; l < c.Layers; l++ {
		p := fmt.Sprintf("blk.%d.", l)
		delete(s, p+gptossGateUp+".weight")
		delete(s, p+"ffn_down_exps.weight")
		s[p+gptossGateUp+".blocks"] = []int{e, 2 * f, d / 32, 16}
		s[p+gptossGateUp+".scales"] = []int{e, 2 * f, d / 32}
		s[p+"ffn_down_exps.blocks"] = []int{e, d, f / 32, 16}
		s[p+"ffn_down_exps.scales"] = []int{e, d, f / 32}
	}
}
