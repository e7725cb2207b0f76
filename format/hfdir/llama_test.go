// This file tests hand-written Llama-3 style files (rope_scaling, eos lists, special tokens
// as objects, named chat templates) and writing model directories from scratch.
package hfdir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// llama32Config is shaped like meta-llama/Llama-3.2-1B-Instruct's config.json.
const llama32Config = `{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "eos_token_id": [128001, 128008, 128009],
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3"
  },
  "rope_theta": 500000.0,
  "tie_word_embeddings": true,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0",
  "use_cache": true,
  "vocab_size": 128256
}`

const llamaTokenizerConfig = `{
  "add_bos_token": true,
  "add_eos_token": false,
  "added_tokens_decoder": {
    "128000": {"content": "<|begin_of_text|>", "lstrip": false, "normalized": false, "rstrip": false, "single_word": false, "special": true},
    "128009": {"content": "<|eot_id|>", "lstrip": true, "normalized": false, "rstrip": false, "single_word": false, "special": true}
  },
  "bos_token": {"__type": "AddedToken", "content": "<|begin_of_text|>", "lstrip": false, "normalized": true, "rstrip": false, "single_word": false},
  "chat_template": [
    {"name": "default", "template": "{{ bos_token }}{% for m in messages %}{{ m['content'] }}{% endfor %}"},
    {"name": "tool_use", "template": "TOOLS"}
  ],
  "eos_token": "<|eot_id|>",
  "model_max_length": 1000000000000000019884624838656,
  "pad_token": null
}`

func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadLlama3(t *testing.T) {
	dir := writeDir(t, map[string]string{
		ConfigFile:          llama32Config,
		TokenizerConfigFile: llamaTokenizerConfig,
		TokenizerJSONFile:   `{}`,
	})
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Config
	if c.HeadDim != 64 || c.HeadDimension() != 64 || c.NumKeyValueHeads != 8 || c.RMSNormEps != 1e-5 || c.RopeTheta != 500000 {
		t.Errorf("config %+v", c)
	}
	r := c.RopeScaling
	if r == nil || r.Type != "llama3" || r.Factor != 32 || r.LowFreqFactor != 1 || r.HighFreqFactor != 4 || r.OriginalMaxPositionEmbeddings != 8192 {
		t.Fatalf("rope_scaling %+v", r)
	}
	if len(c.EOSTokenIDs) != 3 || c.EOSTokenIDs[2] != 128009 || *c.BOSTokenID != 128000 {
		t.Errorf("bos %v eos %v", *c.BOSTokenID, c.EOSTokenIDs)
	}
	if d.Generation != nil || d.TokenizerJSON != filepath.Join(dir, TokenizerJSONFile) || d.VocabJSON != "" || d.MergesTXT != "" {
		t.Errorf("generation %v tokenizer.json %q vocab %q merges %q", d.Generation, d.TokenizerJSON, d.VocabJSON, d.MergesTXT)
	}
	tc := d.TokenizerConfig
	if tc.BOSToken != "<|begin_of_text|>" || tc.EOSToken != "<|eot_id|>" || tc.PADToken != "" {
		t.Errorf("tokens %q %q %q", tc.BOSToken, tc.EOSToken, tc.PADToken)
	}
	if !strings.HasPrefix(tc.ChatTemplate, "{{ bos_token }}") || tc.ChatTemplates["tool_use"] != "TOOLS" {
		t.Errorf("templates %q %v", tc.ChatTemplate, tc.ChatTemplates)
	}
	if !*tc.AddBOSToken || *tc.AddEOSToken || tc.ModelMaxLength != 1e30 {
		t.Errorf("add_bos %v add_eos %v max %g", *tc.AddBOSToken, *tc.AddEOSToken, tc.ModelMaxLength)
	}
	if at := tc.AddedTokens[128009]; at.Content != "<|eot_id|>" || !at.LStrip || !at.Special {
		t.Errorf("added token %+v", at)
	}

	// Round trip through the writers, changing some fields.
	out := t.TempDir()
	c.RopeScaling.Factor = 8
	c.EOSTokenIDs = []int{128009}
	tc.ChatTemplate = "NEW"
	tc.PADToken = "<|eot_id|>"
	tc.BOSToken = "<s>"
	if err := WriteConfig(filepath.Join(out, ConfigFile), c); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokenizerConfig(filepath.Join(out, TokenizerConfigFile), tc); err != nil {
		t.Fatal(err)
	}
	d2, err := Load(out)
	if err != nil {
		t.Fatal(err)
	}
	c2, tc2 := d2.Config, d2.TokenizerConfig
	if c2.RopeScaling.Factor != 8 || c2.RopeScaling.Type != "llama3" || c2.RopeScaling.OriginalMaxPositionEmbeddings != 8192 {
		t.Errorf("rope_scaling after rewrite %+v", c2.RopeScaling)
	}
	if len(c2.EOSTokenIDs) != 1 || c2.EOSTokenIDs[0] != 128009 || c2.Raw["mlp_bias"] != false {
		t.Errorf("eos %v mlp_bias %v", c2.EOSTokenIDs, c2.Raw["mlp_bias"])
	}
	if tc2.ChatTemplate != "NEW" || tc2.ChatTemplates["tool_use"] != "TOOLS" || tc2.PADToken != "<|eot_id|>" || tc2.BOSToken != "<s>" {
		t.Errorf("tokenizer config after rewrite %+v", tc2)
	}
	if bos, _ := tc2.Raw["bos_token"].(map[string]any); bos["__type"] != "AddedToken" {
		t.Errorf("bos_token object lost its other fields: %v", tc2.Raw["bos_token"])
	}
	raw, _ := os.ReadFile(filepath.Join(out, ConfigFile))
	for _, want := range []string{`"eos_token_id": [` + "\n    128009\n  ]", `"factor": 8.0`, `"rms_norm_eps": 1e-05`, `"rope_theta": 500000.0`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("written config.json lacks %q:\n%s", want, raw)
		}
	}
	rawTC, _ := os.ReadFile(filepath.Join(out, TokenizerConfigFile))
	if !strings.Contains(string(rawTC), `"model_max_length": 1000000000000000019884624838656`) {
		t.Errorf("model_max_length not kept as written:\n%s", rawTC)
	}
}

