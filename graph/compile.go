// This file lists the compiler's passes in the order `llmcloud compile` and the runtime apply
// them: dead code first, then fusions. Fusion passes written elsewhere join this list.
package graph

// CompilerPasses are the passes of this file's author (DCE, the add + rms_norm fusion); the
// matmul_multi and swiglu fusions have their own list, and the two are joined in one
// pipeline.
var CompilerPasses = []Pass{DCE, FuseAddNorm}
