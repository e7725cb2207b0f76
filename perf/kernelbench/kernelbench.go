// Package kernelbench is the fixed kernel suite of `llmcloud bench kernels` and of
// `llmcloud bench regress --suite kernels`: the core kernels (matmul for each weight dtype in
// the decode and prefill shapes, attention, rmsnorm, softmax, swiglu, rope) on fixed shapes and
// fixed pseudo-random data, each timed op by op for a fixed count of ops. One Run is one
// round; regress runs many rounds, alternating two binaries, and does the statistics.
package kernelbench

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/internal/mmap"
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
	release      func() error // frees huge-page memory the setup mapped, or nil
}

// Options are a run's settings.
type Options struct {
	Threads int            // matmul pool workers
	Ops     int            // ops timed one by one per benchmark, after WarmupOps untimed ones
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
	if o.Threads < 1 || o.Ops < 1 {
		return nil, fmt.Errorf("kernel suite: threads %d and ops %d must be positive", o.Threads, o.Ops)
	}
	inj, err := kernels.InjectedSlowdown()
	if err != nil {
		return nil, err
	}
	res := &regress.SuiteResult{Suite: "kernels", Threads: o.Threads, Ops: o.Ops, Injected: inj}
	pool := kernels.NewPool(o.Threads)
	for _, b := range suite(pool) {
		if o.Filter != nil && !o.Filter.MatchString(b.name) {
			continue
		}
		b.setup(&b)
		if b.release != nil {
			defer b.release()
		}
		for range WarmupOps { // caches, the pool's goroutines, lazy packs
			if err := b.op(); err != nil {
				return nil, fmt.Errorf("%s: %w", b.name, err)
			}
		}
		times := make([]float64, o.Ops)
		for i := range times {
			t := time.Now()
			if err := b.op(); err != nil {
				return nil, fmt.Errorf("%s: %w", b.name, err)
			}
			times[i] = float64(time.Since(t).Nanoseconds())
		}
		slices.Sort(times)
		res.Benchmarks = append(res.Benchmarks, regress.Benchmark{Name: b.name, Kernel: b.kernel,
			NsPerOp: times[len(times)/10], Ops: o.Ops, BytesPerOp: b.bytes})
	}
	if len(res.Benchmarks) == 0 {
		return nil, fmt.Errorf("kernel suite: no benchmark matches %v (have: %v)", o.Filter, Names())
	}
	return res, nil
}

// WarmupOps is how many untimed ops run before the timed ones.
const WarmupOps = 3

// A round's figure is the 10th percentile of its single-op times: interference from the host
// (preemption, another job's cache and memory traffic) only adds time, and at a load average
// of 8 on this 2-CPU host the mean over a round moved by 2x between rounds and the median by
// 40%; the ops the host disturbed least are the stable part, and the 10th percentile rather
// than the minimum does not hang on the single luckiest one. An op lasts 20-300 µs, well
// under a scheduler time slice, so most ops run undisturbed even on a loaded host. The count
// of ops is fixed (Options.Ops), so every round's percentile is taken over as many.

// Shapes, chosen so that one op takes about 20-300 µs on one core here: half of a 2048-wide
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
			w, release := weight(rng, dt, n, k)
			b.release = release
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
// every row would take longer than a round's timing). Its data is on 2 MiB huge pages when the
// host gives them, as a model file's mapped weights are (internal/mmap), so that where its
// pages land in the caches varies less from one process to the next; release unmaps it.
func weight(rng *rand.Rand, dt tensor.DType, n, k int) (*tensor.Tensor, func() error) {
	rb, err := dt.RowBytes(k)
	if err != nil {
		panic(err) // fixed shapes: cannot fail
	}
	const distinct = 64
	var data []byte
	release := func() error { return nil }
	if mem, rel, err := mmap.AnonHuge(n * rb); err == nil {
		data, release = mem[:n*rb], rel
	} else {
		data = make([]byte, n*rb)
	}
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
	return &tensor.Tensor{Name: "w", Type: dt, Shape: []int{n, k}, Data: data}, release
}
