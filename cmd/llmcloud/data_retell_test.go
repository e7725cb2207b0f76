package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/train/sft"
)

// TestDataRetell writes the retelling dataset from a gzip'd and a plain story file and reads
// it back as fine-tuning examples; bad inputs give clear errors.
func TestDataRetell(t *testing.T) {
	dir := t.TempDir()
	stories := "Once upon a time, there was a cat. The cat was happy!\n\nTom had a red ball.\nHe liked it.\n\n\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(stories))
	zw.Close()
	train, val := filepath.Join(dir, "train.txt.gz"), filepath.Join(dir, "val.txt")
	if err := os.WriteFile(train, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(val, []byte("Sam saw a dog. It ran.\r\n\r\nThe end."), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ds")
	stdout, errs, code := runCmd(t, "data", "retell", "--input", train, "--val-input", val, "-o", out, "--train", "50", "--val", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, stdout, errs)
	}
	if !strings.Contains(stdout, "50 examples from 2 documents") || !strings.Contains(stdout, "7 examples from 2 documents") {
		t.Errorf("output: %s", stdout)
	}
	for f, n := range map[string]int{"train.jsonl": 50, "val.jsonl": 7} {
		ex, err := sft.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(ex) != n {
			t.Fatalf("%s: %d examples, want %d", f, len(ex), n)
		}
		for _, e := range ex {
			u, a := e.Messages[0].Content, e.Messages[1].Content
			if !strings.HasSuffix(u, "\n\n"+a) {
				t.Fatalf("%s: the answer %q is not the user's text %q", f, a, u)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input", train, "-o", out}, "needs"},
		{[]string{"--input", filepath.Join(dir, "none.txt"), "--val-input", val, "-o", out}, "no such file"},
		{[]string{"--input", val + ".gz", "--val-input", val, "-o", out}, "no such file"},
		{[]string{"--input", val, "--val-input", train[:len(train)-3], "-o", out}, "no such file"},
	} {
		_, errs, code := runCmd(t, append([]string{"data", "retell"}, c.args...)...)
		if code == 0 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want an error with %q", c.args, code, errs, c.want)
		}
	}
	empty := filepath.Join(dir, "empty.txt")
	os.WriteFile(empty, []byte("\n \n"), 0o644)
	if _, errs, code := runCmd(t, "data", "retell", "--input", empty, "--val-input", val, "-o", out); code == 0 || !strings.Contains(errs, "no documents") {
		t.Errorf("empty input: exit %d, %q", code, errs)
	}
	notgz := filepath.Join(dir, "bad.gz")
	os.WriteFile(notgz, []byte("plain"), 0o644)
	if _, errs, code := runCmd(t, "data", "retell", "--input", notgz, "--val-input", val, "-o", out); code == 0 || !strings.Contains(errs, "gzip") {
		t.Errorf("not gzip: exit %d, %q", code, errs)
	}
}
