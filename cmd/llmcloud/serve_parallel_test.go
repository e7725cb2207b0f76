// Tests of `llmcloud serve --tensor-parallel-size` through real processes: the test binary
// plays the llmcloud binary (TestMain runs runMain when LLMCLOUD_TEST_AS_MAIN=1), rank 0 is
// serve in this process and starts ranks 1..T-1 as children, as the command does.
package main

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/api"
)

// tpModels writes tiny random Llama and Qwen3 models (heads and KV heads divisible by 4).
func tpModels(t *testing.T) map[string]string {
	t.Helper()
	dir := t.TempDir()
	ms := map[string]string{"llama": filepath.Join(dir, "llama.gguf"), "qwen3": filepath.Join(dir, "qwen3.gguf")}
	run(t, "synth", "-o", ms["llama"], "--dim", "64", "--layers", "2", "--heads", "8", "--kv-heads", "4", "--ffn", "128",
		"--vocab", "264", "--seed", "11", "--std", "0.08")
	run(t, "synth", "-o", ms["qwen3"], "--arch", "qwen3", "--dim", "64", "--layers", "2", "--heads", "8", "--kv-heads", "4",
		"--head-dim", "16", "--ffn", "128", "--vocab", "264", "--seed", "12", "--std", "0.08")
	return ms
}

// greedy returns the tokens of a greedy completion of prompt (with the text, and each
// token's logprob).
func greedy(t *testing.T, url, prompt string, n int) completion {
	t.Helper()
	body := `{"prompt":` + strconv.Quote(prompt) + `,"max_tokens":` + itoa(n) + `,"temperature":0,"ignore_eos":true,"logprobs":0}`
	resp, err := http.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c api.CompletionResponse
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil || len(c.Choices) != 1 || c.Choices[0].Logprobs == nil {
		t.Fatalf("completion: %v %+v", err, c)
	}
	lp := c.Choices[0].Logprobs
	if len(lp.Tokens) != n || len(lp.TokenLogprobs) != n {
		t.Fatalf("%d tokens, asked for %d", len(lp.Tokens), n)
	}
	out := completion{text: c.Choices[0].Text, tokens: lp.Tokens}
	for _, p := range lp.TokenLogprobs {
		out.logprobs = append(out.logprobs, *p)
	}
	return out
}

type completion struct {
	text     string
	tokens   []string
	logprobs []float64
}

// same reports whether b is a's completion: the same text and tokens, logprobs within tol
// (the ranks' partial sums add in another order than one process's).
func (a completion) same(b completion, tol float64) bool {
	if a.text != b.text || len(a.tokens) != len(b.tokens) {
		return false
	}
	for i := range a.tokens {
		if a.tokens[i] != b.tokens[i] || math.Abs(a.logprobs[i]-b.logprobs[i]) > tol {
			return false
		}
	}
	return true
}

var shardLine = regexp.MustCompile(`model part loaded" rank=(\d+) of=(\d+) weight_bytes=(\d+) model_weight_bytes=(\d+)`)

// checkShards checks that every rank of a TP=T, PP=P server logged its part: without a
// pipeline 1/T of the model's weight bytes, ±5%; with one, the ranks' parts add up to the
// model (+5% for the norms every tensor-parallel rank holds).
func checkShards(t *testing.T, logs string, T, P int) {
	t.Helper()
	seen := map[string]bool{}
	var sum, all float64
	for _, m := range shardLine.FindAllStringSubmatch(logs, -1) {
		w, _ := strconv.ParseFloat(m[3], 64)
		all, _ = strconv.ParseFloat(m[4], 64)
		sum += w
		if m[2] != strconv.Itoa(T*P) {
			t.Errorf("rank %s: of %s, want %d", m[1], m[2], T*P)
		}
		if r := w * float64(T) / all; P == 1 && (r < 0.95 || r > 1.05) {
			t.Errorf("rank %s of %d holds %.0f of %.0f weight bytes: %.3f of its 1/%d share", m[1], T, w, all, r, T)
		}
		seen[m[1]] = true
	}
	if len(seen) != T*P {
		t.Errorf("%d ranks logged their part, want %d:\n%s", len(seen), T*P, logs)
	}
	if f := sum / all; f < 0.99 || f > 1.05 {
		t.Errorf("TP=%d PP=%d: the ranks hold %.0f weight bytes together, the model %.0f", T, P, sum, all)
	}
}

