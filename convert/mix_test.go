package convert_test

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/tensor"
)

// --type q4_k_m follows llama-quantize's Q4_K_M recipe. On rand3M (4 layers) that makes
// output.weight and the attn_v/ffn_down of blocks 2 and 3 Q6_K (models/README.md), and every
// tensor's bytes must equal llama-quantize's own Q4_K (resp. Q6_K) encoding of the same F32
// weights, which the shared --pure files hold.
func TestQ4KMMix(t *testing.T) {
	src := fixture.Path(t, "models", "rand3M", "rand3M-f32.gguf")
	q4k := openGGUF(t, fixture.Path(t, "models", "rand3M", "rand3M-q4_k_m.gguf"))
	q6k := openGGUF(t, fixture.Path(t, "models", "rand3M", "rand3M-q6_k.gguf"))
	out := filepath.Join(t.TempDir(), "mix.gguf")
	convertFile(t, src, out, convert.Options{Type: "q4_k_m"})
	f := openGGUF(t, out)
	if ft, _ := f.Uint("general.file_type"); ft != 15 {
		t.Errorf("general.file_type = %d, want 15 (Q4_K_M)", ft)
	}
	wantQ6 := map[string]bool{"output.weight": true,
		"blk.2.attn_v.weight": true, "blk.3.attn_v.weight": true,
		"blk.2.ffn_down.weight": true, "blk.3.ffn_down.weight": true}
	n2d := 0
	for i := range f.Tensors {
		got := &f.Tensors[i]
		if len(got.Shape) != 2 {
			if got.Type != tensor.F32 {
				t.Errorf("%s: %s, want F32 for a vector", got.Name, got.Type)
			}
			continue
		}
		n2d++
		ref := q4k
		want := tensor.Q4_K
		if wantQ6[got.Name] {
			ref, want = q6k, tensor.Q6_K
		}
		if got.Type != want {
			t.Errorf("%s: %s, want %s", got.Name, got.Type, want)
			continue
		}
		r, ok := ref.Tensor(got.Name)
		if !ok || !bytes.Equal(r.Data, got.Data) {
			t.Errorf("%s: bytes differ from llama-quantize's %s encoding", got.Name, want)
		}
	}
	if n2d != 30 {
		t.Errorf("%d 2-D weights, want 30", n2d)
	}
}

func openGGUF(t *testing.T, path string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
