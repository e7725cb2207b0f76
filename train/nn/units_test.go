// This file checks units, external storage and hooks against the flat model: gradients
// drained from one shared block gradient buffer by GradReady, weights filled into one shared
// block weight buffer by BeforeUse (ZeRO-3's pattern) giving bit-identical losses and
// gradients, the documented hook order, InitUnit, and the refusal of bad storage.
package nn

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/model"
)

// flatRun returns the losses of two accumulated micro-batches and the resulting gradients of
// a flat model with weights from seed.
func flatRun(t *testing.T, cfg model.Config, B, T int, batches [][2][]int32) (losses []float32, m *Model) {
	t.Helper()
	m, err := New(cfg, B, T, testPool)
	if err != nil {
		t.Fatal(err)
	}
	randomize(m, 5, 0.3)
	for _, b := range batches {
		losses = append(losses, m.Forward(b[0], b[1], B, T))
		m.Backward()
	}
	return losses, m
}

func testBatches(cfg model.Config, B, T, n int) [][2][]int32 {
	r := rand.New(rand.NewPCG(7, 8))
	var out [][2][]int32
	for range n {
		out = append(out, [2][]int32{randTokens(r, B*T, cfg.Vocab), randTokens(r, B*T, cfg.Vocab)})
	}
	return out
}

// TestExternalStorage points every block's G at one shared buffer that BeforeUse(backward)
// loads with the block's gradients accumulated so far and GradReady copies out, over two
// micro-batches; with gatherW, every block's W is also one shared buffer that BeforeUse fills
// from the block's full weights (kept elsewhere) before each use: ZeRO-3's pattern. Losses
// and gradients are bit-identical to the flat model's.
func TestExternalStorage(t *testing.T) {
	for _, tied := range []bool{true, false} {
		for _, gatherW := range []bool{false, true} {
			checkExternalStorage(t, tied, gatherW)
		}
	}
}

