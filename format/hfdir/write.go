// This file implements WriteConfig, WriteGenerationConfig and WriteTokenizerConfig. Output
// looks like transformers' own: sorted keys, two-space indent, Python-style floats (1e-06,
// 10000.0), a final newline. The typed fields are laid over Raw, so fields llmcloud does not
// model survive a Load/Write round trip, and numbers keep their original spelling when
// their value did not change.
package hfdir

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

// pyFloat marshals like Python's repr of a float.
type pyFloat float64

func (f pyFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("cannot write %v as JSON", v)
	}
	e := strconv.FormatFloat(v, 'e', -1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= 16 {
		return []byte(e), nil
	}
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return []byte(s), nil
}

// overlay builds an output object from a copy of raw plus typed fields.
type overlay struct {
	raw, m map[string]any
}

func newOverlay(raw map[string]any) *overlay {
	m := make(map[string]any, len(raw))
	for k, v := range raw {
		m[k] = v
	}
	return &overlay{raw: raw, m: m}
}

// unset removes key, unless raw had it as an explicit null (which is kept as written).
func (o *overlay) unset(key string) {
	if v, ok := o.raw[key]; !ok || v != nil {
		delete(o.m, key)
	}
}

func (o *overlay) set(key string, v any) { o.m[key] = v }

// setInt writes an integer, keeping raw's spelling when it has the same value.
func (o *overlay) setInt(key string, v int) {
	if i, ok := asInt(o.raw[key]); ok && i == v {
		return
	}
	o.m[key] = v
}

// setFloat writes a float, keeping raw's spelling when it has the same value.
func (o *overlay) setFloat(key string, v float64) {
	if n, ok := o.raw[key].(json.Number); ok {
		if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == v {
			o.m[key] = n
			return
		}
	}
	o.m[key] = pyFloat(v)
}

func (o *overlay) optInt(key string, p *int) {
	if p == nil {
		o.unset(key)
	} else {
		o.setInt(key, *p)
	}
}

func (o *overlay) optFloat(key string, p *float64) {
	if p == nil {
		o.unset(key)
	} else {
		o.setFloat(key, *p)
	}
}

func (o *overlay) optBool(key string, p *bool) {
	if p == nil {
		o.unset(key)
	} else {
		o.set(key, *p)
	}
}

// ids writes eos_token_id: an integer for one id unless raw used a list, else a list.
func (o *overlay) ids(key string, ids []int) {
	_, rawList := o.raw[key].([]any)
	switch {
	case len(ids) == 0:
		o.unset(key)
	case len(ids) == 1 && !rawList:
		o.setInt(key, ids[0])
	default:
		o.set(key, ids)
	}
}

// write encodes the object like transformers does and writes it via temp file + rename.
func (o *overlay) write(path string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(o.m); err != nil {
		return fmt.Errorf("hfdir: %s: %w", path, err)
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { _, err := w.Write(b.Bytes()); return err }); err != nil {
		return fmt.Errorf("hfdir: %w", err)
	}
	return nil
}

// WriteConfig validates c and writes it as config.json at path.
func WriteConfig(path string, c *Config) error {
	if err := c.validate(path); err != nil {
		return err
	}
	o := newOverlay(c.Raw)
	if len(c.Architectures) > 0 {
		o.set("architectures", c.Architectures)
	} else {
		o.unset("architectures")
	}
	if c.ModelType != "" {
		o.set("model_type", c.ModelType)
	} else {
		o.unset("model_type")
	}
	o.setInt("hidden_size", c.HiddenSize)
	o.setInt("intermediate_size", c.IntermediateSize)
	o.setInt("num_hidden_layers", c.NumHiddenLayers)
	o.setInt("num_attention_heads", c.NumAttentionHeads)
	o.setInt("num_key_value_heads", c.NumKeyValueHeads)
	o.setInt("vocab_size", c.VocabSize)
	o.optInt("head_dim", positive(c.HeadDim))
	o.optInt("max_position_embeddings", positive(c.MaxPositionEmbeddings))
	o.setFloat("rms_norm_eps", c.RMSNormEps)
	if rp, ok := c.Raw["rope_parameters"].(map[string]any); ok && c.Raw["rope_theta"] == nil && rp["rope_theta"] != nil {
		n := newOverlay(rp)
		n.setFloat("rope_theta", c.RopeTheta)
		o.set("rope_parameters", n.m)
	} else {
		o.setFloat("rope_theta", c.RopeTheta)
	}
	if r := c.RopeScaling; r != nil {
		o.set("rope_scaling", r.object())
	} else {
		o.unset("rope_scaling")
	}
	o.set("tie_word_embeddings", c.TieWordEmbeddings)
	if _, had := c.Raw["attention_bias"]; had || c.AttentionBias {
		o.set("attention_bias", c.AttentionBias)
	}
	o.optInt("bos_token_id", c.BOSTokenID)
	o.ids("eos_token_id", c.EOSTokenIDs)
	dtypeKey := "torch_dtype"
	if _, had := c.Raw["torch_dtype"]; !had && c.Raw["dtype"] != nil {
		dtypeKey = "dtype"
	}
	if c.TorchDtype != "" {
		o.set(dtypeKey, c.TorchDtype)
	} else {
		o.unset(dtypeKey)
	}
	return o.write(path)
}

