// Tests of profile --engine and simulate through runCmd: a quick profile of the built-in
// model, a simulation that bench compare reads, --search, and the bad inputs (a profile from
// another CPU or model, a trace with a bad line, an unknown policy).
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestProfileEngineAndSimulate(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.json")
	out, errs, code := runCmd(t, "profile", "--engine", "--quick", "-o", prof, "--threads", "1")
	if code != 0 {
		t.Fatalf("profile: exit %d: %s %s", code, out, errs)
	}
	for _, w := range []string{"decode", "prefill", "held mean err", "const_s"} {
		if !strings.Contains(out, w) {
			t.Errorf("profile output lacks %q:\n%s", w, out)
		}
	}
	var p map[string]any
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"model", "cpu", "threads", "engine", "coefficients", "held_out_error"} {
		if p[k] == nil {
			t.Errorf("profile JSON lacks %q", k)
		}
	}

	res := filepath.Join(dir, "r.json")
	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--replicas", "2", "--router", "least-load",
		"--random-input-len", "100", "--random-output-len", "20", "--num-prompts", "200", "--request-rate", "20", "--json", res)
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s %s", code, out, errs)
	}
	if !strings.Contains(out, "Serving Benchmark Result") || !strings.Contains(out, "P99 TTFT (ms):") {
		t.Errorf("simulate printed no result block:\n%s", out)
	}
	r, err := bench.LoadResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if r.Completed != 200 || r.TotalOutputTokens != 200*20 || r.Stats["p99_ttft_ms"] <= 0 {
		t.Errorf("result: completed %d, output tokens %d, p99 TTFT %v", r.Completed, r.TotalOutputTokens, r.Stats["p99_ttft_ms"])
	}
	if out, errs, code = runCmd(t, "bench", "compare", res, res); code != 0 {
		t.Errorf("bench compare: exit %d: %s %s", code, out, errs)
	}

	// bench serve's default random lengths (1024 + 128) do not fit the built-in model's 512:
	// as bench serve does against a server, simulate shrinks them to the profile's and says so.
	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--num-prompts", "20", "--request-rate", "5")
	if code != 0 || !strings.Contains(errs, "the profile's max_model_len is 512 tokens: random prompts of 288 input + 128 output tokens") ||
		!strings.Contains(out, "Failed requests:                         0") {
		t.Errorf("simulate with the default lengths: exit %d:\n%s\n%s", code, out, errs)
	}

	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--search", "--slo", "ttft_p99<500ms",
		"--random-input-len", "100", "--random-output-len", "20", "--num-prompts", "300", "--request-rate", "40")
	if code != 0 || !strings.Contains(out, "Plan: ") {
		t.Fatalf("search: exit %d: %s %s", code, out, errs)
	}

	// A load well past one replica on any CPU (the profile is this machine's: 40 req/s of 200
	// tokens stopped overloading one replica once prefill ran on AMX tiles).
	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--autoscale", "1:4", "--router", "least-load",
		"--random-input-len", "400", "--random-output-len", "40", "--num-prompts", "1000", "--request-rate", "200")
	if code != 0 || !strings.Contains(out, "Autoscaler at") {
		t.Errorf("autoscale: exit %d, no scaling printed: %s %s", code, out, errs)
	}

	// Three one-thread replicas on one CPU, and the overheads: every TTFT is at least the
	// request overhead plus a step of prefill with its overhead, and the result says so.
	shared := filepath.Join(dir, "shared.json")
	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--replicas", "3", "--cpus", "1", "--step-overhead", "1ms",
		"--request-overhead", "50ms", "--random-input-len", "100", "--random-output-len", "20", "--num-prompts", "100",
		"--request-rate", "30", "--json", shared)
	if code != 0 {
		t.Fatalf("simulate --cpus: exit %d: %s %s", code, out, errs)
	}
	rs, err := bench.LoadResult(shared)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Metadata["cpus"] != "1" || rs.Metadata["request_overhead"] != "50ms" || rs.Metadata["step_overhead"] != "1ms" {
		t.Errorf("metadata %v: want cpus 1, the overheads", rs.Metadata)
	}
	if len(rs.TTFTs) != 100 {
		t.Fatalf("%d TTFTs in the result, want 100", len(rs.TTFTs))
	}
	for i, v := range rs.TTFTs {
		if v < 0.051 {
			t.Fatalf("request %d: TTFT %.4f s, under the 50 ms request overhead + a 1 ms step overhead", i, v)
		}
	}

	// A client with --max-concurrency 2: bench serve's line, and never more than two in flight.
	capped := filepath.Join(dir, "capped.json")
	out, errs, code = runCmd(t, "simulate", "--profile", prof, "--replicas", "2", "--max-concurrency", "2",
		"--random-input-len", "100", "--random-output-len", "20", "--num-prompts", "50", "--json", capped)
	if code != 0 || !strings.Contains(out, "Maximum request concurrency:             2") {
		t.Fatalf("simulate --max-concurrency: exit %d: %s %s", code, out, errs)
	}
	if rc, err := bench.LoadResult(capped); err != nil || rc.MaxConcurrency == nil || *rc.MaxConcurrency != 2 || rc.MaxConcurrentRequests > 2 || rc.Completed != 50 {
		t.Fatalf("capped result %+v (err %v): want max_concurrency 2, at most 2 in flight, 50 done", rc, err)
	}

	// Bad input.
	bad := func(name string, want []string, args ...string) {
		t.Helper()
		out, errs, code := runCmd(t, args...)
		if code == 0 {
			t.Errorf("%s: exit 0: %s", name, out)
			return
		}
		for _, w := range want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: stderr lacks %q: %s", name, w, errs)
			}
		}
	}
	bad("policy", []string{"--router", "fastest"}, "simulate", "--profile", prof, "--router", "fastest")
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["cpu"].(map[string]any)["model"] = "Imaginary CPU 9000"
	other := filepath.Join(dir, "other-cpu.json")
	ob, _ := json.Marshal(m)
	if err := os.WriteFile(other, ob, 0o644); err != nil {
		t.Fatal(err)
	}
	bad("cpu", []string{"another CPU", "Imaginary CPU 9000", "--force"}, "simulate", "--profile", other, "--num-prompts", "5")
	if out, errs, code := runCmd(t, "simulate", "--profile", other, "--num-prompts", "5", "--force"); code != 0 {
		t.Errorf("--force: exit %d: %s %s", code, out, errs)
	}
	stories := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	bad("model", []string{"another model", "stories260K.bin"}, "simulate", "--profile", prof, "--model", stories, "--num-prompts", "5")
	trace := filepath.Join(dir, "t.jsonl")
	if err := os.WriteFile(trace, []byte(`{"arrival": 0, "prompt_tokens": 10, "output_tokens": 5}
{"arrival": 0.1, "prompt_tokens": 10, "output_tokens": -5}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	bad("trace", []string{"line 2", "output_tokens -5"}, "simulate", "--profile", prof, "--workload", trace)
	bad("no profile", []string{"--profile"}, "simulate")
	bad("autoscale", []string{"MIN:MAX"}, "simulate", "--profile", prof, "--autoscale", "4")
	bad("cpus", []string{"--cpus"}, "simulate", "--profile", prof, "--cpus", "-1")
	bad("max concurrency", []string{"--max-concurrency"}, "simulate", "--profile", prof, "--max-concurrency", "-2")
	bad("missing profile", []string{"nope.json"}, "simulate", "--profile", filepath.Join(dir, "nope.json"))
}
