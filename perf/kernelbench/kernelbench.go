// Package kernelbench is the fixed kernel suite of `llmcloud bench kernels` and of
// `llmcloud bench regress --suite kernels`: the core kernels (matmul for each weight dtype in
// the decode and prefill shapes, attention, rmsnorm, softmax, swiglu, rope) on fixed shapes and
// fixed pseudo-random data, each timed back to back for a fixed short duration. One Run is one
// round; regress runs many rounds, alternating two binaries, and does the statistics.
package kernelbench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/regress"
	"github.com/llmcloud/llmcloud/tensor"
)

// bench is one benchmark: setup makes its data (only for the benchmarks a run selects) and
// sets op, which runs one operation.
type bench struct {
	name, kernel string
	bytes        int64
	setup        func(b *bench)
	op           func() error
}

// Options are a run's settings.
type Options struct {
	Threads int            // matmul pool workers
	Batches int            // timed batches of each benchmark
	Filter  *regexp.Regexp // benchmarks whose name matches; nil for all
}

// Names lists the suite's benchmarks in order.
func Names() []string {
	var out []string
	for _, b := range suite(nil) {
		out = append(out, b.name)
	}
	return out
}

// Run times every benchmark of the suite (that Filter matches) once, in the suite's order.
func Run(o Options) (*regress.SuiteResult, error) {
	if o.Threads < 1 || o.Batches < 1 {
		return nil, fmt.Errorf("kernel suite: threads %d and batches %d must be positive", o.Threads, o.Batches)
	}
	inj, err := kernels.InjectedSlowdown()
	if err != nil {
		return nil, err
	}
	res := &regress.SuiteResult{Suite: "kernels", Threads: o.Threads, Batches: o.Batches, BatchOps: BatchOps, Injected: inj}
	pool := kernels.NewPool(o.Threads)
	for _, b := range suite(pool) {
		if o.Filter != nil && !o.Filter.MatchString(b.name) {
			continue
		}
		b.setup(&b)
		if err := batch(b.op); err != nil { // warm-up: caches, the pool's goroutines, lazy packs
			return nil, fmt.Errorf("%s: %w", b.name, err)
		}
		best := time.Duration(math.MaxInt64)
		for range o.Batches {
			t := time.Now()
			if err := batch(b.op); err != nil {
				return nil, fmt.Errorf("%s: %w", b.name, err)
			}
			best = min(best, time.Since(t))
		}
		res.Benchmarks = append(res.Benchmarks, regress.Benchmark{Name: b.name, Kernel: b.kernel,
			NsPerOp: float64(best.Nanoseconds()) / BatchOps, Ops: o.Batches * BatchOps, BytesPerOp: b.bytes})
	}
	if len(res.Benchmarks) == 0 {
		return nil, fmt.Errorf("kernel suite: no benchmark matches %v (have: %v)", o.Filter, Names())
	}
	return res, nil
}

// BatchOps is how many ops are timed together. A round's figure is the fastest of its batches'
// time per op: interference from the host (preemption, another job's cache and memory traffic)
// only adds time, and at a load average of 8 on this 2-CPU host the mean over a round moved by
// 2x between rounds and the median batch by 40%. The count of batches is fixed (Options.Batches)
// so that the minimum of every round is taken over as many. A batch of 20 holds exactly
// 20·FRACTION repeats of a kernel given an injected slowdown (kernels/slowdown.go) whenever
// that is a whole number (5%, 10%, 15%, ...), so every batch carries the slowdown evenly.
const BatchOps = 20

// batch runs op BatchOps times.
func batch(op func() error) error {
	for range BatchOps {
		if err := op(); err != nil {
			return err
		}
	}
	return nil
}

// Shapes, chosen so that one op takes about 50-300 µs on one core here: half of a 2048-wide
// layer (TinyLlama's hidden size) for decode, 16 rows of a 512x1024 one for prefill, attention
// over 256 cached positions of 8 query and 2 KV heads of 64, and 32 rows of 2048 for the
// row-wise kernels.
const (
	gemvN, gemvK       = 1024, 2048
	gemmM, gemmN, gemK = 16, 512, 1024
	attPos, attHeads   = 256, 8
	attKV, attDim      = 2, 64
	normRows, normK    = 32, 2048
)

