// This file implements PeakFLOPS: the measured f32 FMA peak of this machine, the denominator
// of the trainer's MFU.
package kernels

import (
	"runtime"
	"sync"
	"time"
)

// PeakFLOPS measures the f32 peak of `threads` cores in FLOP/s, on the vector width Gemm
// uses: AVX-512 (16 lanes) where the CPU has it, else AVX2 (8 lanes). Each of `threads`
// goroutines (locked to an OS thread, all running at once) times 60 bursts of ~2 ms of a
// register-only loop of 12 independent FMAs (2 flops per lane) and keeps its fastest burst;
// the result is the sum of the threads' best rates. Taking each thread's best burst makes the
// number robust to other processes sharing the machine (a burst that was not preempted runs
// at the core's full rate). On a machine without the assembly it returns 0.
//
// The trainer's MFU is its achieved model FLOP/s (nn.Model.FLOPsPerToken x tokens/s) divided
// by PeakFLOPS(threads).
func PeakFLOPS(threads int) float64 {
	if !useTrainAsm {
		return 0
	}
	threads = max(threads, 1)
	fmaLoop, flopsPerIter := fmaPeak, 12*8*2.0
	if trainKernel.nr == kernelAVX512.nr {
		fmaLoop, flopsPerIter = fmaPeak512, 12*16*2.0
	}
	// Calibrate: iterations in ~2 ms.
	iters := 1 << 10
	for {
		t0 := time.Now()
		fmaLoop(iters)
		if d := time.Since(t0); d > time.Millisecond {
			iters = int(float64(iters) * float64(2*time.Millisecond) / float64(d))
			break
		}
		iters *= 2
	}
	best := make([]float64, threads)
	var wg sync.WaitGroup
	wg.Add(threads)
	for i := range threads {
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for range 60 {
				t0 := time.Now()
				fmaLoop(iters)
				best[i] = max(best[i], float64(iters)*flopsPerIter/time.Since(t0).Seconds())
			}
		}()
	}
	wg.Wait()
	var sum float64
	for _, b := range best {
		sum += b
	}
	return sum
}
