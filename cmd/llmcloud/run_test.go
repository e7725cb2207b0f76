package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/internal/fixture"
)

type refJSON struct {
	Prompt     string `json:"prompt"`
	PromptIDs  []int  `json:"prompt_ids"`
	GreedyIDs  []int  `json:"greedy_ids"`
	GreedyText string `json:"greedy_text"`
}

func readRef(t *testing.T, name string) refJSON {
	t.Helper()
	b, err := os.ReadFile(fixture.Path(t, "reference", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r refJSON
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func run(t *testing.T, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := runMain(args, &out, &errb); code != 0 {
		t.Fatalf("llmcloud %s: exit %d\nstderr: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String(), errb.String()
}

// `llmcloud generate` reproduces llama.cpp's greedy continuation of the real stories260K model,
// from the llama2.c checkpoint and from the GGUF files.
func TestGenerateMatchesReference(t *testing.T) {
	models := map[string][]string{
		"stories260K-f32": {"models", "stories260K", "stories260K-f32.gguf"},
		"stories260K-f16": {"models", "stories260K", "stories260K-f16.gguf"},
	}
	bin := []string{"models", "stories260K", "stories260K.bin"}
	for name, path := range models {
		for k := 1; k <= 3; k++ {
			ref := readRef(t, name+"__p"+strconv.Itoa(k))
			paths := [][]string{path}
			if name == "stories260K-f32" {
				paths = append(paths, bin)
			}
			for _, p := range paths {
				out, stderr := run(t, "generate", "--model", fixture.Path(t, p...), "--prompt", ref.Prompt,
					"--max-tokens", strconv.Itoa(len(ref.GreedyIDs)), "--temperature", "0")
				if got := strings.TrimSuffix(out, "\n"); got != ref.GreedyText {
					t.Errorf("%s p%d: got %q\nwant %q", filepath.Base(p[len(p)-1]), k, got, ref.GreedyText)
				}
				if !strings.Contains(stderr, "tokens/s") {
					t.Errorf("stderr has no timings: %q", stderr)
				}
			}
		}
	}
}

func readF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// `llmcloud logits` writes the reference layout and matches llama.cpp's logits.
func TestLogitsCommand(t *testing.T) {
	for _, c := range []struct {
		model string
		path  []string
		tol   float64
	}{
		{"rand3M-f32", []string{"models", "rand3M", "rand3M-f32.gguf"}, 1e-5},
		{"stories260K-f32", []string{"models", "stories260K", "stories260K-f32.gguf"}, 1e-4},
	} {
		ref := readRef(t, c.model+"__p2")
		out := filepath.Join(t.TempDir(), "logits.f32")
		stdout, _ := run(t, "logits", "--model", fixture.Path(t, c.path...), "--prompt", ref.Prompt, "-o", out)
		var ids []string
		for _, id := range ref.PromptIDs {
			ids = append(ids, strconv.Itoa(id))
		}
		if strings.TrimSpace(stdout) != strings.Join(ids, " ") {
			t.Errorf("%s: prompt ids %q, want %q", c.model, stdout, strings.Join(ids, " "))
		}
		got := readF32(t, out)
		want := readF32(t, fixture.Path(t, "reference", c.model+"__p2.logits.f32"))
		if len(got) != len(want) {
			t.Fatalf("%s: %d logits, want %d", c.model, len(got), len(want))
		}
		maxd := 0.0
		for i := range got {
			maxd = math.Max(maxd, math.Abs(float64(got[i]-want[i])))
		}
		if maxd > c.tol {
			t.Errorf("%s: max abs logit diff %g > %g", c.model, maxd, c.tol)
		}
	}
}

// `llmcloud perplexity` prints llama-perplexity's figure (a prefix of chunks here; the eval
// package checks the whole file).
func TestPerplexityCommand(t *testing.T) {
	out, _ := run(t, "perplexity", "--model", fixture.Path(t, "models", "stories260K", "stories260K-f32.gguf"),
		"--file", fixture.Path(t, "reference", "brown_val_100k.txt"), "--ctx", "128", "--chunks", "10")
	var ppl float64
	if _, err := fmtSscanf(out, &ppl); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	// llama-perplexity's running estimate after 10 chunks (perplexity__stories260K-f32.log).
	log, err := os.ReadFile(fixture.Path(t, "reference", "perplexity__stories260K-f32.log"))
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(log), "[10]")
	if i < 0 {
		t.Fatal("no [10] estimate in the log")
	}
	f := strings.FieldsFunc(string(log[i+4:]), func(r rune) bool { return r == ',' || r == ' ' || r == '\n' })
	want, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(ppl-want)/want > 1e-3 {
		t.Errorf("PPL after 10 chunks = %v, llama-perplexity %v", ppl, want)
	}
}

func fmtSscanf(s string, ppl *float64) (int, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "PPL = ") {
		return 0, strconv.ErrSyntax
	}
	v, err := strconv.ParseFloat(strings.Fields(s[len("PPL = "):])[0], 64)
	*ppl = v
	return 1, err
}

func TestBadInvocation(t *testing.T) {
	var out, errb bytes.Buffer
	if code := runMain([]string{"logits", "--prompt", "x"}, &out, &errb); code != 2 {
		t.Errorf("logits without -o: exit %d, want 2 (%s)", code, errb.String())
	}
	if code := runMain([]string{"nosuch"}, &out, &errb); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
	bad := filepath.Join(t.TempDir(), "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	errb.Reset()
	if code := runMain([]string{"generate", "--model", bad, "--prompt", "x"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "bad.gguf") {
		t.Errorf("truncated GGUF: exit %d, stderr %q; want exit 1 and an error naming the file", code, errb.String())
	}
}

func TestChatPlainTranscript(t *testing.T) {
	var out, errb bytes.Buffer
	in := strings.NewReader("Hello\n/exit\n")
	err := runChat([]string{"--model", fixture.Path(t, "models", "stories260K", "stories260K.bin"), "--max-tokens", "8", "--temperature", "0"}, in, &out, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out.String()) == "" {
		t.Errorf("chat printed no reply; stderr %q", errb.String())
	}
}
