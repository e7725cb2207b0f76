// Flags shared by the commands that run a model: --model, --tokenizer, --threads and the
// sampling flags (named as in llama.cpp and vLLM).
package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/sample"
)

type modelFlags struct {
	model     string
	tokenizer string
	threads   int
	w8a8      w8a8Flags
	kvDType   string
	part      model.Part // the part of a distributed group's model this rank serves (serve_parallel.go)
	outType   string     // --output-tensor-type
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&m.model, "model", "", "model: a GGUF file, a Hugging Face directory or a llama2.c .bin (default: the built-in default model, see llmcloud models)")
	fs.StringVar(&m.tokenizer, "tokenizer", "", "tokenizer to use instead of the model's own (tokenizer.json, tokenizer.bin, GGUF, HF dir)")
	fs.IntVar(&m.threads, "threads", runtime.NumCPU(), "compute threads (worker pool size)")
	m.w8a8.register(fs)
	registerKVDType(fs, &m.kvDType)
	fs.StringVar(&m.outType, "output-tensor-type", "", outputTypeHelp)
}

// useDefault points m at the built-in default model (package defaultmodel) when no model was
// given, and logs that it does.
func (m *modelFlags) useDefault(log *slog.Logger) error {
	if m.model != "" {
		return nil
	}
	p, err := defaultModel(log)
	m.model = p
	return err
}

// defaultModel returns the file of the built-in default model (package defaultmodel) and logs,
// in one line, that the command uses it.
func defaultModel(log *slog.Logger) (string, error) {
	p, err := defaultmodel.Path()
	if err != nil {
		return "", err
	}
	log.Info("no model given: using the built-in default model (`llmcloud models` describes it)", "model", defaultmodel.Name, "path", p)
	return p, nil
}

// textLog is the commands' logger: slog's text lines on w (stderr).
func textLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func (m *modelFlags) open() (*loader.Bundle, error) {
	if m.model == "" {
		return nil, usagef("--model is required")
	}
	b, err := loader.Open(m.model, loader.Options{Tokenizer: m.tokenizer, Part: m.part})
	if err != nil {
		return nil, err
	}
	if b.Tok == nil {
		b.Close()
		return nil, fmt.Errorf("%s: the model has no tokenizer; pass --tokenizer FILE", m.model)
	}
	if m.threads < 1 {
		b.Close()
		return nil, usagef("--threads must be at least 1")
	}
	b.Model.Pool = kernels.NewPool(m.threads)
	if err := m.w8a8.apply(b); err != nil {
		b.Close()
		return nil, err
	}
	if err := applyOutputType(b, m.outType, m.w8a8.log); err != nil {
		b.Close()
		return nil, err
	}
	if err := setKVDType(b.Model, m.kvDType); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// samplingFlags are the sampling settings; a flag left unset takes the model's default
// (generation_config.json or GGUF general.sampling.*) and otherwise temperature 0.8 and top-p
// 0.95 (loader.FallbackTemperature, FallbackTopP) with the rest off.
type samplingFlags struct {
	temperature, topP, minP, repPen, presPen, freqPen float64
	topK                                              int
	seed                                              uint64
	maxTokens                                         int
	stops                                             stringList
	ignoreEOS                                         bool
}

// The five flags a model can set defaults for are registered with zero values, so that their
// help states the default (the model's, else the fallback) rather than a number that may not
// apply; params reads them only when set.
func (s *samplingFlags) register(fs *flag.FlagSet) {
	fs.Float64Var(&s.temperature, "temperature", 0, fmt.Sprintf(
		"sampling temperature, 0 = greedy (default: the model's own, from generation_config.json or GGUF general.sampling.temp, else %g)", loader.FallbackTemperature))
	fs.Float64Var(&s.topP, "top-p", 0, fmt.Sprintf(
		"nucleus sampling: keep the most likely tokens up to this probability mass, 1 = off (default: the model's, else %g)", loader.FallbackTopP))
	fs.IntVar(&s.topK, "top-k", 0, "keep only the K most likely tokens, 0 = all (default: the model's, else 0)")
	fs.Float64Var(&s.minP, "min-p", 0, "drop tokens less likely than min-p times the most likely one (default: the model's, else 0)")
	fs.Float64Var(&s.repPen, "repetition-penalty", 0, "penalize tokens already in the prompt or output, 1 = off (default: the model's, else 1)")
	fs.Float64Var(&s.presPen, "presence-penalty", 0, "OpenAI presence penalty")
	fs.Float64Var(&s.freqPen, "frequency-penalty", 0, "OpenAI frequency penalty")
	fs.Uint64Var(&s.seed, "seed", 0, "random seed (same seed, same output)")
	fs.IntVar(&s.maxTokens, "max-tokens", 128, "maximum tokens to generate")
	fs.Var(&s.stops, "stop", "stop string (repeatable)")
	fs.BoolVar(&s.ignoreEOS, "ignore-eos", false, "keep generating past end-of-sequence tokens")
}

// params merges the flags the user set with the model's defaults (d.Params: the fallback
// where the model has none).
func (s *samplingFlags) params(fs *flag.FlagSet, d loader.Defaults) sample.Params {
	p := d.Params()
	p.PresencePenalty, p.FrequencyPenalty, p.Seed = s.presPen, s.freqPen, s.seed
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "temperature":
			p.Temperature = s.temperature
		case "top-p":
			p.TopP = s.topP
		case "top-k":
			p.TopK = s.topK
		case "min-p":
			p.MinP = s.minP
		case "repetition-penalty":
			p.RepetitionPenalty = s.repPen
		}
	})
	return p
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// openModelArg opens the MODEL of a command taking one optional positional argument: pos[0],
// or the built-in default model (said on stderr) when none is given.
func openModelArg(pos []string, stderr io.Writer) (*loader.Bundle, error) {
	var path string
	switch len(pos) {
	case 0:
		p, err := defaultModel(textLog(stderr))
		if err != nil {
			return nil, err
		}
		path = p
	case 1:
		path = pos[0]
	default:
		return nil, usagef("want one MODEL (GGUF file, Hugging Face directory or llama2.c .bin) or none (the built-in default model), got %d arguments", len(pos))
	}
	return loader.Open(path, loader.Options{})
}
