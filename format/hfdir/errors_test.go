// This file tests that malformed model directories fail with errors naming the file and the
// field, and holds the fuzz targets for the three JSON readers.
package hfdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const base = `"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 100`

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"bad JSON", `{"hidden_size": 64,`, "bad JSON"},
		{"trailing data", `{` + base + `, "num_attention_heads": 4} {}`, "after the top-level value"},
		{"not an object", `[1, 2]`, "want an object"},
		{"missing required", `{"intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": 4}`, `"hidden_size": required field is missing`},
		{"string size", `{` + base + `, "num_attention_heads": "4"}`, `"num_attention_heads": want an integer, got a string`},
		{"fractional", `{` + base + `, "num_attention_heads": 4.5}`, `"num_attention_heads": want an integer, got the number 4.5`},
		{"negative", `{"hidden_size": -64, "intermediate_size": 128, "num_hidden_layers": 2, "vocab_size": 100, "num_attention_heads": 4}`, `"hidden_size": must be positive`},
		{"zero layers", `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 0, "vocab_size": 100, "num_attention_heads": 4}`, `"num_hidden_layers": must be positive`},
		{"heads do not divide", `{` + base + `, "num_attention_heads": 5, "num_key_value_heads": 5}`, `"num_attention_heads": 5 does not divide hidden_size 64`},
		{"kv heads do not divide", `{` + base + `, "num_attention_heads": 4, "num_key_value_heads": 3}`, `"num_key_value_heads": 3 does not divide num_attention_heads 4`},
		{"negative head_dim", `{` + base + `, "num_attention_heads": 4, "head_dim": -1}`, `"head_dim": must be positive`},
		{"eps", `{` + base + `, "num_attention_heads": 4, "rms_norm_eps": -1e-5}`, `"rms_norm_eps": must be positive`},
		{"theta type", `{` + base + `, "num_attention_heads": 4, "rope_theta": "big"}`, `"rope_theta": want a number, got a string`},
		{"eos type", `{` + base + `, "num_attention_heads": 4, "eos_token_id": "2"}`, `"eos_token_id": want an integer or a list`},
		{"eos element", `{` + base + `, "num_attention_heads": 4, "eos_token_id": [2, "x"]}`, `"eos_token_id": element 1`},
		{"eos range", `{` + base + `, "num_attention_heads": 4, "eos_token_id": [2, 100]}`, `"eos_token_id": 100 is outside the vocabulary`},
		{"bos range", `{` + base + `, "num_attention_heads": 4, "bos_token_id": -1}`, `"bos_token_id": -1 is outside`},
		{"architectures", `{` + base + `, "num_attention_heads": 4, "architectures": "Llama"}`, `"architectures": want a list of strings`},
		{"tie type", `{` + base + `, "num_attention_heads": 4, "tie_word_embeddings": 1}`, `"tie_word_embeddings": want true or false`},
		{"rope_scaling type", `{` + base + `, "num_attention_heads": 4, "rope_scaling": 8}`, `"rope_scaling": want an object`},
		{"rope_scaling unknown", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"rope_type": "weird", "factor": 2}}`, `"rope_scaling.rope_type": unknown rope scaling type "weird"`},
		{"rope_scaling no type", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"factor": 2}}`, `"rope_scaling.rope_type": required field is missing`},
		{"rope_scaling factor", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"type": "linear"}}`, `"rope_scaling.factor": must be positive`},
		{"rope_scaling factor type", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"type": "linear", "factor": "2"}}`, `"rope_scaling.factor": want a number`},
		{"llama3 low", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"rope_type": "llama3", "factor": 32, "high_freq_factor": 4, "original_max_position_embeddings": 8192}}`, `"rope_scaling.low_freq_factor"`},
		{"llama3 high", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"rope_type": "llama3", "factor": 32, "low_freq_factor": 4, "high_freq_factor": 1, "original_max_position_embeddings": 8192}}`, `"rope_scaling.high_freq_factor"`},
		{"llama3 original", `{` + base + `, "num_attention_heads": 4, "rope_scaling": {"rope_type": "llama3", "factor": 32, "low_freq_factor": 1, "high_freq_factor": 4}}`, `"rope_scaling.original_max_position_embeddings"`},
	}
	for _, c := range cases {
		dir := writeDir(t, map[string]string{ConfigFile: c.json})
		_, err := Load(dir)
		if err == nil {
			t.Errorf("%s: Load succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), filepath.Join(dir, ConfigFile)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q should name the file and contain %q", c.name, err, c.want)
		}
	}
}

