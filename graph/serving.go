// This file lists the passes that prepare a model graph for the serving executor
// (graph/exec): each one's result computes the same floats as its input, faster.
package graph

// ServingPasses are the fusions the serving executor relies on to match the hand-written
// forward's speed, in the order they apply. Dead-code elimination, add+rms_norm fusion and
// memory planning are separate passes that may run before or after these.
func ServingPasses() []Pass {
	return []Pass{FuseMatMulMulti, FuseSwiGLU, FuseQKVRope}
}

// ServingPipeline is every pass the serving path runs: CompilerPasses (dead code, the
// add + rms_norm fusion), then ServingPasses.
func ServingPipeline() []Pass {
	return append(append([]Pass{}, CompilerPasses...), ServingPasses()...)
}
