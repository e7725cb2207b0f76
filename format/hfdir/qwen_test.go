// This file tests Load and the writers on the real Qwen2-1.5B-Instruct JSON files in
// testdata/models/qwen2-tokenizer.
package hfdir

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestLoadQwen2(t *testing.T) {
	dir := fixture.Path(t, "models", "qwen2-tokenizer")
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := d.Config
	if c.ModelType != "qwen2" || len(c.Architectures) != 1 || c.Architectures[0] != "Qwen2ForCausalLM" {
		t.Errorf("model_type %q architectures %v", c.ModelType, c.Architectures)
	}
	if c.HiddenSize != 1536 || c.IntermediateSize != 8960 || c.NumHiddenLayers != 28 ||
		c.NumAttentionHeads != 12 || c.NumKeyValueHeads != 2 || c.HeadDim != 0 || c.HeadDimension() != 128 {
		t.Errorf("shape %+v", c)
	}
	if c.VocabSize != 151936 || c.MaxPositionEmbeddings != 32768 || c.RMSNormEps != 1e-6 || c.RopeTheta != 1e6 {
		t.Errorf("vocab %d ctx %d eps %g theta %g", c.VocabSize, c.MaxPositionEmbeddings, c.RMSNormEps, c.RopeTheta)
	}
	if !c.TieWordEmbeddings || c.AttentionBias || c.RopeScaling != nil || c.TorchDtype != "bfloat16" {
		t.Errorf("tie %v bias %v scaling %v dtype %q", c.TieWordEmbeddings, c.AttentionBias, c.RopeScaling, c.TorchDtype)
	}
	if c.BOSTokenID == nil || *c.BOSTokenID != 151643 || len(c.EOSTokenIDs) != 1 || c.EOSTokenIDs[0] != 151645 {
		t.Errorf("bos %v eos %v", c.BOSTokenID, c.EOSTokenIDs)
	}
	if c.Raw["hidden_act"] != "silu" {
		t.Errorf("Raw[hidden_act] = %v", c.Raw["hidden_act"])
	}

	g := d.Generation
	if g == nil {
		t.Fatal("generation_config.json not loaded")
	}
	if *g.Temperature != 0.5 || *g.TopP != 0.7 || *g.TopK != 40 || *g.RepetitionPenalty != 1.1 || !*g.DoSample ||
		g.MinP != nil || g.MaxNewTokens != nil || *g.BOSTokenID != 151643 {
		t.Errorf("generation %+v", g)
	}
	if len(g.EOSTokenIDs) != 2 || g.EOSTokenIDs[0] != 151645 || g.EOSTokenIDs[1] != 151643 {
		t.Errorf("generation eos %v", g.EOSTokenIDs)
	}

	tc := d.TokenizerConfig
	if tc == nil {
		t.Fatal("tokenizer_config.json not loaded")
	}
	if !strings.HasPrefix(tc.ChatTemplate, "{% set system_message = 'You are a helpful assistant.' %}") ||
		!strings.Contains(tc.ChatTemplate, "<|im_start|>assistant\n") {
		t.Errorf("chat template %q", tc.ChatTemplate)
	}
	if tc.BOSToken != "" || tc.EOSToken != "<|im_end|>" || tc.PADToken != "<|endoftext|>" || tc.UNKToken != "" {
		t.Errorf("special tokens bos %q eos %q pad %q unk %q", tc.BOSToken, tc.EOSToken, tc.PADToken, tc.UNKToken)
	}
	if tc.AddBOSToken != nil || tc.AddEOSToken != nil || tc.ModelMaxLength != 32768 {
		t.Errorf("add_bos %v add_eos %v max %g", tc.AddBOSToken, tc.AddEOSToken, tc.ModelMaxLength)
	}
	want := map[int]string{151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>"}
	if len(tc.AddedTokens) != len(want) {
		t.Errorf("added tokens %v", tc.AddedTokens)
	}
	for id, content := range want {
		at := tc.AddedTokens[id]
		if at.Content != content || !at.Special || at.LStrip || at.RStrip || at.Normalized || at.SingleWord {
			t.Errorf("added token %d = %+v", id, at)
		}
	}
	if d.VocabJSON != filepath.Join(dir, "vocab.json") || d.MergesTXT != filepath.Join(dir, "merges.txt") || d.TokenizerJSON != "" {
		t.Errorf("vocab %q merges %q tokenizer.json %q", d.VocabJSON, d.MergesTXT, d.TokenizerJSON)
	}
}

// TestRewriteQwen2 writes the loaded files back and expects them byte for byte: the real files
// were written by transformers, so this checks that our output looks like theirs.
func TestRewriteQwen2(t *testing.T) {
	dir := fixture.Path(t, "models", "qwen2-tokenizer")
	d, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := WriteConfig(filepath.Join(out, ConfigFile), d.Config); err != nil {
		t.Fatal(err)
	}
	if err := WriteGenerationConfig(filepath.Join(out, GenerationFile), d.Generation); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokenizerConfig(filepath.Join(out, TokenizerConfigFile), d.TokenizerConfig); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{ConfigFile, GenerationFile, TokenizerConfigFile} {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join(out, name))
		// The shared copies have CRLF line ends (from the repository they came from).
		a = bytes.ReplaceAll(a, []byte("\r\n"), []byte("\n"))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs after Load+Write:\n%s\nwant\n%s", name, b, a)
		}
	}
	if _, err := Load(out); err != nil {
		t.Fatal(err)
	}
}
