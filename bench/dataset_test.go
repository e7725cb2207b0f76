package bench

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestGaps(t *testing.T) {
	for _, b := range []float64{1, 0.5, 4} {
		gaps := Gaps(40000, 100, b, rand.New(rand.NewPCG(1, 2)))
		var mean, sq float64
		for _, g := range gaps {
			mean += g.Seconds()
		}
		mean /= float64(len(gaps))
		for _, g := range gaps {
			sq += (g.Seconds() - mean) * (g.Seconds() - mean)
		}
		cv := math.Sqrt(sq/float64(len(gaps))) / mean
		// Gamma(shape b): mean = 1/rate, coefficient of variation = 1/sqrt(b).
		if math.Abs(mean-0.01) > 0.0003 || math.Abs(cv-1/math.Sqrt(b)) > 0.04 {
			t.Errorf("burstiness %v: mean gap %.5f s (want 0.01), cv %.3f (want %.3f)", b, mean, cv, 1/math.Sqrt(b))
		}
	}
	for _, g := range Gaps(10, math.Inf(1), 1, rand.New(rand.NewPCG(1, 2))) {
		if g != 0 {
			t.Fatal("rate inf must send everything at once")
		}
	}
}

func TestPercentileLikeNumpy(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	for p, want := range map[float64]float64{0: 1, 50: 2.5, 99: 3.97, 100: 4, 25: 1.75} {
		if got := Percentile(xs, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if PercentileWord(99) != "99" || PercentileWord(99.9) != "99.9" {
		t.Error("percentile words")
	}
}

func TestRandomDatasets(t *testing.T) {
	reqs, err := RandomRequests(Words{}, RandomOptions{InputLen: 100, OutputLen: 50, RangeRatio: 0.5, PrefixLen: 10}, 200, 7)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := RandomRequests(Words{}, RandomOptions{InputLen: 100, OutputLen: 50, RangeRatio: 0.5, PrefixLen: 10}, 200, 7)
	prefix := strings.Join(strings.Fields(reqs[0].Prompt)[:10], " ")
	for i, r := range reqs {
		if r.PromptTokens < 60 || r.PromptTokens > 160 || r.OutputTokens < 25 || r.OutputTokens > 75 {
			t.Fatalf("request %d: %d in, %d out", i, r.PromptTokens, r.OutputTokens)
		}
		if len(strings.Fields(r.Prompt)) != r.PromptTokens || !strings.HasPrefix(r.Prompt, prefix) {
			t.Fatalf("request %d: prompt does not match its count or lacks the shared prefix", i)
		}
		if r != again[i] {
			t.Fatal("same seed, different prompts")
		}
	}
	pr, err := PrefixRepetitionRequests(Words{}, PrefixRepetitionOptions{PrefixLen: 20, SuffixLen: 5, NumPrefixes: 3, OutputLen: 8}, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	prefixes := map[string]int{}
	for _, r := range pr {
		prefixes[strings.Join(strings.Fields(r.Prompt)[:20], " ")]++
		if r.PromptTokens != 25 || r.OutputTokens != 8 {
			t.Fatalf("prefix-repetition request %+v", r)
		}
	}
	if len(pr) != 10 || len(prefixes) != 3 {
		t.Fatalf("%d requests over %d prefixes", len(pr), len(prefixes))
	}
}

func TestTokenizerPrompts(t *testing.T) {
	dir := fixture.Path(t, "models", "gpt2-tokenizer")
	tok, err := LoadTokenizer(dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := RandomRequests(tok, RandomOptions{InputLen: 64, OutputLen: 8, PrefixLen: 16}, 20, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if got := tok.Count(r.Prompt); got < r.PromptTokens-2 || got > r.PromptTokens+2 || r.PromptTokens < 76 || r.PromptTokens > 84 {
			t.Errorf("prompt counted %d tokens, dataset says %d (asked 80)", got, r.PromptTokens)
		}
	}
}

func TestFileDatasets(t *testing.T) {
	dir := t.TempDir()
	sg := []map[string]any{
		{"conversations": []map[string]string{{"from": "human", "value": "tell me a story about a cat please"}, {"from": "gpt", "value": strings.Repeat("once upon a time ", 10)}}},
		{"conversations": []map[string]string{{"from": "human", "value": "hi"}}},
		{"conversations": []map[string]string{{"from": "human", "value": "what is the capital of France, in one word?"}, {"from": "gpt", "value": "Paris is the capital city."}}},
	}
	b, _ := json.Marshal(sg)
	p := filepath.Join(dir, "sg.json")
	os.WriteFile(p, b, 0o644)
	reqs, err := ShareGPTRequests(Words{}, p, 2, 0, 1)
	if err != nil || len(reqs) != 2 {
		t.Fatalf("%v %v", reqs, err)
	}
	for _, r := range reqs {
		if r.OutputTokens != (len(strings.Repeat("once upon a time ", 10))+3)/4 && r.OutputTokens != 7 {
			t.Errorf("sharegpt output tokens %d", r.OutputTokens)
		}
	}
	if _, err := ShareGPTRequests(Words{}, p, 3, 0, 1); err == nil {
		t.Error("want an error when too few conversations are usable")
	}
	jl := filepath.Join(dir, "p.jsonl")
	os.WriteFile(jl, []byte("{\"prompt\":\"a b c\",\"output_tokens\":5}\n\n{\"prompt\":\"d e\"}\n"), 0o644)
	reqs, err = FileRequests(Words{}, jl, 3, 9)
	if err != nil || len(reqs) != 3 || reqs[0].OutputTokens != 5 || reqs[1].OutputTokens != 9 || reqs[2].Prompt != "a b c" {
		t.Fatalf("%+v %v", reqs, err)
	}
	txt := filepath.Join(dir, "p.txt")
	os.WriteFile(txt, []byte("first prompt\nsecond prompt\n"), 0o644)
	if reqs, err = FileRequests(Words{}, txt, 2, 4); err != nil || reqs[1].Prompt != "second prompt" {
		t.Fatalf("%+v %v", reqs, err)
	}
}

func TestResultJSONAndReport(t *testing.T) {
	c := 4
	g := 3.5
	r := &Result{Backend: "openai", ModelID: "m/x", RequestRate: Rate(math.Inf(1)), MaxConcurrency: &c, Date: "20250101-000000",
		Completed: 3, RequestGoodput: &g, PercentileMetrics: []string{"ttft", "e2el"}, MetricPercentiles: []float64{50, 99.9},
		Stats: map[string]float64{"mean_ttft_ms": 1.5, "p99.9_ttft_ms": 7, "median_e2el_ms": 2}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["request_rate"] != "inf" || m["p99.9_ttft_ms"] != 7.0 || m["max_concurrency"] != 4.0 || m["request_goodput"] != 3.5 {
		t.Fatalf("json %s", b)
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || !math.IsInf(float64(back.RequestRate), 1) || back.Stats["p99.9_ttft_ms"] != 7 {
		t.Fatalf("round trip %+v %v", back, err)
	}
	if r.FileName() != "openai-infqps-concurrency4-x-20250101-000000.json" {
		t.Errorf("file name %s", r.FileName())
	}
	var out bytes.Buffer
	Print(&out, r)
	want := []string{
		"============ Serving Benchmark Result ============",
		"Successful requests:                     3",
		"Maximum request concurrency:             4",
		"Request goodput (req/s):                 3.50",
		"---------------Time to First Token----------------",
		"Mean TTFT (ms):                          1.50",
		"P99.9 TTFT (ms):                         7.00",
		"----------------End-to-end Latency----------------",
		"Median E2EL (ms):                        2.00",
		"==================================================",
	}
	for _, w := range want {
		if !strings.Contains(out.String(), w+"\n") {
			t.Errorf("report lacks %q:\n%s", w, out.String())
		}
	}
	if strings.Contains(out.String(), "Request rate configured") || strings.Contains(out.String(), "Inter-token") {
		t.Error("report shows a rate for inf or an unselected metric")
	}
}

// --tokenizer takes any model file: stories260K's GGUF, its llama2.c checkpoint (tok512.bin
// beside it), the SentencePiece tok512.model and tok512.bin itself count alike.
func TestTokenizerFromModelFiles(t *testing.T) {
	want := -1
	for _, name := range []string{"stories260K-f32.gguf", "stories260K.bin", "tok512.model", "tok512.bin"} {
		tok, err := LoadTokenizer(fixture.Path(t, "models", "stories260K", name))
		if err != nil {
			t.Fatal(err)
		}
		n := tok.Count("Once upon a time, there was a little girl named Lily.")
		if want < 0 {
			want = n
		}
		if n != want || n < 10 {
			t.Errorf("%s: %d tokens, want %d", name, n, want)
		}
	}
}
