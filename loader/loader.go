// Package loader opens a model of any supported format — a GGUF file, a Hugging Face directory
// or a llama2.c checkpoint — and returns everything needed to run it: the model, its
// tokenizer, its chat template and its default sampling settings.
package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// Format names what kind of file a model came from.
type Format string

const (
	GGUF    Format = "gguf"
	HF      Format = "hf"
	Llama2C Format = "llama2c"
)

// Options adjusts how a model is opened.
type Options struct {
	// Tokenizer overrides the tokenizer: a tokenizer.json, a GGUF file with a vocabulary, a
	// llama2.c tokenizer.bin, or a Hugging Face directory. Required for llama2.c checkpoints
	// that have no tokenizer.bin (or a single tok*.bin) beside them.
	Tokenizer string
	// Part, when not the zero value, loads one rank's part of the model: its tensor-parallel
	// shard and pipeline stage (model.LoadGGUFPart; GGUF files only).
	Part model.Part
}

// Defaults are a model's own default sampling settings (generation_config.json, or a GGUF
// file's general.sampling.* keys); nil fields are unset.
type Defaults struct {
	Temperature, TopP, MinP, RepetitionPenalty *float64
	TopK                                       *int
	MaxNewTokens                               *int
}

// Bundle is an opened model. Close releases its files.
type Bundle struct {
	Path         string
	Format       Format
	Name         string // a short name: general.name, the directory or file name
	Model        *model.Model
	Tok          *tokenizer.Tokenizer
	ChatTemplate string // Jinja source, "" if the model has none
	Defaults     Defaults
	Meta         []gguf.KV // GGUF metadata (GGUF files only)

	closers []func() error
}

// Close releases the model's mappings.
func (b *Bundle) Close() error {
	var errs []error
	for i := len(b.closers) - 1; i >= 0; i-- {
		errs = append(errs, b.closers[i]())
	}
	b.closers = nil
	return errors.Join(errs...)
}

// Open detects the format of path and opens it.
func Open(path string, opts Options) (*Bundle, error) {
	fmtName, err := Detect(path)
	if err != nil {
		return nil, err
	}
	var b *Bundle
	dist := opts.Part.TP != nil || opts.Part.Stages > 1
	if dist && fmtName != GGUF {
		return nil, fmt.Errorf("%s: tensor-parallel serving loads GGUF files only, this is %s", path, fmtName)
	}
	switch fmtName {
	case GGUF:
		b, err = openGGUF(path, opts.Part)
	case HF:
		b, err = openHF(path, opts)
	case Llama2C:
		b, err = openLlama2C(path, opts)
	}
	if err != nil {
		return nil, err
	}
	if opts.Tokenizer != "" && fmtName != Llama2C {
		tok, tmpl, err := OpenTokenizer(opts.Tokenizer)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Tok = tok
		if tmpl != "" {
			b.ChatTemplate = tmpl
		}
	}
	if b.Tok != nil && b.Tok.VocabSize() > b.Model.Config.Vocab {
		b.Close()
		return nil, fmt.Errorf("%s: tokenizer has %d tokens but the model's vocabulary is %d", path, b.Tok.VocabSize(), b.Model.Config.Vocab)
	}
	return b, nil
}

// Detect tells a model's format from what is at path.
func Detect(path string) (Format, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	if fi.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "config.json")); err != nil {
			return "", fmt.Errorf("%s: a directory without config.json is not a Hugging Face model directory", path)
		}
		return HF, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("model: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil {
		return "", fmt.Errorf("%s: too short to be a model file (%d bytes)", path, fi.Size())
	}
	switch {
	case bytes.Equal(magic, []byte("GGUF")):
		return GGUF, nil
	case strings.HasSuffix(path, ".bin"):
		return Llama2C, nil
	case strings.HasSuffix(path, ".safetensors") || strings.HasSuffix(path, ".json"):
		return "", fmt.Errorf("%s: pass the Hugging Face model directory, not one of its files", path)
	}
	return "", fmt.Errorf("%s: unknown model format (not GGUF, not a llama2.c .bin, not a Hugging Face directory)", path)
}

func openGGUF(path string, part model.Part) (*Bundle, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Path: path, Format: GGUF, Meta: f.KVs, closers: []func() error{f.Close}}
	if part.TP != nil || part.Stages > 1 {
		b.Model, err = model.LoadGGUFPart(f, part)
	} else {
		b.Model, err = model.LoadGGUF(f)
	}
	if err != nil {
		b.Close()
		return nil, err
	}
	b.Name, _ = f.String("general.name")
	if b.Name == "" {
		b.Name = strings.TrimSuffix(filepath.Base(path), ".gguf")
	}
	if _, ok := f.Strings("tokenizer.ggml.tokens"); ok {
		v, err := tokenizer.VocabFromGGUF(f)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if b.Tok, err = tokenizer.New(v); err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	b.ChatTemplate, _ = f.String("tokenizer.chat_template")
	b.Defaults = ggufDefaults(f)
	return b, nil
}

func openLlama2C(path string, opts Options) (*Bundle, error) {
	m, err := model.LoadLlama2C(path)
	if err != nil {
		return nil, err
	}
	b := &Bundle{Path: path, Format: Llama2C, Model: m, closers: []func() error{m.Close}}
	b.Name = strings.TrimSuffix(filepath.Base(path), ".bin")
	tokPath := opts.Tokenizer
	if tokPath == "" {
		tokPath, err = tokenizer.FindLlama2CTokenizer(path)
		if err != nil {
			b.Close()
			return nil, err
		}
	}
	if strings.HasSuffix(tokPath, ".bin") {
		v, err := tokenizer.VocabFromLlama2C(tokPath, m.Config.Vocab)
		if err != nil {
			b.Close()
			return nil, err
		}
		b.Tok, err = tokenizer.New(v)
		if err != nil {
			b.Close()
			return nil, fmt.Errorf("%s: %w", tokPath, err)
		}
		return b, nil
	}
	b.Tok, b.ChatTemplate, err = OpenTokenizer(tokPath)
	if err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}
