package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `train` with a NaN loss injected at steps 3.. skips them, logs them by step, stops after
// --max-bad-steps with a checkpoint that `--resume latest` continues; a flipped bit in that
// checkpoint and a latest file pointing outside the run are refused with the file named.
func TestTrainNaNAndDamagedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for range 30 {
		text.WriteString("The lamp in the lighthouse turned all night over the grey water.\n")
	}
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(text.String()), 0o644)
	tok := filepath.Join(dir, "tok")
	run(t, "tokenizer", "train", "--vocab-size", "300", "--input", txt, "-o", tok)
	data := filepath.Join(dir, "data")
	run(t, "data", "prepare", "--tokenizer", tok, "--input", txt, "-o", data)
	out := filepath.Join(dir, "run")
	args := []string{"train", "--data", data, "--out", out, "--dim", "32", "--layers", "1", "--heads", "2",
		"--batch", "2", "--seq", "16", "--steps", "10", "--threads", "1", "--max-bad-steps", "2"}

	t.Setenv("LLMCLOUD_TRAIN_INJECT_NAN", "3-9")
	var o, e bytes.Buffer
	if code := runMain(args, &o, &e); code == 0 || !strings.Contains(e.String(), "stopped at step 4") ||
		!strings.Contains(e.String(), "since step 3") || !strings.Contains(e.String(), "step 3 skipped: loss NaN") ||
		!strings.Contains(o.String(), "checkpoint ") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, o.String(), e.String())
	}
	raw, err := os.ReadFile(filepath.Join(out, "log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 4 || json.Unmarshal([]byte(lines[2]), &rec) != nil || rec["step"] != 3.0 ||
		!strings.Contains(rec["skipped"].(string), "NaN") || rec["loss"] != nil {
		t.Fatalf("log.jsonl:\n%s", raw)
	}
	os.Unsetenv("LLMCLOUD_TRAIN_INJECT_NAN")

	ck := filepath.Join(out, "ckpt", "step-00000004")
	st := filepath.Join(ck, "state.safetensors")
	orig, err := os.ReadFile(st)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), orig...)
	flipped[len(flipped)/2] ^= 1
	os.WriteFile(st, flipped, 0o644)
	o.Reset()
	e.Reset()
	if code := runMain([]string{"train", "--resume", "latest", "--out", out, "--threads", "1"}, &o, &e); code == 0 ||
		!strings.Contains(e.String(), "state.safetensors is damaged") {
		t.Fatalf("flipped bit: exit %d, stderr %s", code, e.String())
	}
	os.WriteFile(st, orig, 0o644)

	latest := filepath.Join(out, "latest")
	good, _ := os.ReadFile(latest)
	os.WriteFile(latest, []byte("../../../../etc\n"), 0o644)
	e.Reset()
	if code := runMain([]string{"train", "--resume", "latest", "--out", out, "--threads", "1"}, &o, &e); code == 0 ||
		!strings.Contains(e.String(), "inside the run directory") {
		t.Fatalf("latest ../: exit %d, stderr %s", code, e.String())
	}
	os.WriteFile(latest, good, 0o644)

	stdout, _ := run(t, "train", "--resume", "latest", "--out", out, "--threads", "1")
	if !strings.Contains(stdout, "trained 10 steps") {
		t.Errorf("resumed: %s", stdout)
	}
}