// Greedy completions served by 2 and 4 tensor-parallel ranks are the single process's, token
// for token, on random Llama and Qwen3 models; each rank holds 1/T of the weights.
func TestServeTensorParallelGreedy(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	prompts := []string{"hello world", "The quick brown fox jumps over", "a"}
	for arch, path := range tpModels(t) {
		url, _, stop := startServe(t, path, "--threads", "1")
		var want []completion
		for _, p := range prompts {
			want = append(want, greedy(t, url, p, 20))
		}
		stop()
		for _, c := range [][2]int{{2, 1}, {4, 1}, {1, 2}, {2, 2}} {
			T, P := c[0], c[1]
			url, logs, stop := startServe(t, path, "--threads", "1", "-tp", strconv.Itoa(T), "--pipeline-parallel-size", strconv.Itoa(P))
			for i, p := range prompts {
				if got := greedy(t, url, p, 20); !got.same(want[i], 1e-3) {
					t.Errorf("%s TP=%d PP=%d prompt %q: %q %v, the single process %q %v", arch, T, P, p, got.tokens, got.logprobs, want[i].tokens, want[i].logprobs)
				}
			}
			if err := stop(); err != nil {
				t.Errorf("%s TP=%d PP=%d: serve: %v", arch, T, P, err)
			}
			checkShards(t, logs.String(), T, P)
			if n := strings.Count(logs.String(), "tensor-parallel rank stopping"); n != T*P-1 {
				t.Errorf("%s TP=%d PP=%d: %d ranks stopped in order, want %d", arch, T, P, n, T*P-1)
			}
		}
	}
}

