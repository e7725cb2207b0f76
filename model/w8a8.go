// This file turns a loaded model's block matmul weights into W8A8 (tensor.W8A8: int8 values,
// one scale per output row; the kernels quantize activations per token: kernels/w8a8.go),
// after SmoothQuant's scale migration: for the inputs that follow an RMSNorm (q/k/v after
// attn_norm, gate/up after ffn_norm) each input channel j gets
//
//	s_j = max|X_j|^α / max|W_·j|^(1-α)
//
// (max|X_j| from calibration, max|W_·j| over the rows of every weight reading that input), the
// norm weight is divided by s_j and column j of those weights multiplied by it. The product is
// unchanged in exact arithmetic; the activations lose their outlier channels and quantize per
// token with less error. attn_output and ffn_down (no norm before them) are converted without
// smoothing; the embeddings and the output matrix keep their type.
package model

import (
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// W8A8Options configure ApplyW8A8.
type W8A8Options struct {
	// Alpha is SmoothQuant's migration strength (0: none, 1: all onto the weights); 0.5 when
	// zero and Stats is set. Negative: no smoothing.
	Alpha float64
	// Stats maps a weight name to the per-input-channel max |x| seen by its matmul during
	// calibration (W8A8Stats collects them). Nil: no smoothing.
	Stats map[string][]float32
}

// W8A8Report says what ApplyW8A8 did.
type W8A8Report struct {
	Converted, Smoothed int   // weights made W8A8, of which smoothed
	BytesBefore         int64 // bytes of the converted weights before and after
	BytesAfter          int64
}

// w8a8Arches are the families whose blocks are the plain pre-norm layout ApplyW8A8 knows
// (RMSNorm weight multiplied as is, q/k/v and gate/up reading the norm's output).
var w8a8Arches = map[string]bool{"llama": true, "mistral": true, "qwen2": true, "qwen3": true}

// w8a8Groups are the weights sharing one normed input, after that norm.
var w8a8Groups = []struct {
	norm string
	ws   []string
}{
	{"attn_norm", []string{"attn_q", "attn_k", "attn_v"}},
	{"ffn_norm", []string{"ffn_gate", "ffn_up"}},
}

// w8a8Plain are the block weights converted without smoothing.
var w8a8Plain = []string{"attn_output", "ffn_down"}

// ApplyW8A8 converts m's block matmul weights to W8A8 (smoothing them as described above when
// o.Stats is set) and rebuilds the serving graph's bindings. Errors name the tensor.
func (m *Model) ApplyW8A8(o W8A8Options) (W8A8Report, error) {
	var rep W8A8Report
	cfg := &m.Config
	if !w8a8Arches[cfg.Arch] {
		return rep, fmt.Errorf("w8a8: architecture %s is not supported (llama, mistral, qwen2, qwen3)", cfg.Arch)
	}
	alpha := o.Alpha
	if alpha == 0 {
		alpha = 0.5
	}
	if alpha > 1 {
		return rep, fmt.Errorf("w8a8: alpha %g outside [0, 1]", alpha)
	}
	pool := m.Pool
	if pool == nil {
		pool = kernels.Default
	}
	ws := m.Weights
	for l := 0; l < cfg.Layers; l++ {
		name := func(s string) string { return fmt.Sprintf("blk.%d.%s.weight", l, s) }
		for _, g := range w8a8Groups {
			var mats []*tensor.Tensor
			var keys []string // the weights' names in m.Weights (a tensor's own Name may be its file's)
			for _, s := range g.ws {
				if t := ws[name(s)]; t != nil && len(t.Shape) == 2 {
					mats = append(mats, t)
					keys = append(keys, name(s))
				}
			}
			if len(mats) == 0 {
				continue
			}
			k := mats[0].Shape[1]
			var scale []float32
			norm := ws[name(g.norm)]
			if st := o.Stats[keys[0]]; st != nil && alpha >= 0 && norm != nil {
				if len(st) != k {
					return rep, fmt.Errorf("w8a8: calibration statistics of %s have %d channels, the weight %d", mats[0].Name, len(st), k)
				}
				var err error
				if scale, err = smoothScales(pool, st, mats, alpha); err != nil {
					return rep, err
				}
				nw, err := norm.Float32()
				if err != nil {
					return rep, fmt.Errorf("w8a8: %s: %w", norm.Name, err)
				}
				if len(nw) != k {
					return rep, fmt.Errorf("w8a8: %s has %d values, %s reads %d", norm.Name, len(nw), mats[0].Name, k)
				}
				for j := range nw {
					nw[j] /= scale[j]
				}
				ws[name(g.norm)] = f32Tensor(norm.Name, nw)
			}
			for i, t := range mats {
				nt, err := toW8A8(pool, t, scale)
				if err != nil {
					return rep, err
				}
				rep.add(t, nt, scale != nil)
				ws[keys[i]] = nt
			}
		}
		for _, s := range w8a8Plain {
			t := ws[name(s)]
			if t == nil || len(t.Shape) != 2 {
				continue
			}
			nt, err := toW8A8(pool, t, nil)
			if err != nil {
				return rep, err
			}
			rep.add(t, nt, false)
			ws[name(s)] = nt
		}
	}
	if err := m.prepareServing(); err != nil {
		return rep, err
	}
	return rep, nil
}

func (r *W8A8Report) add(old, nt *tensor.Tensor, smoothed bool) {
	r.Converted++
	if smoothed {
		r.Smoothed++
	}
	r.BytesBefore += int64(len(old.Data))
	r.BytesAfter += int64(len(nt.Data))
}

// smoothScales returns s_j = max|X_j|^α / max|W_·j|^(1-α) over the weights mats (channels
// that never saw a value, or whose weights are all zero, keep s_j = 1), clamped to
// [1e-5, 1e5].
func smoothScales(pool *kernels.Pool, xmax []float32, mats []*tensor.Tensor, alpha float64) ([]float32, error) {
	k := len(xmax)
	wmax := make([]float32, k)
	for _, t := range mats {
		if err := colMaxAbs(pool, t, wmax); err != nil {
			return nil, err
		}
	}
	s := make([]float32, k)
	for j := range s {
		s[j] = 1
		if xmax[j] > 0 && wmax[j] > 0 {
			v := math.Pow(float64(xmax[j]), alpha) / math.Pow(float64(wmax[j]), 1-alpha)
			s[j] = float32(min(1e5, max(1e-5, v)))
		}
	}
	return s, nil
}

// colMaxAbs folds the per-column max |w| of t into cm.
func colMaxAbs(pool *kernels.Pool, t *tensor.Tensor, cm []float32) error {
	t, err := rowReadable(t)
	if err != nil {
		return err
	}
	n, k := t.Shape[0], t.Shape[1]
	parts := make([][]float32, n)
	var firstErr error
	errs := make([]error, n)
	pool.For(n, 64, func(lo, hi int) {
		row := make([]float32, k)
		acc := make([]float32, k)
		for r := lo; r < hi; r++ {
			if err := tensor.DequantizeRow(t.Type, t.RowData(r), row); err != nil {
				errs[r] = fmt.Errorf("w8a8: %s row %d: %w", t.Name, r, err)
				return
			}
			for j, v := range row {
				acc[j] = max(acc[j], float32(math.Abs(float64(v))))
			}
		}
		parts[lo] = acc
	})
	for r := range n {
		if errs[r] != nil && firstErr == nil {
			firstErr = errs[r]
		}
		if p := parts[r]; p != nil {
			for j, v := range p {
				cm[j] = max(cm[j], v)
			}
		}
	}
	return firstErr
}

// toW8A8 returns t ([n, k], any dtype) as a W8A8 tensor, column j multiplied by scale[j]
// first when scale is set.
func toW8A8(pool *kernels.Pool, t *tensor.Tensor, scale []float32) (*tensor.Tensor, error) {
	t, err := rowReadable(t)
	if err != nil {
		return nil, err
	}
	n, k := t.Shape[0], t.Shape[1]
	data := tensor.NewW8A8Data(n, k) // the kernels' packed layout, written row by row
	errs := make([]error, n)
	pool.For(n, 64, func(lo, hi int) {
		row := make([]float32, k)
		q := make([]byte, k+4)
		for r := lo; r < hi; r++ {
			if err := tensor.DequantizeRow(t.Type, t.RowData(r), row); err != nil {
				errs[r] = fmt.Errorf("w8a8: %s row %d: %w", t.Name, r, err)
				return
			}
			for j := range scale {
				row[j] *= scale[j]
			}
			tensor.QuantizeRowW8A8(row, q)
			tensor.W8A8SetRow(data, k, r, q)
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return &tensor.Tensor{Name: t.Name, Type: tensor.W8A8, Shape: []int{n, k}, Data: data}, nil
}

// rowReadable returns t itself, or for a zero-corrected weight (Q4_0Z/Q8_0Z from an AWQ or GPTQ
// checkpoint, whose rows alone do not hold the weight) an F32 copy, so rows dequantize on
// their own.
func rowReadable(t *tensor.Tensor) (*tensor.Tensor, error) {
	if _, ok := tensor.ZeroBase(t.Type); !ok {
		return t, nil
	}
	f, err := tensor.Convert(t, tensor.F32)
	if err != nil {
		return nil, fmt.Errorf("w8a8: %w", err)
	}
	return f, nil
}
