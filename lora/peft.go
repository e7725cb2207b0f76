// This file reads and writes PEFT's adapter directory: adapter_config.json and
// adapter_model.safetensors with tensors named
// base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in] and ...lora_B.weight
// [out, r] (the adapter name PEFT uses in memory, "default", is not in the saved names).
package lora

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// PEFT's file names.
const (
	ConfigFile  = "adapter_config.json"
	WeightsFile = "adapter_model.safetensors"
)

var peftName = regexp.MustCompile(`^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z_]+)\.lora_(A|B)(?:\.default)?\.weight$`)

// PEFTName is the saved name of layer's module mod's lora_A (ab "A") or lora_B (ab "B").
func PEFTName(layer int, mod, ab string) string {
	return "base_model.model.model.layers." + strconv.Itoa(layer) + "." + peftPath[mod] + ".lora_" + ab + ".weight"
}

// modulePath is the module's path as PEFT's patterns see it.
func modulePath(layer int, mod string) string {
	return "model.layers." + strconv.Itoa(layer) + "." + peftPath[mod]
}

// ReadPEFT reads the PEFT adapter directory dir for a base of configuration base (whose
// family says how q/k rows are laid out; B's rows are put into llmcloud's layout).
func ReadPEFT(dir string, base *model.Config) (*Adapter, error) {
	cf := filepath.Join(dir, ConfigFile)
	b, err := os.ReadFile(cf)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	c, err := parseConfig(b, cf)
	if err != nil {
		return nil, err
	}
	wf := filepath.Join(dir, WeightsFile)
	f, err := safetensors.Open(wf)
	if err != nil {
		return nil, fmt.Errorf("lora: %w", err)
	}
	defer f.Close()
	a := &Adapter{Name: filepath.Base(dir), Config: c, Pairs: map[string]*Pair{}}
	for i := range f.Tensors {
		t := &f.Tensors[i]
		m := peftName.FindStringSubmatch(t.Name)
		if m == nil {
			return nil, fmt.Errorf("lora: %s: tensor %s is not a LoRA A/B of a Llama-family linear layer", wf, t.Name)
		}
		layer, _ := strconv.Atoi(m[1])
		mod := m[3]
		if p, ok := peftPath[mod]; !ok || p != m[2]+"."+mod {
			return nil, fmt.Errorf("lora: %s: tensor %s: module %s.%s is not one llmcloud adapts", wf, t.Name, m[2], mod)
		}
		if len(t.Shape) != 2 {
			return nil, fmt.Errorf("lora: %s: tensor %s has shape %v, want 2-D", wf, t.Name, t.Shape)
		}
		vals, err := t.Float32()
		if err != nil {
			return nil, fmt.Errorf("lora: %s: %w", wf, err)
		}
		name := WeightName(layer, mod)
		p := a.Pairs[name]
		if p == nil {
			r, alpha := c.moduleParams(modulePath(layer, mod))
			p = &Pair{Layer: layer, Module: mod, Rank: r, Alpha: alpha, Scale: ScaleOf(alpha, r, c.UseRSLoRA)}
			a.Pairs[name] = p
		}
		if m[4] == "A" {
			p.SrcA, p.A, p.In = t.Name, vals, t.Shape[1]
			if t.Shape[0] != p.Rank {
				return nil, fmt.Errorf("lora: %s: tensor %s has shape %v: rank %d, %s says %d", wf, t.Name, t.Shape, t.Shape[0], ConfigFile, p.Rank)
			}
		} else {
			p.SrcB, p.B, p.Out = t.Name, vals, t.Shape[0]
			if t.Shape[1] != p.Rank {
				return nil, fmt.Errorf("lora: %s: tensor %s has shape %v: rank %d, %s says %d", wf, t.Name, t.Shape, t.Shape[1], ConfigFile, p.Rank)
			}
		}
	}
	if len(a.Pairs) == 0 {
		return nil, fmt.Errorf("lora: %s: no LoRA tensors", wf)
	}
	for name, p := range a.Pairs {
		if p.A == nil || p.B == nil {
			return nil, fmt.Errorf("lora: %s: base_model.model.%s has only one of lora_A and lora_B", wf, modulePath(p.Layer, p.Module))
		}
		if err := p.check(); err != nil {
			return nil, err
		}
		if p.B, err = layoutB(base, name, p, false); err != nil {
			return nil, fmt.Errorf("lora: %s: %s: %w", wf, p.SrcB, err)
		}
	}
	return a, nil
}

