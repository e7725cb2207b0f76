// This file is AWQ over a model: per layer, four groups of weights that read one activation —
// q/k/v (after attn_norm), o (after attention, whose input is linear in v), gate/up (after
// ffn_norm) and down (after silu(gate)*up, linear in up) — get searched scales s (awq.go); the
// weights' columns are multiplied by s and the producer of the activation divides by s: the
// RMSNorm weight, or v's rows (o: only without grouped-query attention, where one v channel
// feeds several heads' o columns) or up's rows (down). The model's function is unchanged
// before quantization and the file is a plain GGUF.
package quant

import (
	"fmt"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/tensor"
)

// awqArchs are the architectures whose norms are plain x*g, so a scale folds into g.
var awqArchs = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true}

type awqGroup struct {
	ws   []string // weights reading the activation (their columns scale by s)
	norm string   // the RMSNorm weight producing it ("" : prevRows)
	prev string   // the matrix whose rows produce it (rows scale by 1/s)
	bias string   // prev's bias, if any
}

// fitType is the type convert writes rows of k in when dt is asked for: a K-quant whose
// super-block does not divide k falls back to Q8_0 (convert's outType).
func fitType(dt tensor.DType, k int) tensor.DType {
	if k%dt.BlockElems() != 0 && (dt == tensor.Q4_K || dt == tensor.Q6_K) && k%32 == 0 {
		return tensor.Q8_0
	}
	return dt
}

func foldAWQ(p *convert.Plan, cal Calibration, o Options) error {
	c := p.Config
	if !awqArchs[c.Arch] || c.Experts > 0 {
		return fmt.Errorf("quant: awq folds scales into llama-style dense models (llama, mistral, qwen2, qwen3), not %s", c.Arch)
	}
	byName := map[string]*convert.Tensor{}
	for i := range p.Tensors {
		byName[p.Tensors[i].Name] = &p.Tensors[i]
	}
	vals := map[string][]float32{} // working copies, written back at the end
	get := func(name string) ([]float32, error) {
		if v, ok := vals[name]; ok {
			return v, nil
		}
		t := byName[name]
		if t == nil {
			return nil, fmt.Errorf("quant: awq: no tensor %s", name)
		}
		x, err := t.Load()
		if err != nil {
			return nil, err
		}
		f, err := x.Float32()
		if err != nil {
			return nil, fmt.Errorf("quant: awq: %s: %w", name, err)
		}
		f = append([]float32(nil), f...)
		vals[name] = f
		return f, nil
	}
	has := func(n string) bool { return byName[n] != nil }
	dt := o.Type
	for l := 0; l < c.Layers; l++ {
		b := func(s string) string { return fmt.Sprintf("blk.%d.%s", l, s) }
		var groups []awqGroup
		if has(b("attn_q.weight")) && has(b("attn_k.weight")) && has(b("attn_v.weight")) && has(b("attn_norm.weight")) {
			groups = append(groups, awqGroup{ws: []string{b("attn_q.weight"), b("attn_k.weight"), b("attn_v.weight")}, norm: b("attn_norm.weight")})
			if c.Heads == c.KVHeads && has(b("attn_output.weight")) {
				g := awqGroup{ws: []string{b("attn_output.weight")}, prev: b("attn_v.weight")}
				if has(b("attn_v.bias")) {
					g.bias = b("attn_v.bias")
				}
				groups = append(groups, g)
			}
		}
		if has(b("ffn_gate.weight")) && has(b("ffn_up.weight")) && has(b("ffn_norm.weight")) {
			groups = append(groups, awqGroup{ws: []string{b("ffn_gate.weight"), b("ffn_up.weight")}, norm: b("ffn_norm.weight")})
			if has(b("ffn_down.weight")) {
				groups = append(groups, awqGroup{ws: []string{b("ffn_down.weight")}, prev: b("ffn_up.weight")})
			}
		}
		for _, g := range groups {
			st := cal.Stats[g.ws[0]]
			if st == nil || len(st.Samples) == 0 {
				return fmt.Errorf("quant: awq: no calibration samples for %s", g.ws[0])
			}
			k := st.Cols
			var ws [][]float32
			var rows []int
			var dts []tensor.DType
			var rounds []Rounder
			for _, n := range g.ws {
				w, err := get(n)
				if err != nil {
					return err
				}
				if len(w)%k != 0 {
					return fmt.Errorf("quant: awq: %s has %d values, not rows of %d", n, len(w), k)
				}
				ws, rows, dts = append(ws, w), append(rows, len(w)/k), append(dts, fitType(dt, k))
				if o.Grid != nil {
					rounds = append(rounds, IntRounder(*o.Grid))
				} else {
					rounds = append(rounds, blockRounder(dts[len(dts)-1]))
				}
			}
			if o.Grid != nil {
				if k%o.Grid.group(k) != 0 {
					o.logf("awq: %s: rows of %d are not whole groups of %d, not scaled", g.ws[0], k, o.Grid.group(k))
					continue
				}
			} else if k%dts[0].BlockElems() != 0 {
				o.logf("awq: %s: rows of %d do not fit %s's blocks, not scaled", g.ws[0], k, dts[0])
				continue
			}
			res, err := AWQSearchRound(ws, rows, rounds, k, st.MeanAbs(), st.Samples, o.AWQGrid)
			if err != nil {
				return fmt.Errorf("quant: awq: %s: %w", g.ws[0], err)
			}
			o.logf("awq: %s: alpha %.2f, output error %.4g (round-to-nearest %.4g, %.1f%%)", g.ws[0], res.Alpha, res.Err, res.ErrRTN, 100*res.Err/res.ErrRTN)
			if res.Alpha == 0 {
				continue
			}
			s := res.Scales
			for i, n := range g.ws {
				vals[n] = ScaleCols(ws[i], rows[i], k, s)
			}
			switch {
			case g.norm != "":
				nw, err := get(g.norm)
				if err != nil {
					return err
				}
				if len(nw) != k {
					return fmt.Errorf("quant: awq: %s has %d values, the activation %d", g.norm, len(nw), k)
				}
				for j := range nw {
					nw[j] /= s[j]
				}
			default:
				pw, err := get(g.prev)
				if err != nil {
					return err
				}
				if len(pw)%k != 0 || len(pw)/k == 0 {
					return fmt.Errorf("quant: awq: %s has %d values, not %d rows", g.prev, len(pw), k)
				}
				pc := len(pw) / k
				for j := 0; j < k; j++ {
					for i := 0; i < pc; i++ {
						pw[j*pc+i] /= s[j]
					}
				}
				if g.bias != "" {
					bv, err := get(g.bias)
					if err != nil {
						return err
					}
					for j := range bv {
						bv[j] /= s[j]
					}
				}
			}
		}
	}
	for name, v := range vals {
		t := byName[name]
		ft := F32Tensor(name, v, 1, len(v))
		ft.Shape = t.Shape
		t.Type = tensor.F32
		t.Load = func() (*tensor.Tensor, error) { return ft, nil }
	}
	return nil
}
