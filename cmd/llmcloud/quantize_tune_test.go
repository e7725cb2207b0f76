package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/format/gguf"
)

// TestQuantizeTuneScales: --tune-steps keeps every block's codes and rewrites only scales,
// reports a held-out KL no higher than before, writes a file that loads and leaves no
// temporary file; bad tuning flags are errors naming them.
func TestQuantizeTuneScales(t *testing.T) {
	dir, in, text := quantizeFixture(t)
	plain, tuned := filepath.Join(dir, "plain.gguf"), filepath.Join(dir, "tuned.gguf")
	if o, errs, code := runCmd(t, "quantize", in, plain, "--type", "q4_k"); code != 0 {
		t.Fatalf("exit %d: %s %s", code, o, errs)
	}
	o, errs, code := runCmd(t, "quantize", in, tuned, "--type", "q4_k", "--calibration", text,
		"--tune-steps", "4", "--tune-seq", "32", "--tune-batch", "2", "--tune-lr", "1e-3")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, o, errs)
	}
	m := regexp.MustCompile(`held-out KL from the float model ([0-9.e-]+) -> ([0-9.e-]+)`).FindStringSubmatch(errs)
	if m == nil {
		t.Fatalf("no tuning summary in %s", errs)
	}
	before, _ := strconv.ParseFloat(m[1], 64)
	after, _ := strconv.ParseFloat(m[2], 64)
	if !(after <= before) || !strings.Contains(o, "method rtn+tune") {
		t.Fatalf("KL %g -> %g; stdout %s", before, after, o)
	}
	if _, err := os.Stat(tuned + ".untuned.tmp"); !os.IsNotExist(err) {
		t.Fatalf("the temporary file is left: %v", err)
	}
	a, err := gguf.Open(plain)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := gguf.Open(tuned)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	x, _ := a.Tensor("blk.0.ffn_up.weight")
	y, _ := b.Tensor("blk.0.ffn_up.weight")
	if x.Type != y.Type || len(x.Data) != len(y.Data) {
		t.Fatalf("tuned %s %d bytes, plain %s %d", y.Type, len(y.Data), x.Type, len(x.Data))
	}
	scales := 0
	for i := 0; i < len(x.Data); i += 144 { // Q4_K: d, dmin, then sub-scales and codes
		if !bytes.Equal(x.Data[i+4:i+144], y.Data[i+4:i+144]) {
			t.Fatalf("block %d: tuning changed codes or sub-block scales", i/144)
		}
		if !bytes.Equal(x.Data[i:i+4], y.Data[i:i+4]) {
			scales++
		}
	}
	if after < before && scales == 0 {
		t.Fatal("the KL fell but no scale changed")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--type", "q4_k", "--tune-steps", "5"}, "--tune-steps needs --calibration"},
		{[]string{"--type", "q4_k", "--tune-steps", "5", "--tune-lr", "0", "--calibration", text}, "--tune-lr 0"},
		{[]string{"--type", "q4_k", "--tune-steps", "5", "--tune-tokens", "20", "--calibration", text}, "tuning needs at least"},
	} {
		_, errs, code := runCmd(t, append([]string{"quantize", in, filepath.Join(dir, "e.gguf")}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, errs, c.want)
		}
	}
}
