// Tests of the export command: stories260K exported (weights inline, and as external data
// with a KV cache),
// decoded back, its reference logits equal to the model's; when Node and scripts/onnx's
// packages are installed, ONNX Runtime runs the export and check.mjs compares the logits
// (under CI=true with node present, the packages must be there: .ci/run installs them).
package main

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/internal/fixture"
)

func TestExportCommand(t *testing.T) {
	bin := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	dir := t.TempDir()
	for _, external := range []bool{false, true} {
		out := filepath.Join(dir, "inline.onnx")
		args := []string{"export", "--onnx", out, bin, "--reference-ids", "1,403,31,5,288,17;1,77,88,99,100,101"}
		if external {
			out = filepath.Join(dir, "ext.onnx")
			args = append(args, "--external-data", "--kv-cache")
			args[2] = out
		}
		if o, errs, code := runCmd(t, args...); code != 0 {
			t.Fatalf("exit %d: %s %s", code, o, errs)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		m, err := onnx.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		wantInputs := 1
		if external {
			wantInputs += 2 * 5 // past key and value of stories260K's 5 layers
		}
		if len(m.Graph.Inputs) != wantInputs || m.Graph.Inputs[0].Name != "input_ids" || m.Graph.Outputs[0].Name != "logits" || m.Opsets[0].Version < 17 {
			t.Errorf("inputs %v outputs %v opsets %v", m.Graph.Inputs, m.Graph.Outputs, m.Opsets)
		}
		_, statErr := os.Stat(out + ".data")
		if external != (statErr == nil) {
			t.Errorf("external %v: data file: %v", external, statErr)
		}
		var ref referenceFile
		data, err := os.ReadFile(out + ".reference.json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(ref.Sequences[1].Logits)
		if ref.Vocab != 512 || len(ref.Sequences) != 2 || err != nil || len(raw) != 4*6*512 {
			t.Fatalf("reference: vocab %d, %d sequences, %d bytes of logits (%v)", ref.Vocab, len(ref.Sequences), len(raw), err)
		}
		runONNXRuntime(t, out)
	}
	if _, errs, code := runCmd(t, "export", bin); code == 0 || !strings.Contains(errs, "--onnx") {
		t.Errorf("no --onnx: exit %d %s", code, errs)
	}
	if _, errs, code := runCmd(t, "export", "--onnx", filepath.Join(dir, "x.onnx"), bin, "--reference-ids", "1,x"); code == 0 || !strings.Contains(errs, "bad token id") {
		t.Errorf("bad ids: exit %d %s", code, errs)
	}
	if _, errs, code := runCmd(t, "export", "--onnx", filepath.Join(dir, "x.onnx"), bin, "--reference-ids", "1,999"); code == 0 || !strings.Contains(errs, "outside the vocabulary") {
		t.Errorf("id outside the vocabulary: exit %d %s", code, errs)
	}
}

// runONNXRuntime runs scripts/onnx/check.mjs on an export when node and its packages are here.
func runONNXRuntime(t *testing.T, model string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Log("node not installed: ONNX Runtime check not run (scripts/onnx/run.sh does it in CI)")
		return
	}
	dir := filepath.Join(fixture.ModuleRoot(), "scripts", "onnx")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "onnxruntime-node")); err != nil {
		if fixture.CI() {
			t.Fatalf("CI=true: %s has no node_modules (run npm ci there, as .ci/run does)", dir)
		}
		t.Logf("scripts/onnx packages not installed (npm ci there): ONNX Runtime check not run")
		return
	}
	cmd := exec.Command(node, "--no-warnings", "check.mjs", model, "--label", filepath.Base(model))
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("check.mjs: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
