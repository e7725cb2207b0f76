// Sampling defaults: a model's own (generation_config.json, or GGUF general.sampling.*
// metadata as llama.cpp's converter writes it from that file) and the fallback for a model
// that has none.
package loader

import (
	"math"
	"strconv"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/sample"
)

// The sampling settings a model that sets none is run with (llama.cpp's defaults). Its other
// settings are off: no top-k, no min-p, no repetition penalty.
const (
	FallbackTemperature = 0.8
	FallbackTopP        = 0.95
)

// The GGUF keys of a model's recommended sampling settings (llama.cpp's general.sampling.*).
const (
	KeySamplingTemp          = "general.sampling.temp"
	KeySamplingTopP          = "general.sampling.top_p"
	KeySamplingTopK          = "general.sampling.top_k"
	KeySamplingMinP          = "general.sampling.min_p"
	KeySamplingPenaltyRepeat = "general.sampling.penalty_repeat"
)

// Params is the sampling settings d sets, with FallbackTemperature and FallbackTopP where d
// has no temperature or top-p and the rest off.
func (d Defaults) Params() sample.Params {
	p := sample.Params{Temperature: FallbackTemperature, TopP: FallbackTopP, RepetitionPenalty: 1}
	if d.Temperature != nil {
		p.Temperature = *d.Temperature
	}
	if d.TopP != nil {
		p.TopP = *d.TopP
	}
	if d.TopK != nil {
		p.TopK = *d.TopK
	}
	if d.MinP != nil {
		p.MinP = *d.MinP
	}
	if d.RepetitionPenalty != nil {
		p.RepetitionPenalty = *d.RepetitionPenalty
	}
	return p
}

// ggufDefaults reads the general.sampling.* keys of f. Float32 values are read back as the
// shortest decimal that rounds to them (0.95, not 0.949999988).
func ggufDefaults(f *gguf.File) Defaults {
	var d Defaults
	float := func(key string) *float64 {
		v, ok := f.Float(key)
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		if g, ok := f.Get(key); ok && g.Type == gguf.TypeFloat32 {
			v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', -1, 32), 64)
		}
		return &v
	}
	d.Temperature = float(KeySamplingTemp)
	d.TopP = float(KeySamplingTopP)
	d.MinP = float(KeySamplingMinP)
	d.RepetitionPenalty = float(KeySamplingPenaltyRepeat)
	if k, ok := f.Int(KeySamplingTopK); ok && k >= 0 {
		n := int(k)
		d.TopK = &n
	}
	return d
}

// GGUFMeta is the general.sampling.* keys of d, as llama.cpp writes them (float32, top-k
// int32), for a GGUF file.
func (d Defaults) GGUFMeta() []gguf.KV {
	var kv []gguf.KV
	f32 := func(key string, v *float64) {
		if v != nil {
			kv = append(kv, gguf.KV{Key: key, Value: gguf.F32(float32(*v))})
		}
	}
	f32(KeySamplingTemp, d.Temperature)
	if d.TopK != nil {
		kv = append(kv, gguf.KV{Key: KeySamplingTopK, Value: gguf.I32(int32(*d.TopK))})
	}
	f32(KeySamplingTopP, d.TopP)
	f32(KeySamplingMinP, d.MinP)
	f32(KeySamplingPenaltyRepeat, d.RepetitionPenalty)
	return kv
}
