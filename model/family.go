// This file implements the family registry: one Family value per architecture holds
// everything llmcloud knows about it (its names in GGUF and Hugging Face files, how their
// metadata map onto Config, its tensors and their Hugging Face names, and its graph builder).
// Each family registers itself from its own file (family_llama.go, family_qwen2.go,
// family_qwen3.go); every other place asks FamilyOf instead of switching on arch strings.
// docs/adding-a-family.md shows how to add one.
package model

import (
	"fmt"
	"sort"
	"sync"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/hfdir"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/tensor"
)

// TensorFunc transforms one tensor (a row permutation, say) into a new one.
type TensorFunc func(*tensor.Tensor) (*tensor.Tensor, error)

// Family is one architecture. Arch, Shapes, Build and NormEps/RopeTheta are required; the
// other hooks may be nil (nothing to do).
type Family struct {
	Arch           string // GGUF general.architecture and Config.Arch ("llama")
	HFModelType    string // config.json model_type ("llama"); "" = no Hugging Face form
	HFArchitecture string // config.json architectures[0] written for it ("LlamaForCausalLM")

	// Usual values of RopeTheta and NormEps, taken where a maker of new models (synth)
	// leaves them zero.
	RopeTheta float64
	NormEps   float32

	// Fix sets the fields of c the architecture implies (qwen2: NeoX RoPE and q/k/v biases).
	// Every config reader calls it after the shared fields, before the hooks below; so does
	// synth.
	Fix func(c *Config)
	// FromGGUF completes c from a GGUF file beyond the hyper-parameter keys every llama.cpp
	// architecture shares (<arch>.embedding_length, ...: see ConfigFromGGUF), e.g. flags
	// read from the presence of tensors.
	FromGGUF func(f *gguf.File, c *Config) error
	// ToGGUF gives the family's metadata keys beyond the shared ones, for writing a GGUF file
	// (convert.WriteGGUF); FromGGUF reads them back.
	ToGGUF func(c *Config) []gguf.KV
	// FromHF completes c from config.json beyond the fields every family shares (see
	// ConfigFromHF); ToHF writes those family fields back into hc (see convert.WriteHF).
	FromHF func(hc *hfdir.Config, c *Config) error
	ToHF   func(c *Config, hc *hfdir.Config)

	// Shapes gives every tensor c requires, by GGUF name, with its row-major shape
	// (rope_freqs.weight, which is optional, excluded).
	Shapes func(c *Config) map[string][]int
	// Build writes c's network as a graph (see BuildGraph for the inputs, output and
	// arguments every builder honours).
	Build func(c *Config, dtype func(name string) tensor.DType, withFreqs bool) (*graph.Graph, error)

	// Names maps Hugging Face tensor names to GGUF names and back.
	Names NameMap
	// FromHFTensor gives the transform the tensor of GGUF name name needs when read from a
	// Hugging Face checkpoint (nil: none); ToHFTensor the inverse, for writing one.
	FromHFTensor func(c *Config, name string) TensorFunc
	ToHFTensor   func(c *Config, name string) TensorFunc

	// ConfigTensors gives the tensors c itself determines, by GGUF name (phi3: the LongRoPE
	// factors, numbers in config.json and tensors in GGUF): LoadHF adds them to the
	// checkpoint's, WriteHF leaves them to config.json, synth writes them instead of random
	// values. Nil: none.
	ConfigTensors func(c *Config) []*tensor.Tensor

	// HFInterleaved lists the GGUF tensor pairs a Hugging Face checkpoint holds as one tensor,
	// by the GGUF-side block suffix the NameMap gives that tensor: along its axis 1 (after
	// FromHFTensor) the pair's slices alternate, the first's in the even places (gpt-oss's
	// gate_up_proj: gate, up). LoadHF splits it; convert.WriteHF joins the pair, then applies
	// ToHFTensor to the joined tensor. Nil: none.
	HFInterleaved map[string][2]string
	// HFShapes gives the shapes of a Hugging Face checkpoint's tensors under the NameMap's
	// GGUF-side names where they differ from Shapes (fused, transposed); nil: Shapes. The
	// loader checks directories, and convert.WriteHF shapes its tensors, by it.
	HFShapes func(c *Config) map[string][]int
	// HFMerge combines tensors a Hugging Face checkpoint stores in parts, under the NameMap's
	// names, before FromHFTensor (gpt-oss: MXFP4 _blocks and _scales into one MXFP4 tensor).
	// Nil: none.
	HFMerge func(c *Config, ws map[string]*tensor.Tensor) error

	// Llama2C says a llama2.c checkpoint can hold the network (its layout is llama's).
	Llama2C bool

	// Experts says the builder runs mixture-of-experts feed-forwards (Config.Experts > 0,
	// graph op moe); Config.Validate refuses experts for a family without.
	Experts bool
	// ExpertsOnly says the architecture is always a mixture of experts (qwen2moe): a
	// configuration without experts is refused.
	ExpertsOnly bool
	// HFMoEModelType and HFMoEArchitecture are config.json's model_type and architectures[0]
	// of the family's mixture-of-experts form when it has its own (llama: mixtral,
	// MixtralForCausalLM): ConfigFromHF reads that model_type as this family, and
	// convert.WriteHF writes them for a configuration with experts.
	HFMoEModelType, HFMoEArchitecture string

	// HFAltModelType is another config.json model_type read as this family (deepseek2:
	// deepseek_v3); convert.WriteHF writes it and HFAltArchitecture when HFAltWhen(c) holds.
	HFAltModelType, HFAltArchitecture string
	HFAltWhen                         func(c *Config) bool
}

