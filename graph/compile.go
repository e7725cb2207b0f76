// This file lists the passes every executor wants: dead code first, then the residual
// add + rms_norm fusion. ServingPipeline (serving.go) runs them before the serving fusions.
package graph

// CompilerPasses are the passes that do not depend on the executor: dead-code elimination and
// the add + rms_norm fusion.
var CompilerPasses = []Pass{DCE, FuseAddNorm}
