// Tests of the quantize command: the rtn method writes the bytes `convert --type` writes, the
// calibrated methods write GGUF that loads, and calibration too short for a method is an error
// that says how much it needs.
package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

func quantizeFixture(t *testing.T) (dir, in, text string) {
	t.Helper()
	dir = t.TempDir()
	in = filepath.Join(dir, "in.gguf")
	if _, errs, code := runCmd(t, "synth", "--arch", "llama", "--dim", "256", "--layers", "2", "--heads", "4", "--kv-heads", "4",
		"--ffn", "256", "-o", in); code != 0 {
		t.Fatal(errs)
	}
	text = filepath.Join(dir, "calib.txt")
	var b strings.Builder
	for i := 0; b.Len() < 1200; i++ {
		b.WriteString("The quick brown fox jumps over the lazy dog; calibration sentence number ")
		b.WriteByte(byte('0' + i%10))
		b.WriteString(".\n")
	}
	if err := os.WriteFile(text, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, in, text
}

func TestQuantizeRTNIsConvert(t *testing.T) {
	dir, in, _ := quantizeFixture(t)
	for _, typ := range []string{"q4_0", "q4_k", "q4_k_m", "q6_k", "q8_0"} {
		a, b := filepath.Join(dir, typ+"-q.gguf"), filepath.Join(dir, typ+"-c.gguf")
		if out, errs, code := runCmd(t, "quantize", in, a, "--type", typ); code != 0 {
			t.Fatalf("quantize %s: exit %d: %s %s", typ, code, out, errs)
		}
		if out, errs, code := runCmd(t, "convert", in, b, "--type", typ); code != 0 {
			t.Fatalf("convert %s: exit %d: %s %s", typ, code, out, errs)
		}
		da, _ := os.ReadFile(a)
		db, _ := os.ReadFile(b)
		if len(da) == 0 || !bytes.Equal(da, db) {
			t.Errorf("%s: quantize --method rtn (%d bytes) differs from convert --type (%d bytes)", typ, len(da), len(db))
		}
	}
}

func TestQuantizeMethods(t *testing.T) {
	dir, in, text := quantizeFixture(t)
	im := filepath.Join(dir, "im.dat")
	for _, m := range []string{"imatrix", "awq", "gptq"} {
		out := filepath.Join(dir, m+".gguf")
		args := []string{"quantize", in, out, "--type", "q4_k", "--method", m, "--calibration", text, "--ctx", "64"}
		if m == "imatrix" {
			args = append(args, "--imatrix-out", im)
		}
		if o, errs, code := runCmd(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s %s", m, code, o, errs)
		}
		b, err := loader.Open(out, loader.Options{})
		if err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if w := b.Model.Weights["blk.1.ffn_up.weight"]; w.Type.String() != "Q4_K" {
			t.Errorf("%s: ffn_up is %s", m, w.Type)
		}
		b.Close()
	}
	// The saved importance matrix gives the same file without calibration.
	again := filepath.Join(dir, "imatrix-again.gguf")
	if o, errs, code := runCmd(t, "quantize", in, again, "--type", "q4_k", "--method", "imatrix", "--imatrix", im); code != 0 {
		t.Fatalf("--imatrix: exit %d: %s %s", code, o, errs)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "imatrix.gguf"))
	b, _ := os.ReadFile(again)
	if !bytes.Equal(a, b) {
		t.Error("quantizing with the saved imatrix differs from quantizing with the calibration")
	}
}

func TestQuantizeErrors(t *testing.T) {
	dir, in, text := quantizeFixture(t)
	out := filepath.Join(dir, "o.gguf")
	short := filepath.Join(dir, "short.txt")
	if err := os.WriteFile(short, []byte(strings.Repeat("too short. ", 15)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "q4_k", "--method", "gptq", "--calibration", text, "--ctx", "64", "--calib-tokens", "64"}, "needs at least 256"},
		{[]string{"--type", "q4_k", "--method", "gptq", "--calibration", short, "--ctx", "64"}, "needs at least 256"},
		{[]string{"--type", "q4_k", "--method", "awq"}, "needs --calibration"},
		{[]string{"--type", "q5_k"}, "--type"},
		{[]string{"--type", "q4_0", "--group-size", "128"}, "fixed at 32"},
		{[]string{"--type", "q4_k", "--method", "best"}, "--method"},
	} {
		_, errs, code := runCmd(t, append([]string{"quantize", in, out}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
