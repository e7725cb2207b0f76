// This file applies a method to a whole model described by a convert.Plan: Prepare returns
// the hook convert.Options.Quantize calls for each 2-D tensor (imatrix, gptq), and for awq
// rewrites the plan's tensors with the searched scales folded in (fold.go).
package quant

import (
	"fmt"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/quant/calib"
	"github.com/llmcloud/llmcloud/tensor"
)

// Methods are the --method names.
var Methods = []string{"rtn", "imatrix", "awq", "gptq"}

// Calibration is what the methods read: per weight name, the importance (mean x², imatrix)
// and the collected statistics (AWQ's mean |x| and samples, GPTQ's Hessian).
type Calibration struct {
	Imp   map[string][]float32
	Stats map[string]*calib.Stats
}

// Options of Prepare.
type Options struct {
	Method  string
	Type    tensor.DType // the 4-bit type AWQ's search quantizes with (q4_k_m: Q4_K)
	GPTQ    GPTQOptions
	AWQGrid int
	// Grid, when set, is the integer group grid (Hugging Face AWQ/GPTQ) AWQ's search rounds
	// onto instead of Type's blocks.
	Grid *IntGrid
	// Log receives one line per AWQ group searched (nil: none).
	Log func(msg string)
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		o.Log(fmt.Sprintf(format, a...))
	}
}

// Needs reports what calibration method needs collected: the Hessian, input samples.
func Needs(method string) (hessian bool, samples bool) {
	return method == "gptq", method == "awq"
}

// Prepare readies p for quantization by method and returns the convert.Options.Quantize hook
// (nil: round-to-nearest for every tensor, as `convert --type`).
func Prepare(p *convert.Plan, cal Calibration, o Options) (func(string, *tensor.Tensor, tensor.DType) ([]byte, error), error) {
	switch o.Method {
	case "", "rtn":
		return nil, nil
	case "imatrix":
		return func(name string, src *tensor.Tensor, dt tensor.DType) ([]byte, error) {
			imp := cal.Imp[name]
			if imp == nil {
				return nil, nil
			}
			w, rows, cols, err := matrixOf(src)
			if err != nil {
				return nil, err
			}
			if len(imp) != cols {
				return nil, fmt.Errorf("the importance matrix has %d columns, the tensor %d", len(imp), cols)
			}
			return Imatrix(dt, w, rows, cols, imp)
		}, nil
	case "gptq":
		return func(name string, src *tensor.Tensor, dt tensor.DType) ([]byte, error) {
			st := cal.Stats[name]
			if st == nil || st.H == nil {
				return nil, nil
			}
			w, rows, cols, err := matrixOf(src)
			if err != nil {
				return nil, err
			}
			if st.Cols != cols {
				return nil, fmt.Errorf("the Hessian has %d columns, the tensor %d", st.Cols, cols)
			}
			return GPTQ(dt, w, rows, cols, st.H, o.GPTQ)
		}, nil
	case "awq":
		return nil, foldAWQ(p, cal, o)
	}
	return nil, fmt.Errorf("quant: unknown method %q (rtn, imatrix, awq, gptq)", o.Method)
}

func matrixOf(t *tensor.Tensor) ([]float32, int, int, error) {
	if len(t.Shape) != 2 {
		return nil, 0, 0, fmt.Errorf("quant: %s has shape %v, want a matrix", t.Name, t.Shape)
	}
	w, err := t.Float32()
	if err != nil {
		return nil, 0, 0, err
	}
	return w, t.Shape[0], t.Shape[1], nil
}
