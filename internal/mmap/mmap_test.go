package mmap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestMap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	want := bytes.Repeat([]byte("llmcloud"), 1000)
	if err := os.WriteFile(p, want, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, release, err := Map(f, int64(len(want)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Error("mapped bytes differ from the file")
	}
	if err := release(); err != nil {
		t.Error(err)
	}
	if data, _, err := Map(f, 0); err != nil || data != nil {
		t.Errorf("empty map: %v %v", data, err)
	}
	if _, _, err := Map(f, -1); err == nil {
		t.Error("negative size mapped")
	}
}
