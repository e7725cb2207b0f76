// Package nn is the trainer's model: the Llama architecture of package model (same Config, same
// GGUF tensor names and row-major layouts, RoPE on adjacent pairs) with a forward pass that
// keeps its activations and a backward pass written layer by layer by hand, llm.c's way. All
// parameters live in one flat buffer and all gradients in another; every tensor is a view.
// See docs/training.md, "Model forward/backward".
//
// For distributed training (docs/distributed-training.md) the parameters form units: unit 0
// the token embedding, units 1..L the blocks, unit L+1 the final norm and untied output.
// NewWith's Options let the caller supply each unit's weight and gradient storage (Units
// gives the sizes first), get BeforeUse/GradReady hooks around each unit's use in Forward and
// Backward, build one pipeline stage (blocks [lo, hi), K activation slots) driven by
// StageForward/StageBackward, and recompute each block's activations in Backward instead of
// keeping them (Recompute).
//
// This file names the layers' forward/backward pairs, which live in package kernels
// (kernels/train_rows.go, kernels/train_attention.go) so that the graph's training executor
// (graph/exec/trainexec) runs the very same float operations.
package nn

import "github.com/llmcloud/llmcloud/kernels"

var (
	embeddingForward     = kernels.TrainEmbedding
	embeddingBackward    = kernels.TrainEmbeddingGrad
	rmsnormForward       = kernels.TrainRMSNorm
	rmsnormBackward      = kernels.TrainRMSNormGrad
	swigluForward        = kernels.TrainSwiGLU
	swigluBackward       = kernels.TrainSwiGLUGrad
	residualForward      = kernels.TrainResidual
	crossEntropyForward  = kernels.TrainCrossEntropy
	crossEntropyBackward = kernels.TrainCrossEntropyGrad
	linearForward        = kernels.TrainLinear
	linearBackward       = kernels.TrainLinearGrad
	ropeForward          = kernels.TrainRope
	ropeBackward         = kernels.TrainRopeGrad
	attentionForward     = kernels.TrainAttention
	attentionBackward    = kernels.TrainAttentionGrad
	rowChunk             = kernels.TrainRowChunk
)

type attnShape = kernels.AttnShape
