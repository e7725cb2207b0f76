// The profile file: what was measured (model, CPU, threads, engine configuration), the fitted
// step-time model and its error. A simulation checks that its profile matches what it is told
// to simulate (CheckModel, CheckCPU).

package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/engine"
)

// ProfileVersion is the profile file's format version.
const ProfileVersion = 1

// ModelID names the model a profile was measured on.
type ModelID struct {
	File   string `json:"file"` // base name
	Size   int64  `json:"size_bytes"`
	SHA256 string `json:"sha256,omitempty"` // of the whole file (omitted for files over 1 GiB)
	Arch   string `json:"arch"`
	DType  string `json:"dtype"` // the weights' dominant type (GGUF general.file_type) or the format
	KV     string `json:"kv_cache_dtype"`
}

// Same reports whether two ids name the same model: the hash when both have one, else the
// size, arch and dtype.
func (a ModelID) Same(b ModelID) bool {
	if a.SHA256 != "" && b.SHA256 != "" {
		return a.SHA256 == b.SHA256 && a.KV == b.KV
	}
	return a.Size == b.Size && a.Arch == b.Arch && a.DType == b.DType && a.KV == b.KV
}

func (a ModelID) String() string {
	h := a.SHA256
	if len(h) > 12 {
		h = h[:12]
	}
	return fmt.Sprintf("%s (%d bytes, sha256 %s, %s, %s, KV %s)", a.File, a.Size, h, a.Arch, a.DType, a.KV)
}

// CPU names the processor a profile was measured on.
type CPU struct {
	Model string   `json:"model"`
	Flags []string `json:"flags"` // the SIMD flags the kernels use (cpuFlags)
	CPUs  int      `json:"cpus"`
	Arch  string   `json:"goarch"`
}

// simdFlags are the /proc/cpuinfo flags that change which kernels run.
var simdFlags = []string{"avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
	"avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16", "avx_vnni", "asimd", "sve"}

// ThisCPU reads the running machine's CPU model and SIMD flags (Linux; elsewhere the model is
// "unknown" and the flags empty).
func ThisCPU() CPU {
	c := CPU{Model: "unknown", CPUs: runtime.NumCPU(), Arch: runtime.GOARCH}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return c
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if c.Model == "unknown" {
				c.Model = strings.TrimSpace(v)
			}
		case "flags", "Features":
			if len(have) == 0 {
				for _, f := range strings.Fields(v) {
					have[f] = true
				}
			}
		}
	}
	for _, f := range simdFlags {
		if have[f] {
			c.Flags = append(c.Flags, f)
		}
	}
	return c
}

// Same reports whether two CPUs run the same kernels at about the same speed: same model
// name, architecture and SIMD flags.
func (a CPU) Same(b CPU) bool {
	return a.Model == b.Model && a.Arch == b.Arch && slices.Equal(a.Flags, b.Flags)
}

// EngineConfig is the engine configuration the profile was measured with, and that the
// simulated replicas run.
type EngineConfig struct {
	BlockSize        int  `json:"block_size"`
	MaxBatchedTokens int  `json:"max_num_batched_tokens"`
	MaxNumSeqs       int  `json:"max_num_seqs"`
	NumBlocks        int  `json:"num_blocks"`
	MaxModelLen      int  `json:"max_model_len"`
	PrefixCaching    bool `json:"enable_prefix_caching"`
	ChunkedPrefill   bool `json:"enable_chunked_prefill"`
}

// FromEngine copies an engine configuration.
func FromEngine(c engine.Config) EngineConfig {
	return EngineConfig{BlockSize: c.BlockSizeTokens, MaxBatchedTokens: c.MaxNumBatchedTokens, MaxNumSeqs: c.MaxNumSeqs,
		NumBlocks: c.NumBlocks, MaxModelLen: c.MaxModelLenTokens, PrefixCaching: c.PrefixCaching, ChunkedPrefill: c.ChunkedPrefill}
}

// Scheduler returns the scheduler configuration.
func (e EngineConfig) Scheduler() engine.Config {
	c := engine.DefaultConfig()
	c.BlockSizeTokens, c.MaxNumBatchedTokens, c.MaxNumSeqs = e.BlockSize, e.MaxBatchedTokens, e.MaxNumSeqs
	c.NumBlocks, c.MaxModelLenTokens, c.PrefixCaching, c.ChunkedPrefill = e.NumBlocks, e.MaxModelLen, e.PrefixCaching, e.ChunkedPrefill
	return c
}

// Profile is a measured and fitted step-time model.
type Profile struct {
	Version      int                   `json:"version"`
	Date         string                `json:"date"`
	Model        ModelID               `json:"model"`
	CPU          CPU                   `json:"cpu"`
	Threads      int                   `json:"threads"`
	Engine       EngineConfig          `json:"engine"`
	Coefficients map[string]float64    `json:"coefficients"` // CoefNames -> seconds per unit (the hinge's threshold: KV rows)
	HeldOut      map[string]ErrorStats `json:"held_out_error"`
	Train        map[string]ErrorStats `json:"train_error"`
	Reps         int                   `json:"repetitions"`
	Points       []Point               `json:"points"`
	coef         Coefficients
}

// SetCoefficients stores c in p.
func (p *Profile) SetCoefficients(c Coefficients) {
	p.coef = c
	p.Coefficients = map[string]float64{}
	for i, n := range CoefNames {
		p.Coefficients[n] = c[i]
	}
}

// Coef returns the fitted coefficients.
func (p *Profile) Coef() Coefficients { return p.coef }

// StepSeconds predicts the time of a scheduler's step.
func (p *Profile) StepSeconds(plan *engine.StepPlan) float64 {
	return p.coef.Seconds(PlanFeatures(plan))
}

// Save writes p as indented JSON.
func (p *Profile) Save(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// LoadProfile reads and checks a profile file.
func LoadProfile(path string) (*Profile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	if p.Version != ProfileVersion {
		return nil, fmt.Errorf("profile %s: version %d, want %d (remeasure with llmcloud profile --engine)", path, p.Version, ProfileVersion)
	}
	for i, n := range CoefNames {
		v, ok := p.Coefficients[n]
		if !ok && i < numFeatures { // a profile without the hinge's coefficients has none
			return nil, fmt.Errorf("profile %s: no coefficient %q", path, n)
		}
		p.coef[i] = v
	}
	if err := p.Engine.Scheduler().Validate(); err != nil {
		return nil, fmt.Errorf("profile %s: engine configuration: %w", path, err)
	}
	return &p, nil
}

// CheckCPU fails when p was measured on another CPU than this one.
func (p *Profile) CheckCPU() error {
	here := ThisCPU()
	if !p.CPU.Same(here) {
		return fmt.Errorf("profile measured on another CPU: %q %v (%s), this machine has %q %v (%s); remeasure here, or --force to use it anyway",
			p.CPU.Model, p.CPU.Flags, p.CPU.Arch, here.Model, here.Flags, here.Arch)
	}
	return nil
}

// CheckModel fails when p was measured on another model than id.
func (p *Profile) CheckModel(id ModelID) error {
	if !p.Model.Same(id) {
		return fmt.Errorf("profile measured on another model: %s, not %s; remeasure with llmcloud profile --engine, or --force to use it anyway", p.Model, id)
	}
	return nil
}
