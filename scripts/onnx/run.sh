#!/usr/bin/env bash
# Exports models with `llmcloud export --onnx` and checks them with ONNX Runtime
# (check.mjs: onnxruntime-node, CPU) against llmcloud's own logits for the same token ids, two
# sequences of 16 tokens per model, max relative error <= 1e-4 (docs/onnx.md):
#   stories  testdata/models/stories260K (llama2.c: pairwise RoPE, 8 query heads over 4 KV
#            heads, tied output), exported without and with a KV cache (--kv-cache: check.mjs
#            also feeds a sequence in chunks through the cache)
#   qwen3    a random Qwen3-shaped model (`llmcloud synth`, the real Qwen tokenizer's
#            vocabulary): per-head q/k RMSNorm, neox RoPE, 2 query heads over 1 KV head
#   qwen2    a random Qwen2-shaped model: q/k/v biases, neox RoPE, 4 heads over 2; KV cache
#   rand3M   testdata/models/rand3M's Q4_K_M file (8 heads over 2), exported with its weights
#            dequantized and compared with llmcloud running the same file converted to F32
#            (llmcloud's quantized kernels also quantize activations: docs/onnx.md)
# Usage: scripts/onnx/run.sh    (MODELS="stories qwen3" to pick)
# Needs node and npm; installs the locked packages (npm ci) when node_modules is missing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cd "$here"
# onnxruntime-node's postinstall would fetch the CUDA provider from nuget.org; the CPU
# runtime ships in the npm package itself.
export ONNXRUNTIME_NODE_INSTALL=skip
[ -d node_modules ] || npm ci --no-audit --no-fund --silent
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/llmcloud" ./cmd/llmcloud)

# check NAME MODEL IDS [FLAGS...]: export with llmcloud's logits for IDS, then compare in ONNX
# Runtime.
failed=0
check() {
  local t0=$SECONDS name="$1" model="$2" ids="$3"
  shift 3
  if "$tmp/llmcloud" export --onnx "$tmp/$name.onnx" "$model" --reference-ids "$ids" "$@"; then
    node --no-warnings check.mjs "$tmp/$name.onnx" --label "$name" || failed=1
  else
    echo "FAIL [$name] export"; failed=1
  fi
  echo "== $name: $((SECONDS - t0)) s"
}

ids_small="1,403,31,5,288,17,42,99,7,321,64,2,450,12,256,38;1,77,88,99,100,101,102,103,104,105,106,107,108,109,110,111"
ids_qwen="151,9000,33,1000,150000,7,88,12345,4242,2,77,100000,5,66,900,31;42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57"
for m in ${MODELS:-stories qwen3 qwen2 rand3M}; do
  case "$m" in
  stories)
    check stories "$root/testdata/models/stories260K/stories260K.bin" "$ids_small"
    check stories-kv "$root/testdata/models/stories260K/stories260K.bin" "$ids_small" --kv-cache
    ;;
  qwen3)
    "$tmp/llmcloud" synth --arch qwen3 --dim 32 --layers 1 --heads 2 --kv-heads 1 --head-dim 16 --ffn 64 \
      --ctx 2048 --tokenizer "$root/testdata/models/qwen2-tokenizer" -o "$tmp/qwen3" >/dev/null
    check qwen3 "$tmp/qwen3" "$ids_qwen"
    ;;
  qwen2)
    "$tmp/llmcloud" synth --arch qwen2 --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 96 --tied \
      --ctx 512 --seed 3 --vocab 512 -o "$tmp/qwen2" >/dev/null
    check qwen2-kv "$tmp/qwen2" "$ids_small" --kv-cache
    ;;
  rand3M)
    t0=$SECONDS
    q="$root/testdata/models/rand3M/rand3M-q4_k_m.gguf"
    "$tmp/llmcloud" convert "$q" "$tmp/rand3M-f32.gguf" --type f32 >/dev/null
    if "$tmp/llmcloud" export --onnx "$tmp/rand3M-f32.onnx" "$tmp/rand3M-f32.gguf" --reference-ids "$ids_small" &&
      "$tmp/llmcloud" export --onnx "$tmp/rand3M.onnx" "$q"; then
      node --no-warnings check.mjs "$tmp/rand3M.onnx" "$tmp/rand3M-f32.onnx.reference.json" --label rand3M-q4_k_m || failed=1
    else
      echo "FAIL [rand3M] export"; failed=1
    fi
    echo "== rand3M: $((SECONDS - t0)) s"
    ;;
  *) echo "unknown model $m (stories, qwen3, qwen2, rand3M)"; exit 2 ;;
  esac
done
exit "$failed"
