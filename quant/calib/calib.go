// Package calib collects calibration statistics for quantization from the one model graph:
// it runs the model (model.ForwardBatch, the serving executor) over calibration tokens with a
// matmul observer (exec.MatMulObserver) and records, for every weight matrix, statistics of
// the activation that multiplies it: per input column the sum of squares (llama.cpp's
// importance matrix), the sum of |x| (AWQ's channel magnitudes), and when asked the Hessian
// X^T X (GPTQ) and a sample of input rows (AWQ's scale search). Weights that read one
// activation in one op (q/k/v, gate/up after fusion) share one Stats.
package calib

import (
	"fmt"
	"math/rand"

	"github.com/llmcloud/llmcloud/model"
)

// Stats are the statistics of one matmul input of width Cols.
type Stats struct {
	Cols   int
	SumSq  []float64 // per column, sum of x²
	SumAbs []float64 // per column, sum of |x|
	Rows   int64     // rows seen
	Calls  int       // chunks that reached it (llama.cpp's ncall)
	// H is X^T X [Cols*Cols] (row-major), when Options.Hessian.
	H []float64
	// Samples are up to Options.Samples input rows [len/Cols, Cols], a uniform sample.
	Samples []float32
	seen    int64 // rows offered to the sample
	lastCh  int   // the chunk last counted in Calls
	rng     *rand.Rand
}

// MeanSq is the per-column mean of x² (the importance matrix).
func (s *Stats) MeanSq() []float32 {
	out := make([]float32, s.Cols)
	for i, v := range s.SumSq {
		out[i] = float32(v / float64(max(s.Rows, 1)))
	}
	return out
}

// MeanAbs is the per-column mean of |x|.
func (s *Stats) MeanAbs() []float32 {
	out := make([]float32, s.Cols)
	for i, v := range s.SumAbs {
		out[i] = float32(v / float64(max(s.Rows, 1)))
	}
	return out
}

// Options select what is collected.
type Options struct {
	Ctx     int  // tokens per chunk (each starts with BOS, as perplexity); 0: 512
	Hessian bool // collect X^T X
	Samples int  // input rows kept per activation (0: none)
	// Include selects the weights observed (nil: every matrix a matmul reads, the output head
	// too: every row's logits are computed so it sees every row).
	Include func(name string) bool
	// Progress, when set, is called after each chunk with the tokens done and the total.
	Progress func(done, total int)
}

// Collector gathers Stats keyed by weight name.
type Collector struct {
	opts  Options
	ByW   map[string]*Stats
	order []*Stats
	chunk int
}

// NewCollector makes a collector.
func NewCollector(opts Options) *Collector {
	if opts.Include == nil {
		opts.Include = func(string) bool { return true }
	}
	return &Collector{opts: opts, ByW: map[string]*Stats{}}
}

// Observe is the exec.MatMulObserver: it adds x [rows, k] to the stats of weights.
func (c *Collector) Observe(x []float32, rows, k int, weights []string) {
	var st *Stats
	for _, w := range weights {
		if c.opts.Include(w) {
			if s := c.ByW[w]; s != nil {
				st = s
			}
		}
	}
	if st == nil {
		st = &Stats{Cols: k, SumSq: make([]float64, k), SumAbs: make([]float64, k), Calls: -1,
			rng: rand.New(rand.NewSource(int64(len(c.order)) + 1))}
		if c.opts.Hessian {
			st.H = make([]float64, k*k)
		}
		used := false
		for _, w := range weights {
			if c.opts.Include(w) {
				c.ByW[w], used = st, true
			}
		}
		if !used {
			return
		}
		c.order = append(c.order, st)
	}
	if st.Cols != k || rows == 0 {
		return
	}
	if st.Calls < 0 {
		st.Calls = 0
	}
	st.add(x, rows, c.opts)
	if st.lastCh != c.chunk { // Calls counts chunks, not ops (an unfused q/k/v reads its input thrice)
		st.Calls++
		st.lastCh = c.chunk
	}
}

func (s *Stats) add(x []float32, rows int, o Options) {
	k := s.Cols
	for r := 0; r < rows; r++ {
		row := x[r*k : r*k+k]
		for i, v := range row {
			f := float64(v)
			s.SumSq[i] += f * f
			if f < 0 {
				f = -f
			}
			s.SumAbs[i] += f
		}
		if o.Samples > 0 {
			n := s.seen
			have := len(s.Samples) / k
			switch {
			case have < o.Samples:
				s.Samples = append(s.Samples, row...)
			default:
				if j := s.rng.Int63n(n + 1); j < int64(o.Samples) {
					copy(s.Samples[int(j)*k:], row)
				}
			}
			s.seen++
		}
	}
	s.Rows += int64(rows)
	if s.H != nil {
		addGram(s.H, x, rows, k)
	}
}

// addGram adds x^T x (x [rows, k]) to h [k, k], four rows at a time.
func addGram(h []float64, x []float32, rows, k int) {
	r := 0
	for ; r+4 <= rows; r += 4 {
		a, b, c, d := x[r*k:r*k+k], x[(r+1)*k:(r+1)*k+k], x[(r+2)*k:(r+2)*k+k], x[(r+3)*k:(r+3)*k+k]
		for i := 0; i < k; i++ {
			ai, bi, ci, di := float64(a[i]), float64(b[i]), float64(c[i]), float64(d[i])
			hi := h[i*k : i*k+k]
			for j := i; j < k; j++ {
				hi[j] += ai*float64(a[j]) + bi*float64(b[j]) + ci*float64(c[j]) + di*float64(d[j])
			}
		}
	}
	for ; r < rows; r++ {
		a := x[r*k : r*k+k]
		for i := 0; i < k; i++ {
			ai := float64(a[i])
			hi := h[i*k : i*k+k]
			for j := i; j < k; j++ {
				hi[j] += ai * float64(a[j])
			}
		}
	}
}

// Finish mirrors each Hessian's upper triangle into the lower one.
func (c *Collector) Finish() {
	for _, s := range c.order {
		if s.H == nil {
			continue
		}
		k := s.Cols
		for i := 0; i < k; i++ {
			for j := i + 1; j < k; j++ {
				s.H[j*k+i] = s.H[i*k+j]
			}
		}
	}
}

// Run runs m over ids in chunks of opts.Ctx tokens (the first of each replaced by bos, as
// llama-perplexity scores) and collects the statistics. ids must hold at least one chunk.
func Run(m *model.Model, ids []int, bos int, opts Options) (*Collector, error) {
	if opts.Ctx <= 0 {
		opts.Ctx = 512
	}
	if n := m.Config.CtxLen; n > 0 && opts.Ctx > n {
		opts.Ctx = n
	}
	ctx := opts.Ctx
	nChunks := len(ids) / ctx
	if nChunks == 0 {
		return nil, fmt.Errorf("calib: %d calibration tokens is less than one chunk of %d", len(ids), ctx)
	}
	c := NewCollector(opts)
	err := m.ObserveChunks(ids[:nChunks*ctx], ctx, bos, true, c.Observe, func(ch int) {
		if opts.Progress != nil && ch > 0 {
			opts.Progress(ch*ctx, nChunks*ctx)
		}
		c.chunk = ch + 1
	})
	if err != nil {
		return nil, fmt.Errorf("calib: %w", err)
	}
	if opts.Progress != nil {
		opts.Progress(nChunks*ctx, nChunks*ctx)
	}
	c.Finish()
	return c, nil
}