func checkExternalStorage(t *testing.T, tied, gatherW bool) {
	cfg := tinyConfig(tied)
	cfg.Layers = 3
	B, T := 2, 5
	batches := testBatches(cfg, B, T, 2)
	wantLoss, flat := flatRun(t, cfg, B, T, batches)
	units, err := Units(cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wbuf, gbuf := make([]float32, units[1].Size), make([]float32, units[1].Size)
	W, G := make([][]float32, len(units)), make([][]float32, len(units))
	drained := make([][]float32, len(units))
	for l := 1; l <= cfg.Layers; l++ {
		G[l], drained[l] = gbuf, make([]float32, units[l].Size)
		if gatherW {
			W[l] = wbuf
		}
	}
	var fills int
	isBlock := func(u int) bool { return u >= 1 && u <= cfg.Layers }
	m, err := NewWith(cfg, B, T, testPool, Options{W: W, G: G,
		BeforeUse: func(u int, backward bool) {
			if gatherW && isBlock(u) {
				w, _ := flat.Unit(u)
				copy(wbuf, w)
				fills++
			}
			if backward && isBlock(u) {
				copy(gbuf, drained[u])
			}
		},
		GradReady: func(u int) {
			if isBlock(u) {
				copy(drained[u], gbuf)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	for u := range units { // the flat model's weights (blocks' come from BeforeUse when gathered)
		if w, _ := m.Unit(u); !gatherW || !isBlock(u) {
			fw, _ := flat.Unit(u)
			copy(w, fw)
		}
	}
	for i, b := range batches {
		if l := m.Forward(b[0], b[1], B, T); l != wantLoss[i] {
			t.Errorf("tied=%v gatherW=%v batch %d: loss %v, flat model %v", tied, gatherW, i, l, wantLoss[i])
		}
		m.Backward()
	}
	if want := 2 * 2 * cfg.Layers; gatherW && fills != want {
		t.Errorf("tied=%v: %d block fills, want %d (each block before each forward and backward)", tied, fills, want)
	}
	for u := range units {
		_, want := flat.Unit(u)
		_, got := m.Unit(u)
		if drained[u] != nil {
			got = drained[u]
		}
		if !slices.Equal(got, want) {
			t.Errorf("tied=%v gatherW=%v unit %d: gradients differ from the flat model's", tied, gatherW, u)
		}
	}
	if _, g := m.Flat(); len(g) != units[0].Size+units[cfg.Layers+1].Size {
		t.Errorf("tied=%v: flat gradient buffer holds %d values, want embedding + head only", tied, len(g))
	}
}

type hookEvent struct {
	unit int
	kind byte // 'f' BeforeUse forward, 'b' BeforeUse backward, 'r' GradReady
}

func recordHooks(log *[]hookEvent) Options {
	return Options{
		BeforeUse: func(u int, backward bool) {
			k := byte('f')
			if backward {
				k = 'b'
			}
			*log = append(*log, hookEvent{u, k})
		},
		GradReady: func(u int) { *log = append(*log, hookEvent{u, 'r'}) },
	}
}

// TestHookOrder checks the documented order for a whole model with 3 blocks.
func TestHookOrder(t *testing.T) {
	f, b, r := byte('f'), byte('b'), byte('r')
	want := map[bool][]hookEvent{
		true: {{0, f}, {1, f}, {2, f}, {3, f}, {4, f}, {0, f},
			{4, b}, {0, b}, {4, r}, {3, b}, {3, r}, {2, b}, {2, r}, {1, b}, {1, r}, {0, r}},
		false: {{0, f}, {1, f}, {2, f}, {3, f}, {4, f},
			{4, b}, {4, r}, {3, b}, {3, r}, {2, b}, {2, r}, {1, b}, {1, r}, {0, b}, {0, r}},
	}
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		cfg.Layers = 3
		var log []hookEvent
		m, err := NewWith(cfg, 1, 4, testPool, recordHooks(&log))
		if err != nil {
			t.Fatal(err)
		}
		m.Init(1)
		bt := testBatches(cfg, 1, 4, 1)[0]
		m.Forward(bt[0], bt[1], 1, 4)
		m.Backward()
		if !slices.Equal(log, want[tied]) {
			t.Errorf("tied=%v: hooks called\n%v\nwant\n%v", tied, log, want[tied])
		}
	}
}

// TestInitUnit checks that InitUnit gives each unit the weights Init gives it, and that Units
// covers the flat layout.
func TestInitUnit(t *testing.T) {
	for _, tied := range []bool{true, false} {
		cfg := tinyConfig(tied)
		m, _ := New(cfg, 1, 4, testPool)
		m.Init(9)
		units, _ := Units(cfg, Options{})
		total := 0
		for u, un := range units {
			w := make([]float32, un.Size)
			if err := InitUnit(cfg, Options{}, u, 9, w); err != nil {
				t.Fatal(err)
			}
			if mw, _ := m.Unit(u); !slices.Equal(w, mw) {
				t.Errorf("tied=%v unit %d: InitUnit differs from Init", tied, u)
			}
			total += un.Size
		}
		if int64(total) != m.NumParams() {
			t.Errorf("tied=%v: units hold %d values, the model %d", tied, total, m.NumParams())
		}
		if err := InitUnit(cfg, Options{}, 1, 9, make([]float32, 3)); err == nil {
			t.Error("InitUnit accepted a buffer of the wrong size")
		}
	}
}

func TestStorageRefusals(t *testing.T) {
	cfg := tinyConfig(true)
	units, _ := Units(cfg, Options{})
	n := len(units)
	short := make([][]float32, n)
	short[1] = make([]float32, units[1].Size-1)
	for name, opt := range map[string]Options{
		"entries":    {W: make([][]float32, n-1)},
		"short W":    {W: short},
		"short G":    {G: short},
		"stage":      {FirstBlock: 1, EndBlock: 1},
		"stage past": {FirstBlock: 0, EndBlock: cfg.Layers + 1},
		"slots":      {Slots: -1},
	} {
		if _, err := NewWith(cfg, 1, 4, testPool, opt); err == nil {
			t.Errorf("%s: NewWith accepted bad options", name)
		}
	}
}

// TestHookFailure: a hook that panics with a *CommError makes StageForward and StageBackward
// return it and Forward panic with it (recovered by CatchComm); other panics are not caught.
func TestHookFailure(t *testing.T) {
	cfg := tinyConfig(true)
	failUnit, failBackward := 2, false
	boom := errors.New("rank 3 died")
	m, err := NewWith(cfg, 1, 4, testPool, Options{BeforeUse: func(u int, backward bool) {
		if u == failUnit && backward == failBackward {
			panic(&CommError{Op: "all-gather", Err: boom})
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	m.Init(1)
	bt := testBatches(cfg, 1, 4, 1)[0]
	if _, _, err := m.StageForward(0, bt[0], bt[1], nil, 1, 4); !errors.Is(err, boom) {
		t.Errorf("StageForward with a failing hook: error %v, want the hook's", err)
	}
	err = func() (err error) {
		defer CatchComm(&err)
		m.Forward(bt[0], bt[1], 1, 4)
		return nil
	}()
	if !errors.Is(err, boom) {
		t.Errorf("Forward with a failing hook: recovered %v, want the hook's", err)
	}
	failUnit, failBackward = 1, true
	if _, _, err := m.StageForward(0, bt[0], bt[1], nil, 1, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := m.StageBackward(0, nil, 1); !errors.Is(err, boom) {
		t.Errorf("StageBackward with a failing hook: error %v, want the hook's", err)
	}
}
