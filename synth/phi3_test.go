// phi3 against llama.cpp (testdata/reference/phi3_synth.json, see testdata/README.md): three
// random-weight Phi-3 models made by synth with weights of std 0.25 (peaked attention, so RoPE
// shows in the numbers: no LongRoPE; LongRoPE with a context above the original, so the long
// factors and attention factor 1.1547, and the same model at context 64, the short factors;
// LongRoPE at the original context, the short factors) give llama-perplexity's perplexity and llama-cli's greedy continuation;
// their Hugging Face form gives the same logits and converts back to the same GGUF tensors.
package synth_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/llmcloud/llmcloud/convert"
	"github.com/llmcloud/llmcloud/eval"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/synth"
)

type phi3Ref struct {
	NCtx      int    `json:"n_ctx"`
	Prompt    string `json:"prompt"`
	NPredict  int    `json:"n_predict"`
	TextBytes int    `json:"text_bytes"`
	Models    map[string]struct {
		Synth struct {
			Dim, Layers, Heads, FFN, Ctx int
			KVHeads                      int     `json:"kv_heads"`
			Seed                         uint64  `json:"seed"`
			RopeOrigCtx                  int     `json:"rope_orig_ctx"`
			Std                          float64 `json:"std"`
		} `json:"synth"`
		PPL       float64 `json:"ppl"`
		PPLCtx64  float64 `json:"ppl_ctx64"`
		GreedyHex string  `json:"greedy_hex"`
	} `json:"models"`
}

func TestPhi3MatchesLlamaCpp(t *testing.T) {
	var ref phi3Ref
	b, err := os.ReadFile(fixture.Path(t, "reference", "phi3_synth.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	text = text[:ref.TextBytes]
	vocab, _, err := synth.LoadTokenizer(fixture.Path(t, "models", "stories260K", "tok512.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"plain", "long", "short"} {
		r := ref.Models[name]
		t.Run(name, func(t *testing.T) {
			s := r.Synth
			o := synth.Options{Arch: "phi3", Dim: s.Dim, Layers: s.Layers, Heads: s.Heads, KVHeads: s.KVHeads, FFN: s.FFN,
				CtxLen: s.Ctx, Seed: s.Seed, RopeOrigCtx: s.RopeOrigCtx, Std: s.Std, Tokenizer: vocab, Vocab: len(vocab.Tokens)}
			p, err := o.Plan()
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			path := filepath.Join(dir, name+".gguf")
			if err := convert.WriteGGUF(path, p, convert.Options{Type: "f32"}); err != nil {
				t.Fatal(err)
			}
			bu, err := loader.Open(path, loader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer bu.Close()
			m := bu.Model
			if (m.Config.LongRope != nil) != (s.RopeOrigCtx > 0) {
				t.Fatalf("LongRoPE read back as %+v", m.Config.LongRope)
			}
			res, err := eval.PerplexityChunks(m, bu.Tok.Encode(string(text), true, false), ref.NCtx, -1)
			if err != nil {
				t.Fatal(err)
			}
			if rel := math.Abs(res.PPL-r.PPL) / r.PPL; rel > 1e-4 {
				t.Errorf("perplexity %.4f, llama.cpp %.4f (relative difference %.2g)", res.PPL, r.PPL, rel)
			}
			if r.PPLCtx64 > 0 {
				// llama.cpp picks the divisors by its context: at 64, the original one, the short
				// ones. A model of context 64 does the same.
				c := m.Config
				c.CtxLen = 64
				m64, err := model.New(c, m.Weights)
				if err != nil {
					t.Fatal(err)
				}
				res, err := eval.PerplexityChunks(m64, bu.Tok.Encode(string(text), true, false), 64, -1)
				if err != nil {
					t.Fatal(err)
				}
				if rel := math.Abs(res.PPL-r.PPLCtx64) / r.PPLCtx64; rel > 1e-4 {
					t.Errorf("perplexity at context 64 %.4f, llama.cpp %.4f (relative difference %.2g)", res.PPL, r.PPLCtx64, rel)
				}
			}
			want, _ := hex.DecodeString(r.GreedyHex)
			got := greedy(t, m, bu.Tok.Encode(ref.Prompt, true, false), ref.NPredict)
			if gotText := []byte(bu.Tok.Decode(got)); !bytes.Equal(gotText, want) {
				t.Errorf("greedy continuation %q, llama.cpp %q", gotText, want)
			}

			// The Hugging Face form: same logits; converted back, the same tensors.
			hf := filepath.Join(dir, "hf")
			if err := convert.WriteHF(hf, p, convert.Options{Type: "f32"}); err != nil {
				t.Fatal(err)
			}
			hb, err := loader.Open(hf, loader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer hb.Close()
			ids := bu.Tok.Encode(ref.Prompt, true, false)
			lg, err := m.Forward(m.NewCache(len(ids)), ids, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			hl, err := hb.Model.Forward(hb.Model.NewCache(len(ids)), ids, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lg, hl) {
				t.Error("the Hugging Face directory's logits differ from the GGUF's")
			}
			back := filepath.Join(dir, "back.gguf")
			if err := convert.WriteGGUF(back, convert.FromBundle(hb), convert.Options{Type: "f32"}); err != nil {
				t.Fatal(err)
			}
			bb, err := loader.Open(back, loader.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer bb.Close()
			c1, c2 := m.Config, bb.Model.Config
			if c1.SlidingWindow != c2.SlidingWindow || (c1.LongRope == nil) != (c2.LongRope == nil) {
				t.Errorf("config after GGUF -> HF -> GGUF: %+v, was %+v", c2, c1)
			} else if r1, r2 := c1.LongRope, c2.LongRope; r1 != nil && (r1.OrigCtx != r2.OrigCtx || r1.AttnFactor != r2.AttnFactor) {
				t.Errorf("LongRoPE after GGUF -> HF -> GGUF: %+v, was %+v", r2, r1)
			}
			for n, w := range m.Weights {
				if w2 := bb.Model.Weights[n]; w2 == nil || !bytes.Equal(w.Data, w2.Data) || !slices.Equal(w.Shape, w2.Shape) {
					t.Errorf("%s differs after GGUF -> HF -> GGUF", n)
				}
			}
		})
	}
}

// greedy decodes n tokens after prompt by argmax.
func greedy(t *testing.T, m *model.Model, prompt []int, n int) []int {
	c := m.NewCache(len(prompt) + n)
	lg, err := m.Forward(c, prompt, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i := 0; i < n; i++ {
		best := 0
		for j, v := range lg {
			if v > lg[best] {
				best = j
			}
		}
		out = append(out, best)
		if lg, err = m.Forward(c, []int{best}, len(prompt)+i, false); err != nil {
			t.Fatal(err)
		}
	}
	return out
}
