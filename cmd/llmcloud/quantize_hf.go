// This file is `llmcloud quantize IN OUTDIR --format awq|gptq`: any model llmcloud opens,
// written as a Hugging Face AWQ or GPTQ checkpoint (config.json with quantization_config,
// safetensors with qweight/qzeros/scales[/g_idx], the tokenizer files as convert writes them).
// The model is first written as a float Hugging Face directory (a temporary directory beside
// OUTDIR, removed afterwards), then each decoder linear is quantized onto the asymmetric
// per-group integer grid and packed (format/hfquant): --method rtn rounds to nearest, gptq
// runs GPTQ with the calibration Hessian (optionally act-order, --desc-act), awq searches
// per-input-channel scales, folds them into the preceding norm or linear (before the float
// directory is written), then rounds. `quantize-hf` is the same command with --format awq as
// its default.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/hfquant"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/quant"
	"github.com/llmcloud/llmcloud/tensor"
)

func init() {
	register("quantize-hf", "quantize --format awq|gptq (default awq): a Hugging Face AWQ or GPTQ checkpoint", runQuantizeHF)
}

// runQuantizeHF is quantize with --format awq unless the arguments say otherwise.
func runQuantizeHF(args []string, stdout, stderr io.Writer) error {
	return runQuantize(append([]string{"--format", "awq"}, args...), stdout, stderr)
}

type hfOptions struct {
	in, out string
	method  string
	gptq    quant.GPTQIntOptions
}

// quantizeHF writes the plan p of the model b (statistics cal) as the checkpoint c at o.out.
func quantizeHF(b *loader.Bundle, p *convert.Plan, cal quant.Calibration, c *hfquant.Config, o hfOptions, stdout, stderr io.Writer) error {
	minZero := 0
	if c.V1Zeros() {
		minZero = 1
	}
	grid := quant.IntGrid{Bits: c.Bits, Group: c.GroupSize, MinZero: minZero}
	if o.method == "awq" {
		if _, err := quant.Prepare(p, cal, quant.Options{Method: "awq", Type: tensor.Q4_0, Grid: &grid,
			Log: func(msg string) { fmt.Fprintln(stderr, msg) }}); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Clean(o.out)), 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(o.out)), ".quantize-hf-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := convert.WriteHF(tmp, p, convert.Options{}); err != nil { // quantized inputs dequantize to F32: expected, no warning
		return err
	}
	n2 := 0
	for _, t := range p.Tensors {
		if len(t.Shape) == 2 && strings.HasPrefix(t.Name, "blk.") {
			n2++
		}
	}
	bar := progressbar.NewOptions(n2, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("quantize "+o.method),
		progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetWidth(30))
	q := func(name string, w []float32, rows, cols int) (*hfquant.Linear, error) {
		bar.Add(1)
		if o.method != "gptq" {
			return quant.RTNInt(w, rows, cols, grid)
		}
		gname, err := model.HFName(&b.Model.Config, name)
		if err != nil {
			return nil, err
		}
		st := cal.Stats[gname]
		if st == nil || st.H == nil {
			fmt.Fprintf(stderr, "warning: %s (%s): no calibration Hessian, rounded to nearest\n", name, gname)
			return quant.RTNInt(w, rows, cols, grid)
		}
		if st.Cols != cols {
			return nil, fmt.Errorf("the Hessian of %s has %d columns, the tensor %d", gname, st.Cols, cols)
		}
		return quant.GPTQInt(w, rows, cols, st.H, grid, o.gptq)
	}
	n, err := hfquant.WriteDir(tmp, o.out, c, q)
	if err != nil {
		return err
	}
	bar.Finish()
	fmt.Fprintln(stderr)
	how := o.method
	if o.gptq.ActOrder {
		how += " (act-order)"
	}
	fmt.Fprintf(stdout, "wrote %s (Hugging Face %s, %d-bit, group %d, %d linears quantized by %s) from %s (%s)\n",
		o.out, c.Method, c.Bits, c.GroupSize, n, how, o.in, b.Format)
	return nil
}

// toJSONNumbers turns the ints of a quantization_config into what a decoded config.json holds.
func toJSONNumbers(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if i, ok := v.(int); ok {
			out[k] = float64(i)
			continue
		}
		out[k] = v
	}
	return out
}

// hfQuantLayout describes an AWQ/GPTQ config.json's quantization_config for inspect: the
// method, bits, group size, desc_act, sym, the packing, and how llmcloud runs it ("" for
// other checkpoints).
func hfQuantLayout(dir string, raw map[string]any) string {
	c, ok, err := hfquant.ForDir(dir, raw)
	switch {
	case err != nil:
		return "invalid: " + err.Error()
	case !ok:
		return ""
	}
	run := "Q4_0Z (Q4_0 rows with d = scale, plus an f32 correction per row and group)"
	if c.Bits == 8 {
		run = "Q8_0Z (Q8_0 rows with d = scale, plus an f32 correction per row and group)"
	}
	if c.DescAct {
		run += ", input columns sorted by g_idx group"
	}
	return c.Layout() + "; loaded losslessly as " + run
}