// TestWriteFromScratch writes the files for a synthetic model with no Raw maps, as
// `llmcloud synth` does, and loads them back.
func TestWriteFromScratch(t *testing.T) {
	dir := t.TempDir()
	bos, eps := 1, 1e-5
	c := &Config{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama", HiddenSize: 256, IntermediateSize: 768,
		NumHiddenLayers: 4, NumAttentionHeads: 8, NumKeyValueHeads: 2, VocabSize: 512, MaxPositionEmbeddings: 512,
		RMSNormEps: eps, RopeTheta: 10000, BOSTokenID: &bos, EOSTokenIDs: []int{2}, TorchDtype: "float32"}
	temp, topK := 0.8, 40
	g := &GenerationConfig{Temperature: &temp, TopK: &topK, EOSTokenIDs: []int{2, 3}}
	yes := true
	tc := &TokenizerConfig{ChatTemplate: "{{ messages }}", BOSToken: "<s>", EOSToken: "</s>", AddBOSToken: &yes,
		AddedTokens: map[int]AddedToken{1: {Content: "<s>", Special: true}}, ModelMaxLength: 512}
	if err := WriteConfig(filepath.Join(dir, ConfigFile), c); err != nil {
		t.Fatal(err)
	}
	if err := WriteGenerationConfig(filepath.Join(dir, GenerationFile), g); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokenizerConfig(filepath.Join(dir, TokenizerConfigFile), tc); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
	for _, want := range []string{"{\n  \"architectures\": [\n    \"LlamaForCausalLM\"\n  ],\n", `"rms_norm_eps": 1e-05,`, `"rope_theta": 10000.0,`,
		`"eos_token_id": 2,`, `"tie_word_embeddings": false,`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("config.json lacks %q:\n%s", want, raw)
		}
	}
	if strings.Contains(string(raw), "head_dim") || strings.Contains(string(raw), "rope_scaling") {
		t.Errorf("config.json has fields that were not set:\n%s", raw)
	}
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Config.HiddenSize != 256 || d.Config.NumKeyValueHeads != 2 || d.Config.RMSNormEps != 1e-5 || *d.Config.BOSTokenID != 1 {
		t.Errorf("config %+v", d.Config)
	}
	if *d.Generation.Temperature != 0.8 || *d.Generation.TopK != 40 || len(d.Generation.EOSTokenIDs) != 2 || d.Generation.TopP != nil {
		t.Errorf("generation %+v", d.Generation)
	}
	if d.TokenizerConfig.ChatTemplate != "{{ messages }}" || d.TokenizerConfig.AddedTokens[1].Content != "<s>" || d.TokenizerConfig.ModelMaxLength != 512 {
		t.Errorf("tokenizer config %+v", d.TokenizerConfig)
	}
	bad := *c
	bad.NumKeyValueHeads = 3
	if err := WriteConfig(filepath.Join(dir, "bad.json"), &bad); err == nil {
		t.Error("WriteConfig accepted 3 kv heads for 8 heads")
	}
}

func TestChatTemplateJinja(t *testing.T) {
	cfg := `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10}`
	d, err := Load(writeDir(t, map[string]string{ConfigFile: cfg, ChatTemplateFile: "{{ jinja }}"}))
	if err != nil {
		t.Fatal(err)
	}
	if d.TokenizerConfig == nil || d.TokenizerConfig.ChatTemplate != "{{ jinja }}" {
		t.Errorf("chat_template.jinja not used: %+v", d.TokenizerConfig)
	}
	c := d.Config
	if c.NumKeyValueHeads != 4 || c.RopeTheta != 10000 || c.RMSNormEps != 1e-6 || c.HeadDimension() != 16 || c.TieWordEmbeddings {
		t.Errorf("defaults: %+v", c)
	}
	d, err = Load(writeDir(t, map[string]string{ConfigFile: cfg, ChatTemplateFile: "{{ jinja }}",
		TokenizerConfigFile: `{"chat_template": "{{ inline }}"}`}))
	if err != nil || d.TokenizerConfig.ChatTemplate != "{{ inline }}" {
		t.Errorf("inline template should win: %v %+v", err, d.TokenizerConfig)
	}
	// Newer transformers: rope_theta inside rope_parameters, dtype instead of torch_dtype.
	d, err = Load(writeDir(t, map[string]string{ConfigFile: `{"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
		"num_attention_heads": 4, "vocab_size": 10, "rope_parameters": {"rope_theta": 1e6, "rope_type": "default"}, "dtype": "bfloat16"}`}))
	if err != nil || d.Config.RopeTheta != 1e6 || d.Config.TorchDtype != "bfloat16" {
		t.Errorf("rope_parameters/dtype: %v %+v", err, d.Config)
	}
}
