// Tests that a step through the graph executor is the step train/nn's hand-written layers took:
// from the same weights (nn.Model.Init) and batches, two accumulated steps give the loss, the
// logits and every parameter's gradient (their L2 norm and a random projection) that those
// layers gave at main be94aba, recorded in testdata/nn_step.golden (the layers are gone: the
// file cannot be regenerated).
package trainexec_test

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph/exec/trainexec"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// tinyConfigs are the llama shapes train/nn trains: grouped-query heads with tied embeddings,
// multi-head untied with Llama 3 RoPE scaling, and a wider multi-query one.
func tinyConfigs() map[string]model.Config {
	return map[string]model.Config{
		"gqa-tied": {Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, FFN: 64,
			Vocab: 50, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
		"mha-untied": {Arch: "llama", Dim: 48, Layers: 3, Heads: 3, KVHeads: 3, HeadDim: 16, FFN: 96,
			Vocab: 70, CtxLen: 64, RopeTheta: 500000, NormEps: 1e-6,
			RopeScaling: &kernels.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 16}},
		// wide enough for the vectorised Gemm paths, one KV head
		"wide-mqa": {Arch: "llama", Dim: 128, Layers: 2, Heads: 4, KVHeads: 1, HeadDim: 32, FFN: 352,
			Vocab: 300, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true},
	}
}

// newPair builds an nn.Model with Init(seed) (the weights) and a graph program bound to a copy
// of its weights with gradients of its own.
func newPair(t testing.TB, cfg model.Config, B, T int, pool *kernels.Pool) (*nn.Model, *trainexec.Program, []trainexec.Param) {
	t.Helper()
	m, err := nn.New(cfg, B, T, pool)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(7)
	var params []trainexec.Param
	for _, p := range m.Params() {
		params = append(params, trainexec.Param{Name: p.Name, W: append([]float32(nil), p.W...), G: make([]float32, len(p.G))})
	}
	prog, err := trainexec.ForModel(cfg, params, B, T, pool)
	if err != nil {
		t.Fatal(err)
	}
	return m, prog, params
}

func batch(r *rand.Rand, V, n int) (tok, tgt []int32) {
	tok, tgt = make([]int32, n), make([]int32, n)
	for i := range tok {
		tok[i], tgt[i] = int32(r.IntN(V)), int32(r.IntN(V))
	}
	return tok, tgt
}

const nnStepGolden = "testdata/nn_step.golden"

// checksum is x's L2 norm and its dot product with a fixed pseudo-random N(0,1) vector.
func checksum(x []float32) [2]float64 {
	r := rand.New(rand.NewPCG(1, 1))
	var norm, proj float64
	for _, v := range x {
		norm += float64(v) * float64(v)
		proj += float64(v) * r.NormFloat64()
	}
	return [2]float64{math.Sqrt(norm), proj}
}

// stepRecord is what a step is compared by: "<case> <step> loss", "... logits", "... <param>".
type stepRecord map[string][2]float64

// runSteps runs two accumulated steps of B x T through prog (targets of the first row changed
// when perturb) and records them.
func runSteps(t *testing.T, name string, cfg model.Config, perturb bool) stepRecord {
	pool := kernels.NewPool(2)
	B, T := 3, 37
	m, prog, params := newPair(t, cfg, B, T, pool)
	r := rand.New(rand.NewPCG(1, 2))
	rec := stepRecord{}
	for step := 0; step < 2; step++ { // the second accumulates into the first's gradients
		tok, tgt := batch(r, cfg.Vocab, B*T)
		if perturb {
			tgt[0] = (tgt[0] + 1) % int32(cfg.Vocab)
		}
		loss := prog.Forward(tok, tgt, B, T)
		prog.Backward()
		key := fmt.Sprintf("%s %d ", name, step)
		rec[key+"loss"] = [2]float64{float64(loss)}
		rec[key+"logits"] = checksum(prog.Logits()[:B*T*cfg.Vocab])
		for i, p := range m.Params() {
			rec[key+p.Name] = checksum(params[i].G)
		}
	}
	return rec
}

// mismatches lists the entries of got that differ from want: a loss by more than 1e-6
// relative, a norm or projection by more than 1e-5 of the norm.
func mismatches(got, want stepRecord) []string {
	var bad []string
	for k, g := range got {
		w, ok := want[k]
		tol := 1e-5 * w[0]
		if strings.HasSuffix(k, " loss") {
			tol = 1e-6 * w[0]
		}
		if !ok || math.Abs(g[0]-w[0]) > tol || math.Abs(g[1]-w[1]) > tol {
			bad = append(bad, fmt.Sprintf("%s: %v, hand-written %v", k, g, w))
		}
	}
	return bad
}

func TestStepMatchesNN(t *testing.T) {
	want := readStepGolden(t)
	for name, cfg := range tinyConfigs() {
		t.Run(name, func(t *testing.T) {
			got := runSteps(t, name, cfg, false)
			if len(got) < 8 {
				t.Fatalf("%d records", len(got))
			}
			for _, m := range mismatches(got, want) {
				t.Error(m)
			}
		})
	}
}

// The comparison above can fail: the gradients of a different batch differ.
func TestStepComparisonCanFail(t *testing.T) {
	got := runSteps(t, "gqa-tied", tinyConfigs()["gqa-tied"], true)
	if bad := mismatches(got, readStepGolden(t)); len(bad) < len(got)/2 {
		t.Fatalf("%d of %d records differ after changing a target: %v", len(bad), len(got), bad)
	}
}

// readStepGolden reads "<case> <step> <what> <a> <b>" lines (the loss's float32 bits in hex
// for "loss").
func readStepGolden(t *testing.T) stepRecord {
	t.Helper()
	f, err := os.Open(nnStepGolden)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec := stepRecord{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var name, what string
		var step int
		var v [2]float64
		if strings.Contains(line, " loss ") {
			var bits uint32
			if _, err := fmt.Sscanf(line, "%s %d loss %x", &name, &step, &bits); err != nil {
				t.Fatalf("%s: bad line %q", nnStepGolden, line)
			}
			what, v[0] = "loss", float64(math.Float32frombits(bits))
		} else if _, err := fmt.Sscanf(line, "%s %d %s %g %g", &name, &step, &what, &v[0], &v[1]); err != nil {
			t.Fatalf("%s: bad line %q", nnStepGolden, line)
		}
		rec[fmt.Sprintf("%s %d %s", name, step, what)] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rec
}
