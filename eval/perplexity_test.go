// Perplexity on testdata/reference/brown_val_100k.txt against llama-perplexity's results
// (perplexity__<model>.log running estimates for a prefix of chunks in every run; the full
// 469-chunk run against perplexity.json when LLMCLOUD_FULL_PPL=1 and not -short: ~5 min).
package eval

import (
	"encoding/json"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
)

type pplCase struct {
	name, dir, key string // reference name, models/ subdirectory, perplexity.json key prefix
	prefix         int    // chunks checked against the log's running estimate in every run
}

var pplCases = []pplCase{
	{"stories260K-f32", "stories260K", "stories260K_f32", 60},
	{"stories260K-f16", "stories260K", "stories260K_f16", 40},
	{"rand3M-q8_0", "rand3M", "rand3M_q8_0", 8},
}

// runningEstimates parses "[i]ppl," entries of a llama-perplexity log.
func runningEstimates(t *testing.T, path string) []float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, m := range regexp.MustCompile(`\[(\d+)\]([0-9.]+),`).FindAllSubmatch(b, -1) {
		i, _ := strconv.Atoi(string(m[1]))
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		if i != len(out)+1 {
			t.Fatalf("%s: estimate [%d] out of order", path, i)
		}
		out = append(out, v)
	}
	return out
}

func TestPerplexityBrown(t *testing.T) {
	text, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]any
	b, err := os.ReadFile(fixture.Path(t, "reference", "perplexity.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	for _, pc := range pplCases {
		t.Run(pc.name, func(t *testing.T) {
			f, err := gguf.Open(fixture.Path(t, "models", pc.dir, pc.name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			v, err := tokenizer.VocabFromGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			tok, err := tokenizer.New(v)
			if err != nil {
				t.Fatal(err)
			}
			ids := tok.Encode(string(text), true, false)
			if len(ids) != int(ref["n_tokens"].(float64)) {
				t.Fatalf("%d tokens, llama.cpp had %v", len(ids), ref["n_tokens"])
			}
			m, err := model.LoadGGUF(f)
			if err != nil {
				t.Fatal(err)
			}
			chunks := pc.prefix
			full := !testing.Short() && os.Getenv("LLMCLOUD_FULL_PPL") != ""
			if full {
				chunks = -1
			}
			t0 := time.Now()
			r, err := PerplexityChunks(m, ids, 128, chunks)
			if err != nil {
				t.Fatal(err)
			}
			est := runningEstimates(t, fixture.Path(t, "reference", "perplexity__"+pc.name+".log"))
			got, want := r.Running[r.Chunks-1], est[r.Chunks-1]
			t.Logf("%d chunks, %d tokens in %v: PPL %.4f ± %.5f; llama-perplexity [%d] %.4f (rel %.2g)",
				r.Chunks, r.Scored, time.Since(t0).Round(time.Millisecond), r.PPL, r.Err, r.Chunks, want, got/want-1)
			if math.Abs(got/want-1) > 1e-3 {
				t.Errorf("running PPL after %d chunks %.4f, llama-perplexity %.4f", r.Chunks, got, want)
			}
			if r.Chunks == 469 {
				wp, we := ref[pc.key+"_ppl"].(float64), ref[pc.key+"_ppl_err"].(float64)
				if math.Abs(r.PPL/wp-1) > 1e-3 || r.Scored != int(ref["n_scored_tokens"].(float64)) {
					t.Errorf("PPL %.4f over %d tokens, perplexity.json %.4f over %v", r.PPL, r.Scored, wp, ref["n_scored_tokens"])
				}
				if math.Abs(r.Err/we-1) > 1e-2 {
					t.Errorf("PPL error %.5f, perplexity.json %.5f", r.Err, we)
				}
			}
		})
	}
}