// HFForm returns the config.json model_type and architectures[0] c is written under: the
// family's mixture-of-experts form when c has experts and the family has one.
func (f *Family) HFForm(c *Config) (modelType, architecture string) {
	if f.HFAltWhen != nil && f.HFAltWhen(c) {
		return f.HFAltModelType, f.HFAltArchitecture
	}
	if c.Experts > 0 && f.HFMoEModelType != "" {
		return f.HFMoEModelType, f.HFMoEArchitecture
	}
	return f.HFModelType, f.HFArchitecture
}

var (
	famMu    sync.RWMutex
	families = map[string]*Family{} // by Arch
	byHF     = map[string]*Family{} // by HFModelType
)

// Register adds f to the registry. It panics when f lacks a required field or its Arch or
// HFModelType is taken: registration happens in init functions, where a mistake must stop
// the program.
func Register(f *Family) {
	famMu.Lock()
	defer famMu.Unlock()
	switch {
	case f.Arch == "":
		panic("model: Register: family without Arch")
	case f.Shapes == nil || f.Build == nil:
		panic(fmt.Sprintf("model: Register: family %s lacks Shapes or Build", f.Arch))
	case !(f.RopeTheta > 0) || !(f.NormEps > 0):
		panic(fmt.Sprintf("model: Register: family %s lacks its usual RopeTheta or NormEps", f.Arch))
	case families[f.Arch] != nil:
		panic(fmt.Sprintf("model: Register: architecture %s registered twice", f.Arch))
	case f.HFModelType != "" && byHF[f.HFModelType] != nil:
		panic(fmt.Sprintf("model: Register: model_type %s registered twice", f.HFModelType))
	case f.HFMoEModelType != "" && (byHF[f.HFMoEModelType] != nil || !f.Experts || f.HFMoEModelType == f.HFModelType):
		panic(fmt.Sprintf("model: Register: model_type %s registered twice or without Experts", f.HFMoEModelType))
	}
	if f.HFAltModelType != "" {
		if byHF[f.HFAltModelType] != nil {
			panic(fmt.Sprintf("model: Register: model_type %s registered twice", f.HFAltModelType))
		}
		byHF[f.HFAltModelType] = f
	}
	families[f.Arch] = f
	if f.HFModelType != "" {
		byHF[f.HFModelType] = f
	}
	if f.HFMoEModelType != "" {
		byHF[f.HFMoEModelType] = f
	}
}

// FamilyOf returns the family of a GGUF general.architecture (Config.Arch), nil if none.
func FamilyOf(arch string) *Family {
	famMu.RLock()
	defer famMu.RUnlock()
	return families[arch]
}

// FamilyOfHF returns the family of a config.json model_type, nil if none.
func FamilyOfHF(modelType string) *Family {
	famMu.RLock()
	defer famMu.RUnlock()
	return byHF[modelType]
}

// Families lists the registered families by Arch.
func Families() []*Family {
	famMu.RLock()
	defer famMu.RUnlock()
	out := make([]*Family, 0, len(families))
	for _, f := range families {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Arch < out[j].Arch })
	return out
}

// Family returns c's family, nil if c.Arch is not registered.
func (c *Config) Family() *Family { return FamilyOf(c.Arch) }
