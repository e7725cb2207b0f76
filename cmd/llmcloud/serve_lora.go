// This file is serve's run-time LoRA flags, as vLLM's: --enable-lora, --lora-modules
// NAME=PATH [NAME=PATH ...] (also repeatable, comma-separated, or vLLM's JSON form
// {"name": ..., "path": ...}), --max-loras and --max-lora-rank.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/server"
)

type loraFlags struct {
	enable  *bool
	modules stringList
	maxLoRA *int
	maxRank *int
	parsed  [][2]string // name, path
}

func registerLoRAFlags(fs *flag.FlagSet) *loraFlags {
	f := &loraFlags{}
	f.enable = fs.Bool("enable-lora", false, "serve run-time LoRA adapters: a request whose model is an adapter's name runs with it (batched with the others), /v1/models lists them, POST /v1/load_lora_adapter and /v1/unload_lora_adapter change them")
	fs.Var(&f.modules, "lora-modules", "adapters to load at start, NAME=PATH (PATH: a PEFT directory or a llama.cpp GGUF adapter; several after one flag, repeatable, comma-separated, or {\"name\":...,\"path\":...})")
	f.maxLoRA = fs.Int("max-loras", 8, "adapters loaded at once at most (loading another is refused until one is unloaded)")
	f.maxRank = fs.Int("max-lora-rank", 16, "largest adapter rank accepted")
	return f
}

// takeModules moves the NAME=PATH positional arguments that follow --lora-modules in args
// (vLLM's nargs='+' form) into the modules, returning the other positional arguments.
func (f *loraFlags) takeModules(pos []string) []string {
	var rest []string
	for _, p := range pos {
		if name, path, ok := strings.Cut(p, "="); ok && name != "" && path != "" && !strings.ContainsAny(name, "/\\") {
			if _, err := os.Stat(p); err != nil { // not a model file whose name holds '='
				f.modules = append(f.modules, p)
				continue
			}
		}
		rest = append(rest, p)
	}
	return rest
}

// parse checks the flags; the registry is nil without --enable-lora.
func (f *loraFlags) parse() (*lora.Registry, error) {
	for _, v := range f.modules {
		if strings.HasPrefix(strings.TrimSpace(v), "{") {
			var j struct{ Name, Path string }
			if err := json.Unmarshal([]byte(v), &j); err != nil || j.Name == "" || j.Path == "" {
				return nil, usagef("--lora-modules %s: want {\"name\": ..., \"path\": ...}", v)
			}
			f.parsed = append(f.parsed, [2]string{j.Name, j.Path})
			continue
		}
		for _, m := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
			name, path, ok := strings.Cut(m, "=")
			if !ok || name == "" || path == "" {
				return nil, usagef("--lora-modules %q: want NAME=PATH", m)
			}
			f.parsed = append(f.parsed, [2]string{name, path})
		}
	}
	if !*f.enable {
		if len(f.parsed) > 0 {
			return nil, usagef("--lora-modules needs --enable-lora")
		}
		return nil, nil
	}
	if *f.maxRank <= 0 || *f.maxRank > lora.MaxRank {
		return nil, usagef("--max-lora-rank %d: want 1..%d", *f.maxRank, lora.MaxRank)
	}
	if *f.maxLoRA <= 0 {
		return nil, usagef("--max-loras %d: want at least 1", *f.maxLoRA)
	}
	return &lora.Registry{MaxLoRAs: *f.maxLoRA, MaxRank: *f.maxRank}, nil
}

// load loads the --lora-modules into reg for the base b and gives the engine the registry.
func (f *loraFlags) load(reg *lora.Registry, b *loader.Bundle, eo *engine.Options, log *slog.Logger) error {
	if reg == nil {
		return nil
	}
	eo.LoRA = reg
	for _, m := range f.parsed {
		if _, err := server.LoadAdapter(reg, b.Model, m[0], m[1]); err != nil {
			return fmt.Errorf("--lora-modules %s=%s: %w", m[0], m[1], err)
		}
		log.Info("LoRA adapter", "name", m[0], "path", m[1])
	}
	return nil
}