// suite lists the benchmarks; each one's data is made by its setup, from its own seeded
// generator, so a benchmark sees the same data whichever others run.
func suite(pool *kernels.Pool) []bench {
	vec := func(rng *rand.Rand, n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	var out []bench
	add := func(name, kernel string, setup func(b *bench, rng *rand.Rand)) {
		seed := uint64(len(out))
		out = append(out, bench{name: name, kernel: kernel, setup: func(b *bench) { setup(b, rand.New(rand.NewPCG(1, seed))) }})
	}
	matmul := func(dt tensor.DType, m, n, k int) {
		shape := fmt.Sprintf("gemv %dx%d", n, k)
		if m > 1 {
			shape = fmt.Sprintf("gemm m=%d %dx%d", m, n, k)
		}
		kernel := "matmul/" + strings.ToLower(dt.String())
		add(kernel+" "+shape, kernel, func(b *bench, rng *rand.Rand) {
			w := weight(rng, dt, n, k)
			x, y := vec(rng, m*k), make([]float32, m*n)
			b.bytes = int64(len(w.Data))
			b.op = func() error { return pool.MatMul(y, x, w, m) }
		})
	}
	for _, dt := range []tensor.DType{tensor.F16, tensor.BF16, tensor.Q8_0, tensor.Q4_0, tensor.Q4_K, tensor.Q6_K} {
		matmul(dt, 1, gemvN, gemvK)
	}
	for _, dt := range []tensor.DType{tensor.F16, tensor.Q8_0, tensor.Q4_0} {
		matmul(dt, gemmM, gemmN, gemK)
	}

	add(fmt.Sprintf("attention pos=%d heads=%d/%d dim=%d", attPos, attHeads, attKV, attDim), "attention", func(b *bench, rng *rand.Rand) {
		q, k, v := vec(rng, attHeads*attDim), vec(rng, attPos*attKV*attDim), vec(rng, attPos*attKV*attDim)
		o, scores := make([]float32, attHeads*attDim), make([]float32, attPos)
		b.op = func() error {
			kernels.Attention(o, q, k, v, attPos, attHeads, attKV, attDim, scores)
			return nil
		}
	})

	rows := func(name string, f func(out, x, w []float32)) {
		add(fmt.Sprintf("%s %dx%d", name, normRows, normK), name, func(b *bench, rng *rand.Rand) {
			x, w, o := vec(rng, normRows*normK), vec(rng, normK), make([]float32, normRows*normK)
			b.op = func() error {
				for r := 0; r < normRows; r++ {
					f(o[r*normK:(r+1)*normK], x[r*normK:(r+1)*normK], w)
				}
				return nil
			}
		})
	}
	rows("rmsnorm", func(o, x, w []float32) { kernels.RMSNorm(o, x, w, 1e-5) })
	rows("softmax", func(o, x, _ []float32) { copy(o, x); kernels.Softmax(o) })
	rows("swiglu", func(o, x, w []float32) { kernels.SwiGLU(o, x, w) })

	add(fmt.Sprintf("rope %dx%dx%d", normRows, 32, attDim), "rope", func(b *bench, rng *rand.Rand) {
		r, err := kernels.NewRope(attDim, 10000, false, nil)
		if err != nil {
			panic(err) // fixed arguments: cannot fail
		}
		cs := make([]float32, attDim)
		r.Table(cs, 100)
		x := vec(rng, normRows*32*attDim)
		b.op = func() error {
			for t := 0; t < normRows; t++ {
				r.Apply(x[t*32*attDim:(t+1)*32*attDim], 32, attDim, cs)
			}
			return nil
		}
	})
	return out
}

// weight is an [n, k] weight of type dt: 64 distinct quantized random rows, repeated (quantizing
// every row would take longer than a round's timing).
func weight(rng *rand.Rand, dt tensor.DType, n, k int) *tensor.Tensor {
	rb, err := dt.RowBytes(k)
	if err != nil {
		panic(err) // fixed shapes: cannot fail
	}
	const distinct = 64
	data := make([]byte, n*rb)
	row := make([]float32, k)
	for r := 0; r < n; r++ {
		if r >= distinct {
			copy(data[r*rb:(r+1)*rb], data[(r%distinct)*rb:])
			continue
		}
		for i := range row {
			row[i] = float32(rng.NormFloat64()) * 0.05
		}
		if err := tensor.QuantizeRow(dt, row, data[r*rb:(r+1)*rb]); err != nil {
			panic(err)
		}
	}
	return &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: data}
}
