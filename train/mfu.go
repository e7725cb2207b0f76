// This file implements the MFU denominator: the machine's peak FLOP/s, measured at the start
// of a run with the run's thread count (see docs/training.md for the MFU definition).
package train

import "github.com/llmcloud/llmcloud/kernels"

// MeasurePeakFLOPS measures the f32 FMA peak of threads compute threads (kernels.PeakFLOPS; 0
// on machines without its assembly, and then no MFU is reported).
func MeasurePeakFLOPS(threads int) float64 { return kernels.PeakFLOPS(threads) }
