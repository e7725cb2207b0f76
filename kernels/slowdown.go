// This file implements an injected slowdown for testing performance-regression checks
// (`llmcloud bench regress`, package regress): a binary linked with
//
//	go build -ldflags "-X github.com/llmcloud/llmcloud/kernels.injectSlowdown=matmul/q4_0=0.10" ./cmd/llmcloud
//
// makes every call of the named kernel about 10% slower, at whatever speed the host gives it at
// that moment, with the same result:
//
//   - matmul/DTYPE (lower-case: matmul/q4_0, matmul/f16, ...) and attention time the call and
//     then spin for that fraction of its time. (Running the kernel on 10% of the weight's rows
//     as well was tried: a call's fixed costs, such as quantizing the activations and handing
//     the rows to the pool, are paid again, and a Q4_0 GEMV of 1024 rows came out 21% slower.)
//   - rmsnorm first normalizes that fraction of the row's elements (rounded up) into the start
//     of the output, which the real call then overwrites: proportionally more of its own work
//     (timing a 1 µs call would add more than the slowdown).
//
// The value is a comma-separated list of KERNEL=FRACTION. Unset (the default), each hooked
// kernel tests one package-level bool and nothing else.
package kernels

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmcloud/llmcloud/tensor"
)

// injectSlowdown is set only by the linker (-X); see the file comment.
var injectSlowdown string

// slowOn reports whether any slowdown is injected: the only cost hooked kernels pay when none is.
var slowOn bool

// The hooked kernels' slowdown fractions, 0 for none: resolved once at init so that a kernel
// without one pays only a test of a number even when another kernel has one.
var (
	slowMatMul    [256]float64 // by weight DType
	slowAttention float64
	slowRMSNorm   float64
)

// slowdownErr is the parse error of injectSlowdown, if any (the slowdown is then off).
var slowdownErr error

func init() {
	if injectSlowdown == "" {
		return
	}
	m, err := parseSlowdown(injectSlowdown)
	if err != nil {
		slowdownErr = err
		return
	}
	setSlowdowns(m)
}

// setSlowdowns installs m (nil to remove every slowdown).
func setSlowdowns(m map[string]float64) {
	slowMatMul, slowAttention, slowRMSNorm = [256]float64{}, m["attention"], m["rmsnorm"]
	for dt := tensor.DType(0); dt.Valid(); dt++ {
		slowMatMul[dt] = m[matmulKernel(dt.String())]
	}
	slowOn = len(m) > 0
}

// slowKernels lists the names a slowdown can be injected into.
func slowKernels() []string {
	names := []string{"attention", "rmsnorm"}
	for dt := tensor.DType(0); dt.Valid(); dt++ {
		names = append(names, matmulKernel(dt.String()))
	}
	return names
}

// parseSlowdown reads KERNEL=FRACTION[,KERNEL=FRACTION...].
func parseSlowdown(s string) (map[string]float64, error) {
	m := map[string]float64{}
	for _, item := range strings.Split(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("kernels.injectSlowdown %q: item %q is not KERNEL=FRACTION", s, item)
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil || !(f > 0 && f <= 1) {
			return nil, fmt.Errorf("kernels.injectSlowdown %q: fraction %q of %s is not a number in (0, 1]", s, val, name)
		}
		if !slices.Contains(slowKernels(), name) {
			return nil, fmt.Errorf("kernels.injectSlowdown %q: no kernel %q (have %s)", s, name, strings.Join(slowKernels(), ", "))
		}
		m[name] = f
	}
	return m, nil
}

// InjectedSlowdown returns the slowdown this binary was linked with ("" for none) and the
// error that disabled it when the value did not parse.
func InjectedSlowdown() (string, error) { return injectSlowdown, slowdownErr }

// part is the injected extra share of n items: ceil(frac*n), at most n.
func part(frac float64, n int) int { return min(n, int(math.Ceil(frac*float64(n)))) }

// spinAfter busy-waits for frac times the time since t0: a slowdown proportional to the call
// just made, which keeps the CPU as busy as more work would.
func spinAfter(t0 time.Time, frac float64) {
	d := time.Duration(float64(time.Since(t0)) * frac)
	for start := time.Now(); time.Since(start) < d; {
	}
}

// matmulKernel is the slowdown name of MatMul with weights of this type.
func matmulKernel(w string) string { return "matmul/" + strings.ToLower(w) }
