// This file implements GenerationConfig: the sampling defaults of generation_config.json.
package hfdir

import "fmt"

// GenerationConfig holds the fields of generation_config.json that llmcloud uses; a nil
// pointer means the field is absent (or null). Raw holds everything.
type GenerationConfig struct {
	Temperature       *float64
	TopP              *float64
	TopK              *int
	MinP              *float64
	RepetitionPenalty *float64
	DoSample          *bool
	MaxNewTokens      *int
	BOSTokenID        *int
	EOSTokenIDs       []int // eos_token_id, an integer or a list
	Raw               map[string]any
}

// ReadGenerationConfig reads and validates one generation_config.json.
func ReadGenerationConfig(path string) (*GenerationConfig, error) {
	m, err := readObject(path)
	if err != nil {
		return nil, err
	}
	return generationFrom(m, path)
}

func generationFrom(m map[string]any, file string) (*GenerationConfig, error) {
	o := &obj{file: file, m: m}
	g := &GenerationConfig{
		Temperature:       o.floatPtr("temperature"),
		TopP:              o.floatPtr("top_p"),
		TopK:              o.intPtr("top_k"),
		MinP:              o.floatPtr("min_p"),
		RepetitionPenalty: o.floatPtr("repetition_penalty"),
		DoSample:          o.boolPtr("do_sample"),
		MaxNewTokens:      o.intPtr("max_new_tokens"),
		BOSTokenID:        o.intPtr("bos_token_id"),
		EOSTokenIDs:       o.intOrList("eos_token_id"),
		Raw:               m,
	}
	if o.err != nil {
		return nil, o.err
	}
	if err := g.validate(file); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *GenerationConfig) validate(file string) error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("hfdir: %s: field %q: %s", file, field, fmt.Sprintf(format, args...))
	}
	if v := g.Temperature; v != nil && !(*v >= 0) {
		return bad("temperature", "must not be negative, got %g", *v)
	}
	if v := g.TopP; v != nil && !(*v >= 0 && *v <= 1) {
		return bad("top_p", "must be in [0, 1], got %g", *v)
	}
	if v := g.MinP; v != nil && !(*v >= 0 && *v <= 1) {
		return bad("min_p", "must be in [0, 1], got %g", *v)
	}
	if v := g.TopK; v != nil && *v < 0 {
		return bad("top_k", "must not be negative, got %d", *v)
	}
	if v := g.RepetitionPenalty; v != nil && !(*v > 0) {
		return bad("repetition_penalty", "must be positive, got %g", *v)
	}
	if v := g.MaxNewTokens; v != nil && *v < 0 {
		return bad("max_new_tokens", "must not be negative, got %d", *v)
	}
	if v := g.BOSTokenID; v != nil && *v < 0 {
		return bad("bos_token_id", "must not be negative, got %d", *v)
	}
	for _, id := range g.EOSTokenIDs {
		if id < 0 {
			return bad("eos_token_id", "must not be negative, got %d", id)
		}
	}
	return nil
}
