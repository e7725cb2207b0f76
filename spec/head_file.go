// This file is the learned draft head's definition and file: K Medusa-1 heads on top of a
// frozen target, head j (0-based) guessing the token j+1 places after the target's next one
// from the target's final hidden state h (after the output norm): z = h + SiLU(W_j·h + b_j),
// then the target's own output matrix turns z into logits. With token input (Hydra-like),
// head j also reads the embedding x of the token before the one it guesses (the sequence's
// last token for head 0, draft j-1 after it): z = h + SiLU(W_j·h + U_j·x + b_j), so the heads
// draft as a chain. The file is a GGUF of tensors medusa.{j}.weight [Dim, Dim],
// medusa.{j}.token_weight [Dim, Dim] (with token input) and medusa.{j}.bias [Dim] with the
// metadata below; package train/drafthead writes it and HeadProposer (head.go) drafts with it.
package spec

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/tensor"
)

// Metadata keys of a draft-head file.
const (
	HeadArch       = "medusa" // general.architecture
	KeyHeads       = "medusa.heads"
	KeyDim         = "medusa.embedding_length" // the target's Dim
	KeyVocab       = "medusa.vocab_size"       // the target's Vocab
	KeyTarget      = "medusa.target"           // the target's name (informational)
	KeySteps       = "medusa.train_steps"
	KeyValAccuracy = "medusa.val_accuracy" // per head: top-1 agreement on validation data
	KeyTokenInput  = "medusa.token_input"  // bool: the heads read the previous token's embedding
)

// Head is K draft heads for a target of width Dim and vocabulary Vocab.
type Head struct {
	Dim, Vocab int
	Target     string
	W, B       [][]float32 // per head: W [Dim*Dim] row-major (out i = Σ_k W[i*Dim+k]·h[k]), B [Dim]
	U          [][]float32 // per head: the token input's matrix [Dim*Dim]; nil: no token input
	Steps      int
	ValAcc     []float32 // per head, from training (nil if unknown)
}

// NewHead returns k heads for dim and vocab, initialised to zero: every head starts as the
// identity (z = h + SiLU(0) = h), guessing what the target's own next-token row guesses.
func NewHead(dim, vocab, k int, target string) *Head {
	h := &Head{Dim: dim, Vocab: vocab, Target: target}
	for range k {
		h.W = append(h.W, make([]float32, dim*dim))
		h.B = append(h.B, make([]float32, dim))
	}
	return h
}

// EnableTokenInput gives every head a token input, its matrix zero (no effect until trained).
func (h *Head) EnableTokenInput() {
	h.U = nil
	for range h.K() {
		h.U = append(h.U, make([]float32, h.Dim*h.Dim))
	}
}

// TokenInput reports whether the heads read the previous token's embedding.
func (h *Head) TokenInput() bool { return h.U != nil }

// K is the number of heads.
func (h *Head) K() int { return len(h.W) }

// Forward computes head j's z for rows of hidden ([rows, Dim]) into z ([rows, Dim]) on pool
// (nil: kernels.Serial); a ([rows, Dim]) receives the pre-activation W_j·h (+ U_j·x) + b_j.
// emb holds the rows' previous-token embeddings [rows, Dim] with token input (else unused).
func (h *Head) Forward(pool *kernels.Pool, j int, hidden, emb, a, z []float32, rows int) {
	if pool == nil {
		pool = kernels.Serial
	}
	D := h.Dim
	pool.Gemm(rows, D, D, kernels.Mat{Data: hidden, Stride: D}, kernels.Mat{Data: h.W[j], Stride: D, T: true}, a, D, false)
	if h.U != nil {
		pool.Gemm(rows, D, D, kernels.Mat{Data: emb, Stride: D}, kernels.Mat{Data: h.U[j], Stride: D, T: true}, a, D, true)
	}
	b := h.B[j]
	for r := range rows {
		ar, zr, x := a[r*D:(r+1)*D], z[r*D:(r+1)*D], hidden[r*D:(r+1)*D]
		for i := range D {
			ar[i] += b[i]
			zr[i] = x[i] + Silu(ar[i])
		}
	}
}

// Silu is x·σ(x).
func Silu(x float32) float32 { return x / (1 + float32(math.Exp(float64(-x)))) }

