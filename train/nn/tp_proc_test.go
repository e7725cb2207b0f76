// This file checks tensor parallelism across real processes (dp1 x tp2, dp2 x tp2, tp4): the test binary re-executes
// itself as the ranks of a job (torchrun's environment, package comm over TCP), each rank a
// tensor-parallel shard of the model, optionally also data parallel (grid dp x tp with
// Megatron's order, tensor-parallel ranks adjacent). Every rank also trains the unsplit model
// in-process on the whole batch and fails unless its losses agree within 1e-5 relative at
// each of 20 SGD steps. A second job kills one rank mid-run: the others must stop with an
// error naming it.
package nn

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/kernels"
)

const tpChildEnv = "LLMCLOUD_NN_TP_SCENARIO"

func TestMain(m *testing.M) {
	if sc := os.Getenv(tpChildEnv); sc != "" {
		if err := runTPRank(sc); err != nil {
			fmt.Println("ERROR:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// tpJob starts n ranks of scenario and returns each rank's combined output and exit error.
func tpJob(t *testing.T, n int, scenario string, env ...string) ([]string, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmds, outs := make([]*exec.Cmd, n), make([]*bytes.Buffer, n)
	for r := range n {
		c := exec.Command(os.Args[0], "-test.run=^$")
		c.Env = append(os.Environ(), tpChildEnv+"="+scenario, "MASTER_ADDR=127.0.0.1",
			"MASTER_PORT="+strconv.Itoa(port), "WORLD_SIZE="+strconv.Itoa(n), "RANK="+strconv.Itoa(r),
			"LOCAL_RANK="+strconv.Itoa(r))
		c.Env = append(c.Env, env...)
		outs[r] = &bytes.Buffer{}
		c.Stdout, c.Stderr = outs[r], outs[r]
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = c
	}
	errs := make([]error, n)
	done := make(chan struct{})
	go func() {
		for r, c := range cmds {
			errs[r] = c.Wait()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		for _, c := range cmds {
			c.Process.Kill()
		}
		<-done
		t.Fatalf("%s: ranks still running after 2 minutes", scenario)
	}
	res := make([]string, n)
	for r := range outs {
		res[r] = outs[r].String()
	}
	return res, errs
}

// TestTPProcesses: dp1 x tp2, dp2 x tp2 and dp1 x tp4 over real processes equal one process.
func TestTPProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	for _, g := range []struct{ world, tp int }{{2, 2}, {4, 2}, {4, 4}} {
		outs, errs := tpJob(t, g.world, "train", "LLMCLOUD_NN_TP="+strconv.Itoa(g.tp))
		for r, err := range errs {
			if err != nil || !strings.Contains(outs[r], "step 19 ") {
				t.Errorf("dp%d x tp%d, rank %d: %v\n%s", g.world/g.tp, g.tp, r, err, outs[r])
			}
		}
		t.Logf("dp%d x tp%d, rank 0:\n%s", g.world/g.tp, g.tp, outs[0])
	}
}

// TestTPProcessDies: rank 1 of a tp2 job exits during step 3; rank 0's Forward/Backward fails
// with a CommError that names rank 1, and it exits instead of hanging.
func TestTPProcessDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	outs, errs := tpJob(t, 2, "die", "LLMCLOUD_NN_TP=2")
	if errs[0] == nil || !strings.Contains(outs[0], "tensor-parallel") || !strings.Contains(outs[0], "rank 1") {
		t.Errorf("rank 0: %v, want an exit with a tensor-parallel error naming rank 1:\n%s", errs[0], outs[0])
	}
	if errs[1] == nil {
		t.Errorf("rank 1 exited cleanly, want its deliberate exit status 3")
	}
	t.Logf("rank 0:\n%s", outs[0])
}

// runTPRank is one rank: world = DP x TP, tensor-parallel ranks adjacent. It trains the
// tensor-parallel model on its DP share of each batch (gradients and loss averaged over DP)
// and the unsplit model on the whole batch, with SGD, and compares the losses at every step.
func runTPRank(scenario string) (err error) {
	env, err := comm.EnvFromOS()
	if err != nil {
		return err
	}
	opts := comm.DefaultOptions()
	opts.Timeout = 30 * time.Second
	world, err := comm.Init(env, opts, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		return err
	}
	defer func() {
		if err == nil { // after a failure, exit at once rather than wait for the peers' goodbye
			err = world.Close()
		}
	}()
	defer CatchComm(&err) // runs before the Close above
	TP, _ := strconv.Atoi(os.Getenv("LLMCLOUD_NN_TP"))
	W := world.Size()
	if TP < 1 || W%TP != 0 {
		return fmt.Errorf("world %d is not a multiple of TP %d", W, TP)
	}
	DP := W / TP
	// Every rank makes every group, in the same order; NewGroup returns nil to non-members.
	var tpg, dpg *comm.Group
	join := func(dst **comm.Group, rank func(j int) int, n int) error {
		ranks := make([]int, n)
		for j := range ranks {
			ranks[j] = rank(j)
		}
		g, err := world.NewGroup(ranks)
		if g != nil {
			*dst = g
		}
		return err
	}
	for d := range DP {
		if err := join(&tpg, func(j int) int { return d*TP + j }, TP); err != nil {
			return err
		}
	}
	for i := range TP {
		if err := join(&dpg, func(j int) int { return j*TP + i }, DP); err != nil {
			return err
		}
	}
	const B, T, steps, lr, seed = 4, 8, 20, 0.3, 7
	cfg := tpConfig(false)
	pool := kernels.NewPool(1)
	ref, err := New(cfg, B, T, pool)
	if err != nil {
		return err
	}
	m, err := NewTP(cfg, B/DP, T, pool, tpg)
	if err != nil {
		return err
	}
	ref.Init(seed)
	m.Init(seed)
	d, rows := dpg.Rank(), B/DP*T
	rng := rand.New(rand.NewPCG(8, 8))
	for s := range steps {
		tokens, targets := strideBatch(rng, B, T, cfg.Vocab)
		if scenario == "die" && s == 3 && world.Rank() == 1 {
			os.Exit(3)
		}
		ref.ZeroGrad()
		want := ref.Forward(tokens, targets, B, T)
		ref.Backward()
		sgd(ref, 1, lr)
		m.ZeroGrad()
		loss := []float32{m.Forward(tokens[d*rows:(d+1)*rows], targets[d*rows:(d+1)*rows], B/DP, T)}
		m.Backward()
		_, g := m.Flat()
		if err := errors.Join(dpg.AllReduceSum(g), dpg.AllReduceSum(loss)); err != nil {
			return err
		}
		sgd(m, float32(DP), lr)
		got := loss[0] / float32(DP)
		rel := math.Abs(float64(got-want)) / float64(want)
		fmt.Printf("step %d loss %.7f unsplit %.7f rel %.2g\n", s, got, want, rel)
		if rel > 1e-5 {
			return fmt.Errorf("step %d: loss %g, the unsplit model's %g", s, got, want)
		}
	}
	return nil
}

// sgd sets w -= lr·g/div.
func sgd(m *Model, div, lr float32) {
	w, g := m.Flat()
	for i := range w {
		w[i] -= lr * g[i] / div
	}
}
