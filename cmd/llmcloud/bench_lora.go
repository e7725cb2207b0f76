// This file is `bench throughput`'s multi-LoRA load: requests spread round-robin over
// adapters given as files (--lora-modules) or made at random on the model's shape
// (--lora-random N with --lora-ranks), served at once by the engine's run-time adapters.
package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/perf"
	"github.com/llmcloud/llmcloud/server"
)

type benchLoRAFlags struct {
	modules stringList
	random  *int
	ranks   *string
	targets *string
	amp     *float64
	base    *bool
}

func registerBenchLoRAFlags(fs *flag.FlagSet) *benchLoRAFlags {
	f := &benchLoRAFlags{}
	fs.Var(&f.modules, "lora-modules", "spread the requests over these LoRA adapters, NAME=PATH (repeatable or comma-separated)")
	f.random = fs.Int("lora-random", 0, "spread the requests over this many random LoRA adapters made on the model's shape")
	f.ranks = fs.String("lora-ranks", "8,16", "ranks of the random adapters, cycled")
	f.targets = fs.String("lora-target-modules", "q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", "modules the random adapters adapt")
	f.amp = fs.Float64("lora-amp", 0.02, "random adapters' A and B uniform in ±amp")
	f.base = fs.Bool("lora-include-base", false, "also send every (adapters+1)-th request to the base model")
	return f
}

// setup loads the adapters into a registry given to the engine, and sets the requests' ids.
func (f *benchLoRAFlags) setup(b *loader.Bundle, o *perf.ThroughputOptions, stdout io.Writer) error {
	if len(f.modules) == 0 && *f.random == 0 {
		return nil
	}
	reg := &lora.Registry{}
	for _, v := range f.modules {
		for _, m := range strings.Split(v, ",") {
			name, path, ok := strings.Cut(m, "=")
			if !ok {
				return usagef("--lora-modules %q: want NAME=PATH", m)
			}
			id, err := server.LoadAdapter(reg, b.Model, name, path)
			if err != nil {
				return err
			}
			o.Adapters = append(o.Adapters, id)
		}
	}
	var ranks []int
	for _, s := range strings.Split(*f.ranks, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || r <= 0 || r > lora.MaxRank {
			return usagef("--lora-ranks %q: want ranks 1..%d", *f.ranks, lora.MaxRank)
		}
		ranks = append(ranks, r)
	}
	for i := 0; i < *f.random; i++ {
		r := ranks[i%len(ranks)]
		a, err := lora.Random(fmt.Sprintf("random-%d", i), &b.Model.Config, strings.Split(*f.targets, ","), r, 2*float64(r), float32(*f.amp), uint64(i+1))
		if err != nil {
			return err
		}
		id, err := reg.Add(a.Name, "", a)
		if err != nil {
			return err
		}
		o.Adapters = append(o.Adapters, id)
	}
	if *f.base {
		o.Adapters = append(o.Adapters, 0)
	}
	o.Engine.LoRA = reg
	fmt.Fprintf(stdout, "LoRA: requests spread over %d adapters (ids %v; 0 = the base model)\n", len(reg.List()), o.Adapters)
	return nil
}
