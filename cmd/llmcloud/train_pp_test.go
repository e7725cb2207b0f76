// Faults in a pipeline-parallel run through the real CLI: killing the middle stage of a
// three-stage pipeline makes both neighbours exit by themselves, naming it, within --timeout.
package main

import "testing"

func TestTrainNprocPipelineStageKilled(t *testing.T) {
	killRankOne(t, 3, "--pp", "3", "--layers", "3", "--micro-batches", "4")
}
