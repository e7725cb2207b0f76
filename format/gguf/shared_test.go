// Tests against the real GGUF files in testdata/models: metadata, tensor counts, shapes and
// types as documented in models/README.md, and byte-identical re-serialization.
package gguf

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tensor"
)

func sharedGGUFs(t *testing.T) []string {
	root := fixture.Path(t, "models")
	var files []string
	for _, dir := range []string{"rand3M", "stories260K", "llamacpp-vocab"} {
		m, _ := filepath.Glob(filepath.Join(root, dir, "*.gguf"))
		files = append(files, m...)
	}
	if len(files) < 18 {
		t.Fatalf("found %d GGUF files under %s, want 18 (6 rand3M, 2 stories260K, 10 vocab)", len(files), root)
	}
	return files
}

func TestRand3MFiles(t *testing.T) {
	cases := []struct {
		file     string
		weight   tensor.DType
		fileType uint64
	}{
		{"rand3M-f32.gguf", tensor.F32, 0},
		{"rand3M-f16.gguf", tensor.F16, 1},
		{"rand3M-q8_0.gguf", tensor.Q8_0, 7},
		{"rand3M-q4_0.gguf", tensor.Q4_0, 2},
		{"rand3M-q4_k_m.gguf", tensor.Q4_K, 15},
		{"rand3M-q6_k.gguf", tensor.Q6_K, 18},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := Open(fixture.Path(t, "models", "rand3M", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Version != 3 || f.Alignment != 32 {
				t.Errorf("version %d alignment %d", f.Version, f.Alignment)
			}
			if s, _ := f.String("general.architecture"); s != "llama" {
				t.Errorf("architecture %q", s)
			}
			for key, want := range map[string]uint64{"llama.embedding_length": 256, "llama.feed_forward_length": 768,
				"llama.block_count": 4, "llama.attention.head_count": 8, "llama.attention.head_count_kv": 2,
				"llama.context_length": 512} {
				if got, ok := f.Uint(key); !ok || got != want {
					t.Errorf("%s = %d, %v; want %d", key, got, ok, want)
				}
			}
			if ft, ok := f.Uint("general.file_type"); c.weight != tensor.F32 && (!ok || ft != c.fileType) {
				t.Errorf("general.file_type = %d, %v; want %d", ft, ok, c.fileType)
			}
			if eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon"); !ok || float32(eps) != 1e-5 {
				t.Errorf("rms eps %v", eps)
			}
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			if !ok || len(toks) != 512 || toks[1] != "<s>" {
				t.Errorf("tokens: %d, ok %v", len(toks), ok)
			}
			if tt, ok := f.Int32s("tokenizer.ggml.token_type"); !ok || len(tt) != 512 || tt[0] != 2 {
				t.Errorf("token_type: %v", ok)
			}
			if sc, ok := f.Float32s("tokenizer.ggml.scores"); !ok || len(sc) != 512 {
				t.Errorf("scores: %v", ok)
			}
			if len(f.Tensors) != 39 {
				t.Fatalf("%d tensors, want 39", len(f.Tensors))
			}
			shapes := map[string][]int{
				"token_embd.weight": {512, 256}, "output.weight": {512, 256}, "output_norm.weight": {256},
				"blk.0.attn_q.weight": {256, 256}, "blk.0.attn_k.weight": {64, 256}, "blk.3.attn_v.weight": {64, 256},
				"blk.1.ffn_gate.weight": {768, 256}, "blk.2.ffn_down.weight": {256, 768}, "blk.3.ffn_norm.weight": {256},
			}
			for name, shape := range shapes {
				tt, ok := f.Tensor(name)
				if !ok {
					t.Fatalf("tensor %s missing", name)
				}
				if !slices.Equal(tt.Shape, shape) {
					t.Errorf("%s shape %v, want %v", name, tt.Shape, shape)
				}
			}
			n2D := 0
			for i := range f.Tensors {
				tt := &f.Tensors[i]
				if err := tt.Check(); err != nil {
					t.Error(err)
				}
				want := tensor.F32
				if len(tt.Shape) == 2 {
					want = c.weight
					n2D++
				}
				if tt.Type != want {
					t.Errorf("%s: type %s, want %s", tt.Name, tt.Type, want)
				}
			}
			if n2D != 30 {
				t.Errorf("%d 2-D weights, want 30", n2D)
			}
			// Norm vectors are initialised to 1.0.
			nv, _ := f.Tensor("output_norm.weight")
			vals, err := nv.Float32()
			if err != nil || vals[0] != 1 || vals[255] != 1 {
				t.Errorf("output_norm values %v %v", vals[:2], err)
			}
		})
	}
}

