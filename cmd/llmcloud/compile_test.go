// Tests of the compile command on stories260K: op counts per stage, what each pass did,
// planned memory, the IR dumps, and the Graphviz drawing (required when CI=true; .ci/run
// installs graphviz).
package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestCompileCommand(t *testing.T) {
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	out, errs, code := runCmd(t, "compile", bin)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// stories260K: 5 layers, so 2*5-1 residual adds fuse with the next norm.
	for _, want := range []string{
		"llama, dim 64, 5 layers",
		"op  built  dce  fuse_add_rms_norm  fuse_matmul_multi  fuse_swiglu  fuse_qkv_rope",
		"add_rms_norm      0    0                  9                  9            9              9",
		"nodes     84   84                 75                 60           55             50",
		"pass fuse_matmul_multi: 75 -> 60 nodes; fused matmul_multi 10, matmuls merged 25",
		"pass fuse_swiglu: 60 -> 55 nodes; fused swiglu 5",
		"pass fuse_qkv_rope: 55 -> 50 nodes; fused qkv_rope 5, ops absorbed 10",
		"pass dce: 84 -> 84 nodes; removed nodes 0, removed weights 0",
		"pass fuse_add_rms_norm: 84 -> 75 nodes; fused add+rms_norm 9",
		"n     graph               planned              unplanned",
		"512  compiled  944.0 KiB (966656 B)  12.0 MiB (12626432 B)  13.1x",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// --dump after is the compiled graph's IR, which parses back.
	out, errs, code = runCmd(t, "compile", bin, "--dump", "after", "--batch", "7")
	if code != 0 {
		t.Fatal(errs)
	}
	text := out[:strings.Index(out, "\n}\n")+3]
	g, err := graph.Parse(text)
	if err != nil || g.OpCounts()["add_rms_norm"] != 9 {
		t.Fatalf("dump after: %v\n%s", err, text)
	}
	if !strings.Contains(out, "\n  7     built  13.0 KiB (13312 B)") || strings.Contains(out, "\n  512 ") {
		t.Errorf("--batch 7 not planned alone:\n%s", out)
	}
	out, _, _ = runCmd(t, "compile", bin, "--dump", "passes")
	if strings.Count(out, "graph llama {") != 6 || !strings.Contains(out, "# after pass fuse_add_rms_norm (fused add+rms_norm 9)") {
		t.Errorf("dump passes:\n%.2000s", out)
	}
	out, _, _ = runCmd(t, "compile", bin, "--dump", "before")
	if !strings.HasPrefix(out, "graph llama {") || strings.Contains(out, "add_rms_norm(") {
		t.Errorf("dump before:\n%.2000s", out)
	}

	for _, bad := range [][]string{{"--dump", "sideways"}, {"--batch", "0"}, {"--batch", "x"}, {"a", "b"}} {
		if _, errs, code := runCmd(t, append([]string{"compile", bin}, bad...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", bad, code, errs)
		}
	}
}

// With no MODEL, compile uses the built-in default model, saying so on stderr.
func TestCompileDefaultModel(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	out, errs, code := runCmd(t, "compile", "--batch", "16")
	if code != 0 || strings.Count(errs, "built-in default model") != 1 || !strings.Contains(out, "pass fuse_add_rms_norm: ") {
		t.Fatalf("exit %d:\n%s\n%s", code, out, errs)
	}
}

func TestCompileDrawsSVG(t *testing.T) {
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	dir := t.TempDir()
	dotFile, svg := filepath.Join(dir, "g.dot"), filepath.Join(dir, "g.svg")

	// --dot needs no Graphviz.
	if _, errs, code := runCmd(t, "compile", bin, "--dot", dotFile); code != 0 {
		t.Fatal(errs)
	}
	if b, err := os.ReadFile(dotFile); err != nil || !strings.HasPrefix(string(b), `digraph "llama" {`) || !strings.Contains(string(b), "add_rms_norm") {
		t.Fatalf("dot file: %v\n%.500s", err, b)
	}

	if _, err := exec.LookPath("dot"); err != nil {
		fixture.Missing(t, "graphviz's dot is not on PATH (apt-get install graphviz)")
	}
	out, errs, code := runCmd(t, "compile", bin, "--svg", svg)
	if code != 0 || !strings.Contains(out, "drew the compiled graph into "+svg) {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !strings.Contains(string(b), "<svg") || strings.Count(string(b), "add_rms_norm") != 9 {
		t.Fatalf("svg: %v\n%.500s", err, b)
	}

	// Without dot on PATH, --svg says what to install.
	t.Setenv("PATH", t.TempDir())
	if _, errs, code := runCmd(t, "compile", bin, "--svg", filepath.Join(dir, "h.svg")); code != 1 || !strings.Contains(errs, "install graphviz") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}
