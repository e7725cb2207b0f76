// The --kv-cache-dtype flag (vLLM's): the storage type of the model's KV cache, for every
// command that runs a model (kernels/kvcache.go describes the formats).
package main

import (
	"flag"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
)

const kvDTypeHelp = "KV cache storage: auto (= fp32), fp32, fp16, bf16, q8_0 (int8, an f16 scale per 32 values), fp8 (e4m3, an f16 scale per 32 values); the KV memory budget counts its bytes"

func registerKVDType(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "kv-cache-dtype", "auto", kvDTypeHelp)
}

// setKVDType gives m's caches the type named s.
func setKVDType(m *model.Model, s string) error {
	t, err := kernels.ParseKVDType(s)
	if err != nil {
		return usagef("--kv-cache-dtype: %v", err)
	}
	return m.SetKVCacheDType(t)
}
