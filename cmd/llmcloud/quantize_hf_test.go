// Tests of `quantize --format awq|gptq`: each method's checkpoint loads and gives the logits of
// the float model holding its dequantized weights; on the default model with Brown text the
// calibrated methods are closer to the float model (mean KL divergence on text they were not
// calibrated on) than round to nearest on the same grid; bad flag combinations are errors.
package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
)

func TestQuantizeHFCalibrated(t *testing.T) {
	val, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Calibrate on the first 40 KB, evaluate on the rest: no overlap.
	calText := filepath.Join(dir, "calib.txt")
	if err := os.WriteFile(calText, val[:40_000], 0o644); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join("..", "..", "defaultmodel", "default.gguf")
	base, err := loader.Open(in, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	evalIDs := base.Tok.Encode(string(val[40_000:]), true, false)
	prompt := evalIDs[:48]
	prompt[0] = base.Tok.BOS()
	kld := map[string]float64{}
	for _, c := range []struct{ name, format, method string }{
		{"awq-rtn", "awq", "rtn"}, {"awq-awq", "awq", "awq"}, {"awq-gptq", "awq", "gptq"},
		{"gptq-gptq-act", "gptq", "gptq"},
	} {
		out := filepath.Join(dir, c.name)
		args := []string{"quantize", in, out, "--format", c.format, "--method", c.method, "--calib-tokens", "2048", "--ctx", "128"}
		if c.method != "rtn" {
			args = append(args, "--calibration", calText)
		}
		if strings.HasSuffix(c.name, "-act") {
			args = append(args, "--desc-act")
		}
		o, errs := run(t, args...)
		if !strings.Contains(o, "28 linears quantized by "+c.method) {
			t.Fatalf("%s: %s %s", c.name, o, errs)
		}
		deq := filepath.Join(dir, c.name+"-deq.gguf")
		run(t, "convert", out, deq, "--type", "f32")
		q, err := loader.Open(out, loader.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		d, err := loader.Open(deq, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		lq, err := q.Model.Forward(q.Model.NewCache(len(prompt)), prompt, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		ld, err := d.Model.Forward(d.Model.NewCache(len(prompt)), prompt, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		var md, ml float64
		for i := range lq {
			md = max(md, math.Abs(float64(lq[i]-ld[i])))
			ml = max(ml, math.Abs(float64(ld[i])))
		}
		if md > 0.015*ml {
			t.Errorf("%s: logits differ from the dequantized model's by %.4g (max |logit| %.4g)", c.name, md, ml)
		}
		r, err := eval.KLDivergence(base.Model, q.Model, evalIDs, 128, 12)
		if err != nil {
			t.Fatal(err)
		}
		kld[c.name] = r.KLD
		t.Logf("%s: logits max |diff| %.4g of %.4g; KLD vs the original %.5f, PPL %.2f (original %.2f)", c.name, md, ml, r.KLD, r.PPL, r.BasePPL)
		q.Close()
		d.Close()
	}
	for name, limit := range map[string]float64{"awq-awq": 0.85, "awq-gptq": 0.4, "gptq-gptq-act": 0.4} {
		if kld[name] > limit*kld["awq-rtn"] {
			t.Errorf("%s: KL divergence %.5f is not below %.2f x round to nearest's %.5f", name, kld[name], limit, kld["awq-rtn"])
		}
	}
}

func TestQuantizeHFErrors(t *testing.T) {
	dir, in, text := quantizeFixture(t)
	out := filepath.Join(dir, "o")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "awq", "--method", "imatrix", "--calibration", text}, "--method imatrix"},
		{[]string{"--format", "awq", "--method", "gptq", "--desc-act", "--calibration", text}, "--desc-act"},
		{[]string{"--format", "gptq", "--method", "rtn", "--desc-act"}, "--desc-act"},
		{[]string{"--format", "awq", "--bits", "8"}, "bits"},
		{[]string{"--format", "gptq", "--type", "q4_0"}, "--type"},
		{[]string{"--format", "awq", "--method", "awq"}, "needs --calibration"},
		{[]string{"--format", "gptq", "--method", "gptq", "--calibration", text, "--ctx", "64", "--calib-tokens", "64"}, "needs at least 256"},
		{[]string{"--format", "safetensors"}, "--format"},
		{[]string{"--type", "q4_0", "--bits", "8"}, "--bits"},
	} {
		_, errs, code := runCmd(t, append([]string{"quantize", in, out}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
	// quantize-hf is quantize with --format awq by default.
	if o, errs := run(t, "quantize-hf", in, filepath.Join(dir, "alias"), "--method", "rtn"); !strings.Contains(o, "Hugging Face awq") {
		t.Errorf("quantize-hf: %s %s", o, errs)
	}
}