func positive(v int) *int {
	if v > 0 {
		return &v
	}
	return nil
}

func nonZero(v float64) *float64 {
	if v != 0 {
		return &v
	}
	return nil
}

// object is the JSON object of r: Raw with the typed fields laid over it.
func (r *RopeScaling) object() map[string]any {
	o := newOverlay(r.Raw)
	typeKey := "rope_type"
	if _, had := r.Raw["rope_type"]; !had && r.Raw["type"] != nil {
		typeKey = "type"
	}
	o.set(typeKey, r.Type)
	o.optFloat("factor", nonZero(r.Factor))
	o.optFloat("low_freq_factor", nonZero(r.LowFreqFactor))
	o.optFloat("high_freq_factor", nonZero(r.HighFreqFactor))
	o.optInt("original_max_position_embeddings", positive(r.OriginalMaxPositionEmbeddings))
	return o.m
}

// WriteGenerationConfig validates g and writes it as generation_config.json at path.
func WriteGenerationConfig(path string, g *GenerationConfig) error {
	if err := g.validate(path); err != nil {
		return err
	}
	o := newOverlay(g.Raw)
	o.optFloat("temperature", g.Temperature)
	o.optFloat("top_p", g.TopP)
	o.optInt("top_k", g.TopK)
	o.optFloat("min_p", g.MinP)
	o.optFloat("repetition_penalty", g.RepetitionPenalty)
	o.optBool("do_sample", g.DoSample)
	o.optInt("max_new_tokens", g.MaxNewTokens)
	o.optInt("bos_token_id", g.BOSTokenID)
	o.ids("eos_token_id", g.EOSTokenIDs)
	return o.write(path)
}

// WriteTokenizerConfig writes tc as tokenizer_config.json at path.
func WriteTokenizerConfig(path string, tc *TokenizerConfig) error {
	if tc.ModelMaxLength < 0 || math.IsNaN(tc.ModelMaxLength) || math.IsInf(tc.ModelMaxLength, 0) {
		return fmt.Errorf("hfdir: %s: field \"model_max_length\": must be a finite non-negative number, got %g", path, tc.ModelMaxLength)
	}
	o := newOverlay(tc.Raw)
	switch {
	case tc.ChatTemplates != nil:
		names := make([]string, 0, len(tc.ChatTemplates)+1)
		for n := range tc.ChatTemplates {
			names = append(names, n)
		}
		if _, ok := tc.ChatTemplates["default"]; !ok && tc.ChatTemplate != "" {
			names = append(names, "default")
		}
		sort.Strings(names)
		list := make([]any, len(names))
		for i, n := range names {
			t := tc.ChatTemplates[n]
			if n == "default" {
				t = tc.ChatTemplate
			}
			list[i] = map[string]any{"name": n, "template": t}
		}
		o.set("chat_template", list)
	case tc.ChatTemplate != "":
		o.set("chat_template", tc.ChatTemplate)
	default:
		o.unset("chat_template")
	}
	for _, st := range []struct{ key, val string }{
		{"bos_token", tc.BOSToken}, {"eos_token", tc.EOSToken}, {"pad_token", tc.PADToken}, {"unk_token", tc.UNKToken},
	} {
		switch raw := tc.Raw[st.key].(type) {
		case map[string]any:
			if st.val == "" {
				o.set(st.key, nil)
				break
			}
			n := newOverlay(raw)
			n.set("content", st.val)
			o.set(st.key, n.m)
		default:
			if st.val != "" {
				o.set(st.key, st.val)
			} else if _, had := tc.Raw[st.key]; had {
				o.set(st.key, nil)
			}
		}
	}
	o.optBool("add_bos_token", tc.AddBOSToken)
	o.optBool("add_eos_token", tc.AddEOSToken)
	if tc.AddedTokens != nil {
		dec := make(map[string]any, len(tc.AddedTokens))
		for id, t := range tc.AddedTokens {
			dec[strconv.Itoa(id)] = map[string]any{"content": t.Content, "special": t.Special, "lstrip": t.LStrip,
				"rstrip": t.RStrip, "normalized": t.Normalized, "single_word": t.SingleWord}
		}
		o.set("added_tokens_decoder", dec)
	} else {
		o.unset("added_tokens_decoder")
	}
	switch v := tc.ModelMaxLength; {
	case v == 0:
		o.unset("model_max_length")
	case v == math.Trunc(v):
		// transformers writes integers, e.g. 32768 or int(1e30) = 1000000000000000019884624838656.
		if n, ok := tc.Raw["model_max_length"].(json.Number); ok {
			if f, err := strconv.ParseFloat(string(n), 64); err == nil && f == v {
				o.set("model_max_length", n)
				break
			}
		}
		o.set("model_max_length", json.Number(new(big.Float).SetFloat64(v).Text('f', 0)))
	default:
		o.setFloat("model_max_length", v)
	}
	return o.write(path)
}