// Save writes h as a GGUF file of F32 tensors.
func (h *Head) Save(path string) error { return h.SaveAs(path, tensor.F32) }

// SaveAs writes h as a GGUF file with its matrices in dtype (F32 or F16; biases stay F32).
func (h *Head) SaveAs(path string, dtype tensor.DType) error {
	if dtype != tensor.F32 && dtype != tensor.F16 {
		return fmt.Errorf("spec: draft head: type %v, want F32 or F16", dtype)
	}
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: gguf.Str(HeadArch)},
		{Key: KeyHeads, Value: gguf.U32(uint32(h.K()))},
		{Key: KeyDim, Value: gguf.U32(uint32(h.Dim))},
		{Key: KeyVocab, Value: gguf.U32(uint32(h.Vocab))},
		{Key: KeyTarget, Value: gguf.Str(h.Target)},
		{Key: KeySteps, Value: gguf.U32(uint32(h.Steps))},
		{Key: KeyTokenInput, Value: gguf.Bool(h.TokenInput())},
	}
	if h.ValAcc != nil {
		kvs = append(kvs, gguf.KV{Key: KeyValAccuracy, Value: gguf.F32Array(h.ValAcc)})
	}
	var ts []tensor.Tensor
	for j := range h.K() {
		mats := []tensor.Tensor{f32(fmt.Sprintf("medusa.%d.weight", j), h.W[j], h.Dim, h.Dim)}
		if h.U != nil {
			mats = append(mats, f32(fmt.Sprintf("medusa.%d.token_weight", j), h.U[j], h.Dim, h.Dim))
		}
		for _, w := range mats {
			if dtype != tensor.F32 {
				c, err := tensor.Convert(&w, dtype)
				if err != nil {
					return fmt.Errorf("spec: draft head: %w", err)
				}
				w = *c
			}
			ts = append(ts, w)
		}
		ts = append(ts, f32(fmt.Sprintf("medusa.%d.bias", j), h.B[j], h.Dim))
	}
	return gguf.WriteFile(path, kvs, ts)
}

func f32(name string, v []float32, shape ...int) tensor.Tensor {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return tensor.Tensor{Name: name, Type: tensor.F32, Shape: shape, Data: b}
}

// LoadHead reads a draft-head file written by Save.
func LoadHead(path string) (*Head, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spec: draft head: %w", err)
	}
	defer f.Close()
	if arch, _ := f.String("general.architecture"); arch != HeadArch {
		return nil, fmt.Errorf("spec: draft head %s: general.architecture %q, want %q", path, arch, HeadArch)
	}
	k, ok1 := f.Uint(KeyHeads)
	dim, ok2 := f.Uint(KeyDim)
	vocab, ok3 := f.Uint(KeyVocab)
	if !ok1 || !ok2 || !ok3 || k == 0 || k > 64 || dim == 0 || dim > 1<<17 || vocab == 0 {
		return nil, fmt.Errorf("spec: draft head %s: bad or missing %s/%s/%s", path, KeyHeads, KeyDim, KeyVocab)
	}
	target, _ := f.String(KeyTarget)
	h := NewHead(int(dim), int(vocab), int(k), target)
	if s, ok := f.Uint(KeySteps); ok {
		h.Steps = int(s)
	}
	h.ValAcc, _ = f.Float32s(KeyValAccuracy)
	if tok, _ := f.Bool(KeyTokenInput); tok {
		h.EnableTokenInput()
	}
	for j := range h.K() {
		type part struct {
			name string
			dst  []float32
		}
		parts := []part{{fmt.Sprintf("medusa.%d.weight", j), h.W[j]}, {fmt.Sprintf("medusa.%d.bias", j), h.B[j]}}
		if h.U != nil {
			parts = append(parts, part{fmt.Sprintf("medusa.%d.token_weight", j), h.U[j]})
		}
		for _, p := range parts {
			t, ok := f.Tensor(p.name)
			if !ok {
				return nil, fmt.Errorf("spec: draft head %s: no tensor %s", path, p.name)
			}
			v, err := t.Float32()
			if err != nil || len(v) != len(p.dst) {
				return nil, fmt.Errorf("spec: draft head %s: tensor %s has %d values, want %d (%v)", path, p.name, len(v), len(p.dst), err)
			}
			copy(p.dst, v)
		}
	}
	return h, nil
}
