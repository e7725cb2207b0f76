module github.com/llmcloud/llmcloud/kernels/internal/asmgen/bf16

go 1.26.0
