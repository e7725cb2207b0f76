// The pipelined shared-memory ring allreduce against a plain reference (the element-wise op
// over every rank's input, computed here), with rings of 2 or 3 tiny slots so that every size
// wraps the rings many times, leaves short and empty chunks, and makes ranks wait on each
// other: ranks are goroutines of this process over real /dev/shm rings.
package comm

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// inProcess returns the world groups of an n-rank job in this process.
func inProcess(t testing.TB, n int, opts Options) []*Group {
	port := freePort(t)
	gs := make([]*Group, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			env := Env{Rank: r, WorldSize: n, MasterAddr: "127.0.0.1", MasterPort: port}
			gs[r], errs[r] = Init(env, opts, nil, nil)
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, g := range gs {
			wg.Go(func() { g.Close() })
		}
		wg.Wait()
	})
	return gs
}

func TestShmRingAllReduceTinySlots(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, n := range []int{2, 3} {
		for _, slots := range []int{2, 3} {
			t.Run(fmt.Sprintf("%dranks/%dslots", n, slots), func(t *testing.T) {
				opts := DefaultOptions()
				opts.Transport, opts.ShmSlots, opts.ShmSlotBytes = SHM, slots, 64 // 16 float32 per slot
				opts.Timeout, opts.SetupTimeout = 30*time.Second, 30*time.Second
				gs := inProcess(t, n, opts)
				sizes := []int{1, 2, 15, 16, 17, 47, 48, 49, 1000}
				for range 6 {
					sizes = append(sizes, 1+rng.IntN(3000))
				}
				for _, count := range sizes {
					for _, op := range []Op{Sum, Max, Min} {
						in := make([][]float32, n)
						for r := range in {
							in[r] = make([]float32, count)
							for i := range in[r] {
								in[r][i] = float32(rng.IntN(2001) - 1000) // integers: sums are exact
							}
						}
						want := make([]float32, count)
						for i := range want {
							want[i] = in[0][i]
							for r := 1; r < n; r++ {
								v := in[r][i]
								switch op {
								case Sum:
									want[i] += v
								case Max:
									want[i] = max(want[i], v)
								case Min:
									want[i] = min(want[i], v)
								}
							}
						}
						errs := make([]error, n)
						var wg sync.WaitGroup
						for r, g := range gs {
							wg.Go(func() { errs[r] = g.AllReduceAlgoAsync(in[r], op, AlgoRing).Wait() })
						}
						wg.Wait()
						for r := range n {
							if errs[r] != nil {
								t.Fatalf("[%d] %v rank %d: %v", count, op, r, errs[r])
							}
							for i, v := range in[r] {
								if v != want[i] {
									t.Fatalf("[%d] %v rank %d element %d: got %v, want %v", count, op, r, i, v, want[i])
								}
							}
						}
					}
				}
			})
		}
	}
}