func TestOtherFileErrors(t *testing.T) {
	cfg := `{` + base + `, "num_attention_heads": 4}`
	cases := []struct {
		name, file, json, want string
	}{
		{"temperature type", GenerationFile, `{"temperature": "hot"}`, `"temperature": want a number, got a string`},
		{"top_p range", GenerationFile, `{"top_p": 2}`, `"top_p": must be in [0, 1]`},
		{"top_k negative", GenerationFile, `{"top_k": -1}`, `"top_k": must not be negative`},
		{"do_sample type", GenerationFile, `{"do_sample": "yes"}`, `"do_sample": want true or false`},
		{"generation JSON", GenerationFile, `{"top_k": }`, "bad JSON"},
		{"template type", TokenizerConfigFile, `{"chat_template": 3}`, `"chat_template": want a string or a list`},
		{"template list", TokenizerConfigFile, `{"chat_template": [{"name": "default"}]}`, `"chat_template": element 0`},
		{"token type", TokenizerConfigFile, `{"bos_token": 1}`, `"bos_token": want a string or an object`},
		{"token object", TokenizerConfigFile, `{"eos_token": {"lstrip": false}}`, `"eos_token": object without a string "content"`},
		{"added key", TokenizerConfigFile, `{"added_tokens_decoder": {"x": {"content": "a"}}}`, `"added_tokens_decoder.x": key is not a token id`},
		{"added content", TokenizerConfigFile, `{"added_tokens_decoder": {"5": {"special": true}}}`, `"added_tokens_decoder.5.content": required field is missing`},
		{"added flag", TokenizerConfigFile, `{"added_tokens_decoder": {"5": {"content": "a", "special": "yes"}}}`, `"added_tokens_decoder.5.special": want true or false`},
		{"added null", TokenizerConfigFile, `{"added_tokens_decoder": {"5": null}}`, `"added_tokens_decoder.5"`},
		{"add_bos type", TokenizerConfigFile, `{"add_bos_token": "true"}`, `"add_bos_token": want true or false`},
		{"max length", TokenizerConfigFile, `{"model_max_length": -1}`, `"model_max_length": must not be negative`},
	}
	for _, c := range cases {
		dir := writeDir(t, map[string]string{ConfigFile: cfg, c.file: c.json})
		_, err := Load(dir)
		if err == nil {
			t.Errorf("%s: Load succeeded", c.name)
			continue
		}
		if !strings.Contains(err.Error(), filepath.Join(dir, c.file)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q should name the file and contain %q", c.name, err, c.want)
		}
	}
}

func TestLoadDirErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope")); err == nil {
		t.Error("Load of a missing directory succeeded")
	}
	f := filepath.Join(dir, "file")
	os.WriteFile(f, []byte("x"), 0o644)
	if _, err := Load(f); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("Load of a file: %v", err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "config.json is missing") {
		t.Errorf("Load without config.json: %v", err)
	}
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte(llama32Config))
	f.Add([]byte(llamaTokenizerConfig))
	f.Add([]byte(`{` + base + `, "num_attention_heads": 4, "eos_token_id": [1, 2], "rope_scaling": {"type": "linear", "factor": 2}}`))
	f.Add([]byte(`{"temperature": 0.7, "top_p": 0.9, "top_k": 20, "eos_token_id": [1, 2]}`))
}

// FuzzConfig checks that the three readers never panic, and that what config.json accepts
// can be written and read back with the same shape.
func FuzzConfig(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeObject(data, "fuzz.json")
		if err != nil {
			return
		}
		generationFrom(m, "fuzz.json")
		tokenizerConfigFrom(m, "fuzz.json")
		c, err := configFrom(m, "fuzz.json")
		if err != nil {
			return
		}
		p := filepath.Join(t.TempDir(), ConfigFile)
		if err := WriteConfig(p, c); err != nil {
			t.Fatalf("writing an accepted config: %v", err)
		}
		c2, err := ReadConfig(p)
		if err != nil {
			t.Fatalf("reading back a written config: %v", err)
		}
		if c2.HiddenSize != c.HiddenSize || c2.NumKeyValueHeads != c.NumKeyValueHeads || c2.RopeTheta != c.RopeTheta ||
			c2.RMSNormEps != c.RMSNormEps || len(c2.EOSTokenIDs) != len(c.EOSTokenIDs) {
			t.Fatalf("round trip changed the config: %+v -> %+v", c, c2)
		}
	})
}
