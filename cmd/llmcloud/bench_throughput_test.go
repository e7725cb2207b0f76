package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestBenchThroughput(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	out := filepath.Join(t.TempDir(), "tp.json")
	var stdout, stderr bytes.Buffer
	err := runBench([]string{"throughput", "--model", model, "--num-prompts", "4", "--input-len", "16", "--output-len", "8",
		"--max-num-seqs", "2", "--max-num-batched-tokens", "32", "--block-size", "8", "--kv-cache-memory", "1MiB",
		"--no-enable-prefix-caching", "--threads", "1", "--output-json", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "Throughput: ") || !strings.Contains(stdout.String(), "requests/s") {
		t.Errorf("output:\n%s", stdout.String())
	}
	var res map[string]any
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res["num_requests"] != 4.0 || res["total_output_tokens"] != 32.0 || res["max_num_seqs"] != 2.0 || res["block_size"] != 8.0 {
		t.Errorf("json: %v", res)
	}
	for _, bad := range [][]string{{"throughput", "extra"}, {"throughput", "--model", model, "--num-prompts", "0"},
		{"throughput", "--model", model, "--kv-cache-memory", "lots"}} {
		if err := runBench(bad, &stdout, &stderr); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for s, want := range map[string]int64{"1024": 1024, "2KiB": 2048, "1.5 GiB": 3 << 29, "3M": 3 << 20, "1GB": 1 << 30} {
		if got, err := parseBytes(s); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "-1", "0"} {
		if _, err := parseBytes(s); err == nil {
			t.Errorf("parseBytes(%q) accepted", s)
		}
	}
}

// With --prefix-len every prompt starts with the same tokens, so with prefix caching on only the
// first request computes the shared blocks and the later ones find them cached. A step budget of
// one prompt (80 tokens) admits the requests one step apart, after the prefix is in the cache.
func TestBenchThroughputSharedPrefix(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	run := func(extra ...string) map[string]any {
		out := filepath.Join(t.TempDir(), "tp.json")
		var stdout, stderr bytes.Buffer
		args := append([]string{"throughput", "--model", model, "--num-prompts", "8", "--prefix-len", "64",
			"--input-len", "16", "--output-len", "4", "--block-size", "8", "--max-num-batched-tokens", "80",
			"--threads", "1", "--output-json", out}, extra...)
		if err := runBench(args, &stdout, &stderr); err != nil {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
		data, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var res map[string]any
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	on, off := run(), run("--no-enable-prefix-caching")
	// (prefill_tokens counts prompt rows run through the model, give or take the row a request's
	// last prompt token shares with its first decode.)
	if pf, _ := off["prefill_tokens"].(float64); off["prefix_hit_tokens"] != 0.0 || pf > 640 || pf < 0.9*640 {
		t.Errorf("caching off: %v prefill, %v hits; want about 640 and 0", off["prefill_tokens"], off["prefix_hit_tokens"])
	}
	// The first request computes all 80; each later one finds the 64 shared tokens cached.
	if pf, _ := on["prefill_tokens"].(float64); on["prefix_hit_tokens"] != 7.0*64 || pf > 80+7*16 || pf < 0.9*(80+7*16) {
		t.Errorf("caching on: %v prefill, %v hits; want about 192 and 448", on["prefill_tokens"], on["prefix_hit_tokens"])
	}
}

// With a draft model, bench throughput reports vLLM's spec_decode counters and the acceptance by
// position. The model is its own draft here, so every draft token is accepted (the draft's
// distribution equals the target's: rejection sampling keeps each token with probability 1).
func TestBenchThroughputSpeculative(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	out := filepath.Join(t.TempDir(), "tp.json")
	var stdout, stderr bytes.Buffer
	cfg := `{"method": "draft_model", "model": "` + model + `", "num_speculative_tokens": 3}`
	err := runBench([]string{"throughput", "--model", model, "--num-prompts", "3", "--input-len", "8", "--output-len", "24",
		"--threads", "1", "--speculative-config", cfg, "--output-json", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	if !strings.Contains(stdout.String(), "Speculation: ") || !strings.Contains(stdout.String(), "by position: 0:") {
		t.Errorf("output:\n%s", stdout.String())
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Drafts   int64     `json:"spec_num_drafts"`
		Draft    int64     `json:"spec_num_draft_tokens"`
		Accepted int64     `json:"spec_num_accepted_tokens"`
		PerPos   []int64   `json:"spec_num_accepted_tokens_per_pos"`
		Rate     float64   `json:"spec_acceptance_rate"`
		PosRate  []float64 `json:"spec_acceptance_rate_per_pos"`
		Output   int64     `json:"total_output_tokens"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Drafts == 0 || res.Draft == 0 || res.Accepted != res.Draft || res.Rate != 1 || len(res.PerPos) != 3 || len(res.PosRate) != 3 {
		t.Errorf("spec fields: %+v", res)
	}
	if res.Output != 72 {
		t.Errorf("output tokens %d, want 72", res.Output)
	}
}
