// This file tests model directories: sharded and single-file round trips through
// WriteSharded/OpenDir, and the index consistency errors.
package safetensors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/tensor"
)

func checkSet(t *testing.T, s *Set, want []tensor.Tensor) {
	t.Helper()
	if len(s.Tensors) != len(want) {
		t.Fatalf("set has %d tensors, want %d", len(s.Tensors), len(want))
	}
	for _, w := range want {
		g, ok := s.Tensors[w.Name]
		if !ok {
			t.Fatalf("tensor %s missing from set", w.Name)
		}
		sameTensor(t, g, w)
	}
}

func TestShardedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	ts := sampleTensors() // 60, 18, 24, 12, 4, 0, 8 bytes
	if err := WriteSharded(dir, ts, map[string]string{"format": "pt"}, 40); err != nil {
		t.Fatal(err)
	}
	// 60 alone (larger than the limit); 18+24 > 40 so 18 alone; 24+12+4+0 = 40; then 8.
	wantShards := map[string][]string{
		"model-00001-of-00004.safetensors": {"model.embed_tokens.weight"},
		"model-00002-of-00004.safetensors": {"model.layers.0.self_attn.q_proj.weight"},
		"model-00003-of-00004.safetensors": {"model.layers.0.mlp.up_proj.weight", "model.norm.weight", "scalar", "empty"},
		"model-00004-of-00004.safetensors": {"ids"},
	}
	raw, err := os.ReadFile(filepath.Join(dir, IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Metadata  map[string]int64  `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Metadata["total_size"] != 126 {
		t.Errorf("total_size %d, want 126", idx.Metadata["total_size"])
	}
	for shard, names := range wantShards {
		for _, n := range names {
			if idx.WeightMap[n] != shard {
				t.Errorf("weight_map[%s] = %q, want %q", n, idx.WeightMap[n], shard)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, SingleFile)); err == nil {
		t.Error("model.safetensors exists next to a sharded checkpoint")
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if len(s.Files) != 4 {
		t.Fatalf("%d files, want 4", len(s.Files))
	}
	for _, f := range s.Files {
		if f.Metadata["format"] != "pt" {
			t.Errorf("%s: metadata %v", f.Path, f.Metadata)
		}
	}
	checkSet(t, s, ts)

	// Re-writing the same directory as one file replaces the sharded layout.
	if err := WriteSharded(dir, ts, nil, 1<<30); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, IndexFile)); err == nil {
		t.Error("index left behind after a single-file write")
	}
	s2, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if len(s2.Files) != 1 || filepath.Base(s2.Files[0].Path) != SingleFile {
		t.Fatalf("single-file dir opened as %d files", len(s2.Files))
	}
	checkSet(t, s2, ts)
}

func TestWriteShardedErrors(t *testing.T) {
	dir := t.TempDir()
	if err := WriteSharded(dir, sampleTensors(), nil, 0); err == nil {
		t.Error("maxShardBytes 0 accepted")
	}
	if err := WriteSharded(dir, nil, nil, 10); err == nil {
		t.Error("no tensors accepted")
	}
	a := f32Tensor("a", 0, 4)
	if err := WriteSharded(dir, []tensor.Tensor{a, a}, nil, 10); err == nil {
		t.Error("duplicate names accepted")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed writes left %d files", len(entries))
	}
}

// writeIndexDir writes two shards and an index with the given weight map.
func writeIndexDir(t *testing.T, weightMap map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "s1.safetensors"), []tensor.Tensor{f32Tensor("a", 0, 2), f32Tensor("b", 0, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "s2.safetensors"), []tensor.Tensor{f32Tensor("c", 0, 2)}, nil); err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 24}, "weight_map": weightMap})
	if err := os.WriteFile(filepath.Join(dir, IndexFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenDirErrors(t *testing.T) {
	good := map[string]string{"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors"}
	s, err := OpenDir(writeIndexDir(t, good))
	if err != nil {
		t.Fatalf("valid index: %v", err)
	}
	s.Close()

	cases := []struct {
		name string
		wm   map[string]string
		want string
	}{
		{"missing shard", map[string]string{"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors", "d": "s3.safetensors"}, "s3.safetensors, which is missing"},
		{"tensor missing from shard", map[string]string{"a": "s1.safetensors", "b": "s1.safetensors", "c": "s2.safetensors", "z": "s2.safetensors"}, `tensor "z" is missing from shard s2.safetensors`},
		{"tensor not in index", map[string]string{"a": "s1.safetensors", "c": "s2.safetensors"}, `tensor "b" is not listed`},
		{"wrong shard", map[string]string{"a": "s1.safetensors", "b": "s1.safetensors", "c": "s1.safetensors"}, `tensor "c"`},
		{"path escape", map[string]string{"a": "../s1.safetensors"}, "not a file name"},
		{"empty", map[string]string{}, "weight_map is missing or empty"},
	}
	for _, c := range cases {
		_, err := OpenDir(writeIndexDir(t, c.wm))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: OpenDir error %v, want one containing %q", c.name, err, c.want)
		}
	}

	dir := t.TempDir()
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), "neither") {
		t.Errorf("empty dir: %v", err)
	}
	os.WriteFile(filepath.Join(dir, IndexFile), []byte("{not json"), 0o644)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), IndexFile) {
		t.Errorf("bad index JSON: %v", err)
	}
	os.WriteFile(filepath.Join(dir, SingleFile), []byte("garbage!garbage!"), 0o644)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), SingleFile) {
		t.Errorf("corrupt model.safetensors: %v", err)
	}
}
