// Package hfdir reads and writes the JSON files of a Hugging Face model directory:
// config.json, generation_config.json and tokenizer_config.json, and locates its tokenizer
// files. Every error names the file and the field.
//
// This file implements Dir and Load.
package hfdir

import (
	"fmt"
	"os"
	"path/filepath"
)

// File names in a model directory.
const (
	ConfigFile          = "config.json"
	GenerationFile      = "generation_config.json"
	TokenizerConfigFile = "tokenizer_config.json"
	TokenizerJSONFile   = "tokenizer.json"
	VocabJSONFile       = "vocab.json"
	MergesTXTFile       = "merges.txt"
	ChatTemplateFile    = "chat_template.jinja" // newer transformers keep the template here
)

// Dir is a loaded model directory.
type Dir struct {
	Path            string
	Config          *Config           // config.json (required)
	Generation      *GenerationConfig // generation_config.json; nil when absent
	TokenizerConfig *TokenizerConfig  // tokenizer_config.json; nil when absent (see Load)
	TokenizerJSON   string            // path of tokenizer.json, or ""
	VocabJSON       string            // path of vocab.json (GPT-2 style directories), or ""
	MergesTXT       string            // path of merges.txt, or ""
}

// Load reads the model directory dir. config.json is required; generation_config.json and
// tokenizer_config.json are read when present. When tokenizer_config.json has no
// chat_template but chat_template.jinja exists, that file becomes ChatTemplate (and a
// TokenizerConfig is made for it if needed).
func Load(dir string) (*Dir, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("hfdir: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("hfdir: %s: not a directory", dir)
	}
	d := &Dir{Path: dir}
	cfg := filepath.Join(dir, ConfigFile)
	if !fileExists(cfg) {
		return nil, fmt.Errorf("hfdir: %s: %s is missing (required)", dir, ConfigFile)
	}
	if d.Config, err = ReadConfig(cfg); err != nil {
		return nil, err
	}
	if p := filepath.Join(dir, GenerationFile); fileExists(p) {
		if d.Generation, err = ReadGenerationConfig(p); err != nil {
			return nil, err
		}
	}
	if p := filepath.Join(dir, TokenizerConfigFile); fileExists(p) {
		if d.TokenizerConfig, err = ReadTokenizerConfig(p); err != nil {
			return nil, err
		}
	}
	if p := filepath.Join(dir, ChatTemplateFile); fileExists(p) && (d.TokenizerConfig == nil || d.TokenizerConfig.ChatTemplate == "") {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("hfdir: %w", err)
		}
		if d.TokenizerConfig == nil {
			d.TokenizerConfig = &TokenizerConfig{Raw: map[string]any{}}
		}
		d.TokenizerConfig.ChatTemplate = string(b)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{TokenizerJSONFile, &d.TokenizerJSON}, {VocabJSONFile, &d.VocabJSON}, {MergesTXTFile, &d.MergesTXT}} {
		if p := filepath.Join(dir, f.name); fileExists(p) {
			*f.dst = p
		}
	}
	return d, nil
}
