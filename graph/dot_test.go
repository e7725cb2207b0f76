// Tests of the DOT writer: the text for a fused graph, and that Graphviz accepts it when present.
package graph

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

func TestWriteDOT(t *testing.T) {
	g, _, err := RunPasses(mustParse(t, residualBlock), FuseAddNorm)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteDOT(&b, g); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		`digraph "res" {`,
		`in0 [shape=ellipse, label="%x\lf32[n,8]\l"];`,
		`n0 [shape=box, style=filled, fillcolor="#cfe2f3", label="matmul\l%o: f32[n,8]\lw w: f32[8,8]\l"];`,
		`fillcolor="#fff2cc", label="add_rms_norm\l%r1: f32[n,8]\l%h1: f32[n,8]\l{eps=1e-05}\lw n1: f32[8]\l"]`,
		`in0 -> n0;`,
		`n1 -> n2 [label="%h1"];`,
		`out0 [shape=octagon, label="output %r2\l"];`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("DOT lacks %q:\n%s", want, text)
		}
	}
	// Every node and edge is well formed enough for Graphviz itself, when it is here.
	dot, err := exec.LookPath("dot")
	if err != nil {
		t.Skip("graphviz's dot is not on PATH")
	}
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = &b
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("<svg")) || !bytes.Contains(out, []byte("add_rms_norm")) {
		t.Fatalf("dot: %v\n%s", err, out)
	}
}