func TestStories260K(t *testing.T) {
	for _, name := range []string{"stories260K-f32.gguf", "stories260K-f16.gguf"} {
		f, err := Open(fixture.Path(t, "models", "stories260K", name))
		if err != nil {
			t.Fatal(err)
		}
		if n, _ := f.Uint("llama.embedding_length"); n != 64 {
			t.Errorf("%s: dim %d", name, n)
		}
		if n, _ := f.Uint("llama.block_count"); n != 5 {
			t.Errorf("%s: layers %d", name, n)
		}
		if len(f.Tensors) != 48 {
			t.Errorf("%s: %d tensors, want 48", name, len(f.Tensors))
		}
		if tt, ok := f.Tensor("blk.4.ffn_down.weight"); !ok || !slices.Equal(tt.Shape, []int{64, 172}) {
			t.Errorf("%s: ffn_down %v", name, tt)
		}
		f.Close()
	}
}

func TestVocabFiles(t *testing.T) {
	root := fixture.Path(t, "models", "llamacpp-vocab")
	files, _ := filepath.Glob(filepath.Join(root, "*.gguf"))
	if len(files) != 10 {
		t.Fatalf("%d vocab files, want 10", len(files))
	}
	for _, p := range files {
		f, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		toks, ok := f.Strings("tokenizer.ggml.tokens")
		if !ok || len(toks) < 1000 {
			t.Errorf("%s: %d tokens", p, len(toks))
		}
		if _, ok := f.String("tokenizer.ggml.model"); !ok {
			t.Errorf("%s: no tokenizer.ggml.model", p)
		}
		if len(f.Tensors) != 0 {
			t.Errorf("%s: %d tensors", p, len(f.Tensors))
		}
		f.Close()
	}
	f, err := Open(filepath.Join(root, "ggml-vocab-gpt-2.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	toks, _ := f.Strings("tokenizer.ggml.tokens")
	merges, _ := f.Strings("tokenizer.ggml.merges")
	bos, _ := f.Uint("tokenizer.ggml.bos_token_id")
	if len(toks) != 50257 || len(merges) != 50000 || bos != 50256 || toks[0] != "!" || merges[0] != "Ġ t" {
		t.Errorf("gpt-2 vocab: %d tokens, %d merges, bos %d", len(toks), len(merges), bos)
	}
}

// TestRewriteIdentical reads every shared GGUF, writes it back with the same KVs and tensors
// and checks the bytes are identical to the original.
func TestRewriteIdentical(t *testing.T) {
	for _, p := range sharedGGUFs(t) {
		orig, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Parse(orig, p)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, f.KVs, f.Tensors); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), orig) {
			i := 0
			for i < min(buf.Len(), len(orig)) && buf.Bytes()[i] == orig[i] {
				i++
			}
			t.Errorf("%s: rewrite differs at byte %d (sizes %d vs %d)", p, i, buf.Len(), len(orig))
		}
	}
}

func TestWriteFileAndOpen(t *testing.T) {
	src, err := Open(fixture.Path(t, "models", "rand3M", "rand3M-q4_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out := filepath.Join(t.TempDir(), "copy.gguf")
	if err := WriteFile(out, src.KVs, src.Tensors); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(src.Path)
	b, _ := os.ReadFile(out)
	if !bytes.Equal(a, b) {
		t.Fatal("WriteFile output differs from the original")
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("temporary file left behind: %v", err)
	}
}
