// Result: the JSON a benchmark saves, with vLLM's field names (plus a few of ours, listed in
// docs/bench.md), and reading it back.

package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Rate is a request rate in requests/s; +Inf (all at once) is written as "inf", as vLLM does.
type Rate float64

func (r Rate) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(r), 1) {
		return []byte(`"inf"`), nil
	}
	return json.Marshal(float64(r))
}

func (r *Rate) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := ParseRate(s)
	*r = v
	return err
}

func (r Rate) String() string {
	if math.IsInf(float64(r), 1) {
		return "inf"
	}
	return strconv.FormatFloat(float64(r), 'f', -1, 64)
}

// ParseRate reads a number or "inf".
func ParseRate(s string) (Rate, error) {
	if s == "inf" || s == "Infinity" {
		return Rate(math.Inf(1)), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || math.IsNaN(v) {
		return 0, fmt.Errorf("request rate %q: want a positive number or inf", s)
	}
	return Rate(v), nil
}

// Result is one benchmark run. Latency lists are in seconds, Stats in milliseconds.
type Result struct {
	// Run parameters.
	Date              string            `json:"date"`
	Backend           string            `json:"backend"`
	Endpoint          string            `json:"endpoint"`
	BaseURL           string            `json:"base_url"`
	Label             string            `json:"label,omitempty"`
	ModelID           string            `json:"model_id"`
	TokenizerID       string            `json:"tokenizer_id"`
	DatasetName       string            `json:"dataset_name"`
	NumPrompts        int               `json:"num_prompts"`
	RequestRate       Rate              `json:"request_rate"`
	Burstiness        float64           `json:"burstiness"`
	MaxConcurrency    *int              `json:"max_concurrency"`
	Seed              uint64            `json:"seed"`
	IgnoreEOS         bool              `json:"ignore_eos"`
	NumWarmups        int               `json:"num_warmups"`
	Goodput           Goodput           `json:"goodput,omitempty"`
	PercentileMetrics []string          `json:"percentile_metrics"`
	MetricPercentiles []float64         `json:"metric_percentiles"`
	Params            map[string]any    `json:"params,omitempty"` // dataset flags
	Metadata          map[string]string `json:"metadata,omitempty"`
	Interrupted       bool              `json:"interrupted,omitempty"`

	// Measurements.
	Duration              float64            `json:"duration"`
	Completed             int                `json:"completed"`
	Failed                int                `json:"failed"`
	TotalInputTokens      int                `json:"total_input_tokens"`
	TotalOutputTokens     int                `json:"total_output_tokens"`
	RequestThroughput     float64            `json:"request_throughput"`
	RequestGoodput        *float64           `json:"request_goodput"`
	OutputThroughput      float64            `json:"output_throughput"`
	TotalTokenThroughput  float64            `json:"total_token_throughput"`
	MaxOutputTokensPerS   float64            `json:"max_output_tokens_per_s"`
	MaxConcurrentRequests int                `json:"max_concurrent_requests"`
	Stats                 map[string]float64 `json:"-"` // mean_ttft_ms, median_, std_, pNN_ for ttft, tpot, itl, e2el, dispatch_lag

	InputLens      []int       `json:"input_lens"`
	OutputLens     []int       `json:"output_lens"`
	TTFTs          []float64   `json:"ttfts"`
	TPOTs          []float64   `json:"tpots"`
	E2ELs          []float64   `json:"e2els"`
	ITLs           [][]float64 `json:"itls"`
	GeneratedTexts []string    `json:"generated_texts"`
	Errors         []string    `json:"errors"`
	// CachedTokens is each request's prompt tokens served from the prefix cache, as the
	// server's usage reported them (0 where it did not): which requests hit the cache.
	CachedTokens []int `json:"cached_tokens"`

	// FailureReasons are Errors grouped (see FailureReasons); absent when nothing failed.
	FailureReasons []FailureReason `json:"failure_reasons,omitempty"`
}

type resultFields Result // no methods: plain struct encoding

// isStatKey reports whether k is a flattened statistic such as "p99_ttft_ms".
func isStatKey(k string) bool {
	if !strings.HasSuffix(k, "_ms") {
		return false
	}
	for _, p := range []string{"mean_", "median_", "std_", "p"} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// MarshalJSON writes the fields and the statistics as top-level keys, as vLLM's JSON has them.
func (r *Result) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal((*resultFields)(r))
	if err != nil {
		return nil, err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range r.Stats {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			v = 0
		}
		m[k], _ = json.Marshal(v)
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes (and vLLM's files: unknown fields are ignored).
func (r *Result) UnmarshalJSON(b []byte) error {
	if err := json.Unmarshal(b, (*resultFields)(r)); err != nil {
		return err
	}
	m := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	r.Stats = map[string]float64{}
	for k, v := range m {
		var f float64
		if isStatKey(k) && json.Unmarshal(v, &f) == nil {
			r.Stats[k] = f
		}
	}
	return nil
}

// Metric returns a numeric field by its JSON name ("request_throughput", "p99_ttft_ms", ...).
func (r *Result) Metric(name string) (float64, bool) {
	if v, ok := r.Stats[name]; ok {
		return v, true
	}
	switch name {
	case "duration":
		return r.Duration, true
	case "completed":
		return float64(r.Completed), true
	case "failed":
		return float64(r.Failed), true
	case "total_input_tokens":
		return float64(r.TotalInputTokens), true
	case "total_output_tokens":
		return float64(r.TotalOutputTokens), true
	case "request_throughput":
		return r.RequestThroughput, true
	case "request_goodput":
		if r.RequestGoodput == nil {
			return 0, false
		}
		return *r.RequestGoodput, true
	case "output_throughput":
		return r.OutputThroughput, true
	case "total_token_throughput":
		return r.TotalTokenThroughput, true
	case "max_output_tokens_per_s":
		return r.MaxOutputTokensPerS, true
	case "max_concurrent_requests":
		return float64(r.MaxConcurrentRequests), true
	}
	return 0, false
}

// FileName is vLLM's default result name: {label or backend}-{rate}qps[-concurrency{C}]-{model
// base name}-{date}.json.
func (r *Result) FileName() string {
	head := r.Backend
	if r.Label != "" {
		head = r.Label
	}
	conc := ""
	if r.MaxConcurrency != nil {
		conc = fmt.Sprintf("-concurrency%d", *r.MaxConcurrency)
	}
	return fmt.Sprintf("%s-%sqps%s-%s-%s.json", head, r.RequestRate, conc, filepath.Base(r.ModelID), r.Date)
}

// Save writes r as indented JSON to dir/name (dir is created).
func (r *Result) Save(dir, name string) (string, error) {
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", err
		}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, append(b, '\n'), 0o644)
}

// LoadResult reads a result JSON file.
func LoadResult(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}
