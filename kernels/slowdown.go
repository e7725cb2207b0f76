// This file implements an injected slowdown for testing performance-regression checks
// (`llmcloud bench regress`, package regress): a binary linked with
//
//	go build -ldflags "-X github.com/llmcloud/llmcloud/kernels.injectSlowdown=matmul/q4_0=0.10" ./cmd/llmcloud
//
// runs the named kernel a second time on a fraction of its calls (here every tenth), so it
// does 10% more of exactly its own work, at whatever speed the host gives it at that moment.
// The value is a comma-separated list of KERNEL=FRACTION; kernel names are matmul/DTYPE
// (lower-case, e.g. matmul/q4_0, matmul/f16), attention and rmsnorm. Unset (the default), each
// hooked kernel tests one package-level bool and nothing else.
package kernels

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/llmcloud/llmcloud/tensor"
)

// injectSlowdown is set only by the linker (-X); see the file comment.
var injectSlowdown string

// slowOn reports whether any slowdown is injected: the only cost hooked kernels pay when none is.
var slowOn bool

// The hooked kernels' slowdowns, nil for none: resolved once at init so that a kernel without
// one pays only a nil test even when another kernel has one.
var (
	slowMatMul    [256]*slowdown // by weight DType
	slowAttention *slowdown
	slowRMSNorm   *slowdown
)

// slowdownErr is the parse error of injectSlowdown, if any (the slowdown is then off).
var slowdownErr error

// slowdown counts a kernel's calls: call c repeats when floor(c*frac) > floor((c-1)*frac), so
// the repeats are spread evenly and exactly frac of the calls repeat over any long run.
type slowdown struct {
	frac  float64
	calls atomic.Int64
}

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
func setSlowdowns(m map[string]*slowdown) {
	slowMatMul, slowAttention, slowRMSNorm = [256]*slowdown{}, m["attention"], m["rmsnorm"]
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
func parseSlowdown(s string) (map[string]*slowdown, error) {
	m := map[string]*slowdown{}
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
		m[name] = &slowdown{frac: f}
	}
	return m, nil
}

// InjectedSlowdown returns the slowdown this binary was linked with ("" for none) and the
// error that disabled it when the value did not parse.
func InjectedSlowdown() (string, error) { return injectSlowdown, slowdownErr }

// repeat reports whether this call should run twice; false for a nil s (no slowdown).
func (s *slowdown) repeat() bool {
	if s == nil {
		return false
	}
	c := float64(s.calls.Add(1))
	return int64(c*s.frac) > int64((c-1)*s.frac)
}

// matmulKernel is the slowdown name of MatMul with weights of this type.
func matmulKernel(w string) string { return "matmul/" + strings.ToLower(w) }
