// Tests of convert: logits of synthesized Hugging Face directories and the GGUF files
// converted from them (and back) agree bit for bit; float conversions round-trip every tensor
// byte for byte.
package convert_test

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/generate"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
	"github.com/llmcloud/llmcloud/tokenizer"
)

const prompt = "Once upon a time, a tiny model said hello."

// logits opens path and returns the logits of every position of prompt.
func logits(t *testing.T, path string) ([]float32, []int) {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids := b.Tok.Encode(prompt, true, false)
	c := b.Model.NewCache(len(ids))
	out, err := b.Model.Forward(c, ids, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	return out, ids
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d logits vs %d", what, len(a), len(b))
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s: logit %d differs: %v vs %v", what, i, a[i], b[i])
		}
	}
}

func convertFile(t *testing.T, in, out string, opts convert.Options) {
	t.Helper()
	b, err := loader.Open(in, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := convert.Write(out, convert.FromBundle(b), opts); err != nil {
		t.Fatal(err)
	}
}

func gpt2Vocab(t *testing.T) *tokenizer.Vocab {
	dir := fixture.Path(t, "models", "gpt2-tokenizer")
	v, err := tokenizer.VocabFromGPT2Files(filepath.Join(dir, "vocab.json"), filepath.Join(dir, "merges.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHFGGUFLogitsIdentical(t *testing.T) {
	cases := []struct {
		name string
		o    synth.Options
		gpt2 bool
	}{
		{"llama-gpt2", synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, Seed: 1}, true},
		{"llama3-scaled", synth.Options{Arch: "llama", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, Seed: 5, Tied: true}, false},
		{"qwen2", synth.Options{Arch: "qwen2", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, Tied: true, Seed: 2}, false},
		{"qwen3", synth.Options{Arch: "qwen3", Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 32, Seed: 3}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.gpt2 {
				tc.o.Tokenizer = gpt2Vocab(t)
			}
			p, err := tc.o.Plan()
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "llama3-scaled" {
				p.Config.RopeScaling = &model.RopeScaling{Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositions: 64}
			}
			dir := t.TempDir()
			hf := filepath.Join(dir, "hf")
			if err := convert.WriteHF(hf, p, convert.Options{Type: "f32"}); err != nil {
				t.Fatal(err)
			}
			want, ids := logits(t, hf)
			if tc.gpt2 && len(ids) < 8 {
				t.Fatalf("GPT-2 tokenizer gave only %v", ids)
			}
			gg := filepath.Join(dir, "m.gguf")
			convertFile(t, hf, gg, convert.Options{})
			got, ids2 := logits(t, gg)
			if !equalInts(ids, ids2) {
				t.Fatalf("token ids differ: HF %v, GGUF %v", ids, ids2)
			}
			sameBits(t, "HF -> GGUF", want, got)
			hf2 := filepath.Join(dir, "hf2")
			convertFile(t, gg, hf2, convert.Options{})
			back, _ := logits(t, hf2)
			sameBits(t, "GGUF -> HF", want, back)
			sameTensorsST(t, hf, hf2)
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sameTensorsST checks that two HF directories hold the same tensors byte for byte.
func sameTensorsST(t *testing.T, a, b string) {
	t.Helper()
	sa, err := safetensors.OpenDir(a)
	if err != nil {
		t.Fatal(err)
	}
	defer sa.Close()
	sb, err := safetensors.OpenDir(b)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if len(sa.Tensors) != len(sb.Tensors) {
		t.Fatalf("%d tensors vs %d", len(sa.Tensors), len(sb.Tensors))
	}
	for n, x := range sa.Tensors {
		y, ok := sb.Tensors[n]
		if !ok {
			t.Fatalf("%s missing from %s", n, b)
		}
		if x.Type != y.Type || !bytes.Equal(x.Data, y.Data) {
			t.Fatalf("%s: %s vs %s, bytes equal %v", n, x.Type, y.Type, bytes.Equal(x.Data, y.Data))
		}
	}
}

// sameTensorsGGUF checks that two GGUF files hold the same tensors byte for byte.
func sameTensorsGGUF(t *testing.T, a, b string) {
	t.Helper()
	fa, err := gguf.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := gguf.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if len(fa.Tensors) != len(fb.Tensors) {
		t.Fatalf("%s has %d tensors, %s %d", a, len(fa.Tensors), b, len(fb.Tensors))
	}
	for _, x := range fa.Tensors {
		y, ok := fb.Tensor(x.Name)
		if !ok {
			t.Fatalf("%s missing from %s", x.Name, b)
		}
		if x.Type != y.Type || !bytes.Equal(x.Data, y.Data) {
			t.Fatalf("%s: %s vs %s, bytes equal %v", x.Name, x.Type, y.Type, bytes.Equal(x.Data, y.Data))
		}
	}
}

func TestFloatRoundTrips(t *testing.T) {
	dir := t.TempDir()
	for _, typ := range []string{"f32", "f16", "bf16"} {
		o := synth.Options{Arch: "llama", Dim: 64, Layers: 1, Heads: 4, KVHeads: 2, Seed: 9}
		p, err := o.Plan()
		if err != nil {
			t.Fatal(err)
		}
		// GGUF -> HF -> GGUF
		g1 := filepath.Join(dir, typ+"-1.gguf")
		if err := convert.WriteGGUF(g1, p, convert.Options{Type: typ}); err != nil {
			t.Fatal(err)
		}
		hf := filepath.Join(dir, typ+"-hf")
		convertFile(t, g1, hf, convert.Options{})
		g2 := filepath.Join(dir, typ+"-2.gguf")
		convertFile(t, hf, g2, convert.Options{})
		sameTensorsGGUF(t, g1, g2)
		// HF -> GGUF -> HF
		hf1 := filepath.Join(dir, typ+"-hf1")
		if err := convert.WriteHF(hf1, p, convert.Options{Type: typ}); err != nil {
			t.Fatal(err)
		}
		g3 := filepath.Join(dir, typ+"-3.gguf")
		convertFile(t, hf1, g3, convert.Options{})
		hf2 := filepath.Join(dir, typ+"-hf2")
		convertFile(t, g3, hf2, convert.Options{})
		sameTensorsST(t, hf1, hf2)
	}
}

func TestF16ToF32ToF16(t *testing.T) {
	src := fixture.Path(t, "models", "stories260K", "stories260K-f16.gguf")
	dir := t.TempDir()
	f32 := filepath.Join(dir, "f32.gguf")
	convertFile(t, src, f32, convert.Options{Type: "f32"})
	f16 := filepath.Join(dir, "f16.gguf")
	convertFile(t, f32, f16, convert.Options{Type: "f16"})
	sameTensorsGGUF(t, src, f16)
}

func TestStories260KFromLlama2C(t *testing.T) {
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	ref := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	out := filepath.Join(t.TempDir(), "s.gguf")
	convertFile(t, bin, out, convert.Options{})
	sameTensorsGGUF(t, ref, out)
	want, _ := logits(t, ref)
	got, _ := logits(t, out)
	sameBits(t, "stories260K", want, got)
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for key, want := range map[string]uint64{"llama.context_length": 512, "llama.block_count": 5,
		"llama.attention.head_count_kv": 4, "llama.feed_forward_length": 172, "general.file_type": 0} {
		if v, ok := f.Uint(key); !ok || v != want {
			t.Errorf("%s = %d, %v; want %d", key, v, ok, want)
		}
	}
}

// greedy is the greedy continuation (64 tokens) of "Once upon a time" by the model at path, as
// `llmcloud generate --temperature 0 --max-tokens 64` prints it, with the prompt's ids.
func greedy(t *testing.T, path string) (string, []int) {
	t.Helper()
	b, err := loader.Open(path, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids := b.Tok.Encode("Once upon a time", true, false)
	res, err := generate.Run(context.Background(), b.Model, b.Tok, ids, generate.Options{MaxTokens: 64}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Text, ids
}

// stories260K's GGUF (a SentencePiece "llama" vocabulary) to a Hugging Face directory, whose
// tokenizer.json is BPE with byte_fallback, and back to GGUF: the same prompt ids and greedy
// text all three ways.
func TestStories260KHFRoundTrip(t *testing.T) {
	ref := fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf")
	dir := filepath.Join(t.TempDir(), "hf")
	back := filepath.Join(t.TempDir(), "back.gguf")
	convertFile(t, ref, dir, convert.Options{})
	convertFile(t, dir, back, convert.Options{})
	want, wantIDs := greedy(t, ref)
	if len(want) < 100 {
		t.Fatalf("greedy text too short: %q", want)
	}
	for _, p := range []string{dir, back} {
		got, ids := greedy(t, p)
		if got != want || !slices.Equal(ids, wantIDs) {
			t.Errorf("%s: prompt %v, greedy text\n%q\nwant %v,\n%q", filepath.Base(p), ids, got, wantIDs, want)
		}
	}
	v, err := tokenizer.VocabFromHFJSON(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if v.Model != "llama" || len(v.Merges) == 0 || !v.AddBOS || !v.AddSpacePrefix || v.Tokens[v.EOS] != "</s>" {
		t.Errorf("tokenizer.json read back: model %q, %d merges, add_bos %v, prefix %v, eos %d",
			v.Model, len(v.Merges), v.AddBOS, v.AddSpacePrefix, v.EOS)
	}
}

// A Unigram ("t5") vocabulary on stories260K's weights: GGUF and Hugging Face directories both
// carry it (tokenizer.ggml.model t5 with the scores; tokenizer.json model Unigram) and it reads
// back as the same pieces, scores and token types, tokenizing alike.
func TestUnigramVocabThroughConvert(t *testing.T) {
	b, err := loader.Open(fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"), loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	uni, err := tokenizer.VocabFromHFJSON(filepath.Join("..", "tokenizer", "testdata", "spm", "tok512-unigram.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := convert.FromBundle(b)
	p.Vocab = uni
	dir := t.TempDir()
	ggufPath, hfPath := filepath.Join(dir, "u.gguf"), filepath.Join(dir, "hf")
	for _, out := range []string{ggufPath, hfPath} {
		if err := convert.Write(out, p, convert.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tokenizer.New(uni)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{ggufPath, hfPath} {
		v, _, err := tokenizer.OpenVocab(path)
		if err != nil {
			t.Fatal(err)
		}
		if v.Model != "t5" || !slices.Equal(v.Tokens, uni.Tokens) || !slices.Equal(v.Scores, uni.Scores) ||
			!slices.Equal(v.Types, uni.Types) || v.BOS != uni.BOS || v.EOS != uni.EOS || v.UNK != uni.UNK || !v.AddBOS {
			t.Fatalf("%s: read back as model %q, %d tokens, bos %d eos %d unk %d", filepath.Base(path), v.Model, len(v.Tokens), v.BOS, v.EOS, v.UNK)
		}
		got, err := tokenizer.New(v)
		if err != nil {
			t.Fatal(err)
		}
		const text = "Once upon a time, Lily saw a big dog.\n\t🙂"
		if x, y := want.Encode(text, true, false), got.Encode(text, true, false); !slices.Equal(x, y) {
			t.Errorf("%s: %v, want %v", filepath.Base(path), y, x)
		}
	}
}