// A mixture of experts (Qwen2-MoE with a shared expert, and Mixtral) served by 2 tensor-parallel
// ranks, its experts split by width and, with --enable-expert-parallel, by expert (TP=4 too),
// gives the single process's greedy completions; each rank holds 1/T of the weights.
func TestServeTensorParallelExperts(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	dir := t.TempDir()
	ms := map[string]string{"qwen2moe": filepath.Join(dir, "qwen2moe.gguf"), "mixtral": filepath.Join(dir, "mixtral.gguf")}
	run(t, "synth", "-o", ms["qwen2moe"], "--arch", "qwen2moe", "--dim", "64", "--layers", "2", "--heads", "8", "--kv-heads", "4",
		"--ffn", "128", "--experts", "4", "--expert-ffn", "64", "--shared-ffn", "128", "--vocab", "264", "--seed", "13", "--std", "0.08")
	run(t, "synth", "-o", ms["mixtral"], "--dim", "64", "--layers", "2", "--heads", "8", "--kv-heads", "4",
		"--ffn", "64", "--experts", "4", "--vocab", "264", "--seed", "14", "--std", "0.08", "--type", "q8_0")
	prompts := []string{"hello world", "The quick brown fox jumps over"}
	for arch, path := range ms {
		url, _, stop := startServe(t, path, "--threads", "1")
		var want []completion
		for _, p := range prompts {
			want = append(want, greedy(t, url, p, 16))
		}
		stop()
		for _, args := range [][]string{{"-tp", "2"}, {"-tp", "2", "--enable-expert-parallel"}, {"-tp", "4", "--enable-expert-parallel"}} {
			if arch == "mixtral" && args[1] == "4" {
				continue // Q8_0: 64 columns over 4 ranks are not whole blocks
			}
			T, _ := strconv.Atoi(args[1])
			url, logs, stop := startServe(t, append([]string{path, "--threads", "1"}, args...)...)
			for i, p := range prompts {
				if got := greedy(t, url, p, 16); !got.same(want[i], 1e-3) {
					t.Errorf("%s %v prompt %q: %q %v, the single process %q %v", arch, args, p, got.tokens, got.logprobs, want[i].tokens, want[i].logprobs)
				}
			}
			if err := stop(); err != nil {
				t.Errorf("%s %v: serve: %v", arch, args, err)
			}
			checkShards(t, logs.String(), T, 1)
		}
	}
	six := filepath.Join(dir, "six.gguf")
	run(t, "synth", "-o", six, "--arch", "qwen2moe", "--dim", "64", "--layers", "1", "--heads", "8", "--kv-heads", "4",
		"--ffn", "128", "--experts", "6", "--expert-ffn", "54", "--shared-ffn", "128", "--vocab", "264")
	var logs strings.Builder
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{six, "-tp", "4", "--enable-expert-parallel"}, "tensor-parallel size 4 does not divide the experts (6)"},
		{[]string{six, "-tp", "32"}, "does not divide the attention heads (8)"},
		{[]string{six, "-tp", "4"}, "tensor-parallel size 4 does not divide the experts' feed-forward width (54)"},
		{[]string{ms["qwen2moe"], "-tp", "8", "--enable-expert-parallel"}, "does not divide the KV heads (4)"},
		{[]string{ms["qwen2moe"], "--enable-expert-parallel"}, "--enable-expert-parallel splits the experts over --tensor-parallel-size ranks"},
	} {
		if err := serve(t.Context(), append(c.args, "--port", "0"), &logs, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}

// A size that does not divide the heads, KV heads, feed-forward width or vocabulary is refused
// at start-up, naming both numbers, before any rank is started.
func TestServeTensorParallelBadSize(t *testing.T) {
	path := tpModels(t)["llama"]
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-tp", "3"}, "tensor-parallel size 3 does not divide the attention heads (8)"},
		{[]string{"--tensor-parallel-size", "8"}, "tensor-parallel size 8 does not divide the KV heads (4)"},
		{[]string{"-tp", "0"}, "must be at least 1"},
		{[]string{"-tp", "2", "--world-size", "3", "--distributed-init", "127.0.0.1:1"}, "--world-size 3 is not --tensor-parallel-size 2"},
		{[]string{"-pp", "3"}, "pipeline-parallel size 3 does not divide the layers (2)"},
		{[]string{"-pp", "2", "--pipeline-layer-partition", "2,1"}, "pipeline layer partition [2 1]: want 2 stages adding up to the layers (2)"},
		{[]string{"-pp", "2", "--pipeline-layer-partition", "2,0"}, "pipeline layer partition [2 0]: every stage needs a layer"},
		{[]string{"-pp", "2", "--pipeline-layer-partition", "2"}, `--pipeline-layer-partition "2" gives 1 stages, --pipeline-parallel-size is 2`},
		{[]string{"-pp", "2", "--pipeline-layer-partition", "a,b"}, "want the layers of each stage, comma-separated"},
		{[]string{"-pp", "2", "--pipeline-micro-batches", "-1"}, "--pipeline-micro-batches -1 must be at least 1"},
		{[]string{"-tp", "2", "-pp", "2", "--rank", "4", "--distributed-init", "127.0.0.1:1"}, "--rank 4 is outside the group of 4"},
		{[]string{"-tp", "2", "--kv-role", "producer"}, "--kv-role with --tensor-parallel-size"},
		{[]string{"-pp", "2", "--output-tensor-type", "q8_0"}, "--output-tensor-type with --tensor-parallel-size"},
	} {
		var logs strings.Builder
		err := serve(t.Context(), append([]string{path, "--port", "0"}, c.args...), &logs, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
		if strings.Contains(logs.String(), "started rank") {
			t.Errorf("%v: ranks were started before the error", c.args)
		}
	}
	q8 := filepath.Join(t.TempDir(), "q8.gguf")
	run(t, "synth", "-o", q8, "--dim", "64", "--layers", "2", "--heads", "8", "--ffn", "128", "--vocab", "264", "--type", "q8_0")
	var logs strings.Builder
	err := serve(t.Context(), []string{q8, "--port", "0", "-tp", "4"}, &logs, nil)
	if err == nil || !strings.Contains(err.Error(), "blk.0.attn_output.weight's 16 columns per rank are not whole Q8_0 blocks") || strings.Contains(logs.String(), "started rank") {
		t.Errorf("TP=4 of a Q8_0 model of 64 columns: %v\n%s", err, logs.String())
	}
}

// streamEnd reports how stream r ended: its error or abort event, or the read error that closed
// it.
func streamEnd(r *api.SSEReader) <-chan string {
	done := make(chan string, 1)
	go func() {
		for {
			data, err := r.Next()
			if err != nil {
				done <- "ended: " + err.Error()
				return
			}
			if s := string(data); strings.Contains(s, `"error"`) || strings.Contains(s, `"finish_reason":"abort"`) {
				done <- s
				return
			}
		}
	}()
	return done
}

var startedRank = regexp.MustCompile(`started rank" rank=1 pid=(\d+)`)

// Killing a rank mid-stream (a tensor-parallel rank, or the last pipeline stage) ends the
// streams in flight (an error, not a hang) and the server with an error naming the rank.
func TestServeTensorParallelRankKilled(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	path := filepath.Join(t.TempDir(), "m.gguf")
	run(t, "synth", "-o", path, "--dim", "64", "--layers", "2", "--heads", "4", "--ffn", "128", "--vocab", "264", "--ctx", "8192")
	for _, flag := range []string{"-tp", "-pp"} {
		t.Run(flag, func(t *testing.T) { killRank(t, path, flag) })
	}
}

func killRank(t *testing.T, path, flag string) {
	url, logs, stop := startServe(t, path, "--threads", "1", flag, "2", "--distributed-timeout", "5s")
	m := startedRank.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no pid of rank 1 in the log:\n%s", logs)
	}
	pid, _ := strconv.Atoi(m[1])
	streams := []*api.SSEReader{streamCompletion(t, url, 8000), streamCompletion(t, url, 8000)}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for i, r := range streams {
		select {
		case s := <-streamEnd(r):
			t.Logf("stream %d: %.200s", i, s)
		case <-time.After(10 * time.Second):
			t.Fatalf("stream %d still open 10 s after rank 1 was killed", i)
		}
	}
	deadline := time.After(10 * time.Second)
	for !strings.Contains(logs.String(), "stopping: the tensor-parallel group failed") {
		select {
		case <-deadline:
			t.Fatalf("the server did not stop:\n%s", logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	err := stop()
	if err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("serve returned %v, want an error naming rank 1", err)
	}
	t.Logf("streams ended and the server stopped %v after the kill", time.Since(t0).Round(time.Millisecond))
	if p, err := os.FindProcess(pid); err == nil {
		p.Release()
	}
}

// A rank that hangs (stopped) mid-stream fails the group once a collective has waited
// --distributed-timeout: the stream ends, the server stops with an error naming the rank.
func TestServeTensorParallelRankHangs(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	path := filepath.Join(t.TempDir(), "m.gguf")
	run(t, "synth", "-o", path, "--dim", "64", "--layers", "2", "--heads", "4", "--ffn", "128", "--vocab", "264", "--ctx", "8192")
	url, logs, stop := startServe(t, path, "--threads", "1", "-tp", "2", "--distributed-timeout", "1s")
	m := startedRank.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no pid of rank 1 in the log:\n%s", logs)
	}
	pid, _ := strconv.Atoi(m[1])
	defer syscall.Kill(pid, syscall.SIGKILL)
	r := streamCompletion(t, url, 8000)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	select {
	case s := <-streamEnd(r):
		t.Logf("stream ended %v after the stop: %.200s", time.Since(t0).Round(time.Millisecond), s)
	case <-time.After(8 * time.Second):
		t.Fatalf("stream still open 8 s after rank 1 was stopped:\n%s", logs)
	}
	deadline := time.After(8 * time.Second)
	for !strings.Contains(logs.String(), "stopping: the tensor-parallel group failed") {
		select {
		case <-deadline:
			t.Fatalf("the server did not stop:\n%s", logs)
		case <-time.After(20 * time.Millisecond):
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	if err := stop(); err == nil || !strings.Contains(err.Error(), "rank 1") {
		t.Errorf("serve returned %v, want an error naming rank 1", err)
	}
}
