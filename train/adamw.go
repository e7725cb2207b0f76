// This file implements the optimizer: the global gradient L2 norm, clipping to it, and
// decoupled AdamW (Loshchilov & Hutter, "Decoupled Weight Decay Regularization", 2019) over
// the model's flat parameter buffer, as PyTorch's torch.optim.AdamW computes it. The fast
// path splits the buffer into fixed chunks run on the worker pool; every element's update is
// independent and the norm's partial sums are added in chunk order, so the result does not
// depend on the thread count. adamwRef and gradNormRef are the plain serial references.
package train

import (
	"math"

	"github.com/llmcloud/llmcloud/kernels"
)

// chunkElems is the fixed unit of parallel work (and of the norm's partial sums).
const chunkElems = 1 << 15

// AdamW holds the moment estimates of every parameter and the update count.
type AdamW struct {
	M, V   []float32 // first and second moments, [len(w)]
	spans  []span    // parameter ranges in the flat buffer and whether they decay
	T      int       // updates applied so far (bias correction uses T+1 for the next one)
	pool   *kernels.Pool
	partSq []float64 // per-chunk partial sums of squares
}

// span is one parameter's range [lo, hi) of the flat buffer.
type span struct {
	lo, hi int
	decay  bool
}

// Hyper are one update's settings.
type Hyper struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	GradScale                          float32 // gradients are multiplied by this first (1/grad-accum)
	Clip                               float64 // global norm limit after scaling; 0 = off
}

// NewAdamW makes an optimizer for a flat buffer of n parameters laid out as spans (a nil
// pool means kernels.Serial).
func NewAdamW(n int, spans []span, pool *kernels.Pool) *AdamW {
	if pool == nil {
		pool = kernels.Serial
	}
	return &AdamW{M: make([]float32, n), V: make([]float32, n), spans: spans, pool: pool,
		partSq: make([]float64, (n+chunkElems-1)/chunkElems)}
}

// Step scales g, clips it to the global norm limit, updates w in place and returns the
// global L2 norm of the scaled gradient before clipping. w, g: [n].
func (o *AdamW) Step(w, g []float32, h Hyper) float64 {
	norm := math.Sqrt(o.SumSq([][]float32{g}, h.GradScale))
	o.Update(w, g, h, norm)
	return norm
}

// SumSq is the sum of squares of scale·g over parts (slices of the gradient), added up in
// fixed chunks in order, so it does not depend on the thread count. A distributed run sums it
// over the ranks that hold the other parts of the gradient (each element counted once) to get
// the global norm.
func (o *AdamW) SumSq(parts [][]float32, scale float32) float64 {
	var chunks [][]float32
	for _, g := range parts {
		for a := 0; a < len(g); a += chunkElems {
			chunks = append(chunks, g[a:min(a+chunkElems, len(g))])
		}
	}
	if cap(o.partSq) < len(chunks) {
		o.partSq = make([]float64, len(chunks))
	}
	part := o.partSq[:len(chunks)]
	o.pool.For(len(chunks), 1, func(lo, hi int) {
		for c := lo; c < hi; c++ {
			var s float64
			for _, x := range chunks[c] {
				x *= scale
				s += float64(x) * float64(x)
			}
			part[c] = s
		}
	})
	var sum float64
	for _, s := range part {
		sum += s
	}
	return sum
}

// Update applies one AdamW update to w from g scaled by h.GradScale and clipped so that the
// global norm (of the scaled gradient, given) is at most h.Clip. w, g: [n].
func (o *AdamW) Update(w, g []float32, h Hyper, norm float64) {
	scale := clipScale(h, norm)
	o.updateViews(spanViews(o.spans, w, g), h, scale)
}

// spanViews are the views of spans over the flat buffers w and g.
func spanViews(spans []span, w, g []float32) []view {
	views := make([]view, len(spans))
	for i, sp := range spans {
		views[i] = view{w: w[sp.lo:sp.hi], g: g[sp.lo:sp.hi], off: sp.lo, decay: sp.decay}
	}
	return views
}

// view is a run of parameters the optimizer updates: weights w and gradients g (same length)
// whose moments are M and V at [off, off+len(w)). ZeRO's shards are views into per-unit
// buffers; the one-process optimizer's views are its spans of the flat buffers.
type view struct {
	w, g  []float32
	off   int
	decay bool
}

// updateViews applies one AdamW update to views with the gradient scale (clipping included).
func (o *AdamW) updateViews(views []view, h Hyper, scale float32) {
	o.T++
	k := o.coeffs(h, scale)
	for _, v := range views {
		wd := float32(0)
		if v.decay {
			wd = k.decay
		}
		n := len(v.w)
		o.pool.For((n+chunkElems-1)/chunkElems, 1, func(lo, hi int) {
			a, b := lo*chunkElems, min(hi*chunkElems, n)
			adamwRange(v.w[a:b], v.g[a:b], o.M[v.off+a:v.off+b], o.V[v.off+a:v.off+b], k, wd)
		})
	}
}

// clipScale is h.GradScale, reduced so that a gradient of global norm norm is clipped to h.Clip.
func clipScale(h Hyper, norm float64) float32 {
	scale := h.GradScale
	if h.Clip > 0 && norm > h.Clip {
		scale *= float32(h.Clip / norm)
	}
	return scale
}

// coeffs holds one step's constants in float32.
type coeffs struct {
	scale, b1, b2, omb1, omb2, lr, eps, bc1, bc2, decay float32
}

func (o *AdamW) coeffs(h Hyper, scale float32) coeffs {
	t := float64(o.T)
	return coeffs{
		scale: scale, b1: float32(h.Beta1), b2: float32(h.Beta2),
		omb1: float32(1 - h.Beta1), omb2: float32(1 - h.Beta2),
		lr: float32(h.LR), eps: float32(h.Eps),
		bc1: float32(1 - math.Pow(h.Beta1, t)), bc2: float32(1 - math.Pow(h.Beta2, t)),
		decay: float32(h.LR * h.WeightDecay),
	}
}

// adamwRange updates one range: w, g, m, v all [n]; wd is lr·weight_decay or 0.
func adamwRange(w, g, m, v []float32, k coeffs, wd float32) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i := range w {
		gi := g[i] * k.scale
		mi := k.b1*m[i] + k.omb1*gi
		vi := k.b2*v[i] + k.omb2*gi*gi
		m[i], v[i] = mi, vi
		mhat := mi / k.bc1
		vhat := vi / k.bc2
		w[i] -= wd*w[i] + k.lr*mhat/(float32(math.Sqrt(float64(vhat)))+k.eps)
	}
}