// layoutB returns p's B rows in llmcloud's layout (toHF false) or HF's (toHF true), as the
// base's family transforms the weight name it adapts (q/k rows of llama/mistral).
func layoutB(base *model.Config, name string, p *Pair, toHF bool) ([]float32, error) {
	fam := base.Family()
	if fam == nil {
		return nil, fmt.Errorf("unsupported architecture %q", base.Arch)
	}
	var tf model.TensorFunc
	if toHF && fam.ToHFTensor != nil {
		tf = fam.ToHFTensor(base, name)
	} else if !toHF && fam.FromHFTensor != nil {
		tf = fam.FromHFTensor(base, name)
	}
	if tf == nil {
		return p.B, nil
	}
	t, err := tf(f32Tensor(name, []int{p.Out, p.Rank}, p.B))
	if err != nil {
		return nil, err
	}
	return t.Float32()
}

// WritePEFT writes a as a PEFT adapter directory for a base of configuration base (B's rows
// put back into HF's layout), tensors as F32.
func WritePEFT(dir string, a *Adapter, base *model.Config) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	c := a.Config
	c.PeftType = "LORA"
	if c.TaskType == "" {
		c.TaskType = "CAUSAL_LM"
	}
	if c.Bias == "" {
		c.Bias = "none"
	}
	c.InferenceMode = true
	mods := map[string]bool{}
	var ts []tensor.Tensor
	for _, name := range a.Names() {
		p := a.Pairs[name]
		if err := p.check(); err != nil {
			return err
		}
		mods[p.Module] = true
		path := modulePath(p.Layer, p.Module)
		if p.Rank != c.R {
			if c.RankPattern == nil {
				c.RankPattern = map[string]int{}
			}
			c.RankPattern[path] = p.Rank
		}
		if p.Alpha != 0 && p.Alpha != c.LoraAlpha {
			if c.AlphaPattern == nil {
				c.AlphaPattern = map[string]float64{}
			}
			c.AlphaPattern[path] = p.Alpha
		}
		b, err := layoutB(base, name, p, true)
		if err != nil {
			return fmt.Errorf("lora: %s: %w", name, err)
		}
		ts = append(ts, *f32Tensor(PEFTName(p.Layer, p.Module, "A"), []int{p.Rank, p.In}, p.A),
			*f32Tensor(PEFTName(p.Layer, p.Module, "B"), []int{p.Out, p.Rank}, b))
	}
	if c.TargetModules.List == nil && c.TargetModules.Pattern == "" {
		for _, m := range moduleOrder {
			if mods[m] {
				c.TargetModules.List = append(c.TargetModules.List, m)
			}
		}
	}
	if c.RankPattern == nil {
		c.RankPattern = map[string]int{}
	}
	if c.AlphaPattern == nil {
		c.AlphaPattern = map[string]float64{}
	}
	js, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	js = append(js, '\n')
	if err := atomicfile.Write(filepath.Join(dir, ConfigFile), func(w io.Writer) error { _, err := w.Write(js); return err }); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	if err := safetensors.WriteFile(filepath.Join(dir, WeightsFile), ts, map[string]string{"format": "pt"}); err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	return nil
}

// f32Tensor wraps vals as an F32 tensor of the shape.
func f32Tensor(name string, shape []int, vals []float32) *tensor.Tensor {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return &tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
}
