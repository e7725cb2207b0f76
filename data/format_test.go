// Tests of Open's checks (missing, truncated, mismatched and corrupt files give errors naming
// the problem) and fuzz targets for the shard header and meta.json parsers.
package data

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenErrors(t *testing.T) {
	type edit func(t *testing.T, dir string)
	shard := func(dir string) string { return filepath.Join(dir, "train_0000.bin") }
	metaEdit := func(f func(m map[string]any)) edit {
		return func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, MetaFile))
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			f(m)
			b, _ = json.Marshal(m)
			os.WriteFile(filepath.Join(dir, MetaFile), b, 0o644)
		}
	}
	patch := func(off int, b ...byte) edit {
		return func(t *testing.T, dir string) {
			f, err := os.OpenFile(shard(dir), os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			f.WriteAt(b, int64(off))
		}
	}
	cases := []struct {
		name  string
		split string
		edit  edit
		want  string
	}{
		{"no meta", "train", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, MetaFile)) }, "no meta.json"},
		{"bad json", "train", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, MetaFile), []byte("{"), 0o644) }, "invalid JSON"},
		{"format", "train", metaEdit(func(m map[string]any) { m["format"] = "other" }), "format"},
		{"version", "train", metaEdit(func(m map[string]any) { m["version"] = 2 }), "version 2"},
		{"dtype", "train", metaEdit(func(m map[string]any) { m["dtype"] = "int8" }), "dtype"},
		{"dtype too narrow", "train", metaEdit(func(m map[string]any) { m["vocab_size"] = 70000 }), "does not fit"},
		{"bos", "train", metaEdit(func(m map[string]any) { m["bos_id"] = 500 }), "bos_id"},
		{"escape", "train", metaEdit(func(m map[string]any) { m["train"].([]any)[0].(map[string]any)["file"] = "../x.bin" }), "plain file name"},
		{"split", "test", nil, "unknown split"},
		{"empty split", "val", metaEdit(func(m map[string]any) { m["val"] = []any{} }), "no shards"},
		{"missing shard", "train", func(t *testing.T, dir string) { os.Remove(shard(dir)) }, "missing"},
		{"truncated", "train", func(t *testing.T, dir string) { os.Truncate(shard(dir), 16+2*50-1) }, "truncated"},
		{"count", "train", metaEdit(func(m map[string]any) { m["train"].([]any)[0].(map[string]any)["tokens"] = 49 }), "mismatched"},
		{"magic", "train", patch(0, 'X'), "bad magic"},
		{"header version", "train", patch(8, 9), "version 9"},
		{"width", "train", patch(12, 4), "4 bytes per token"},
		{"id", "train", patch(16+2*7, 0xff, 0xff), "token 7 has id 65535"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeStream(t, 300, 50, iota(120, 300), iota(60, 300))
			if c.edit != nil {
				c.edit(t, dir)
			}
			d, err := Open(dir, c.split)
			if err == nil {
				d.Close()
				t.Fatalf("opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}
}

func FuzzParseHeader(f *testing.F) {
	f.Add(AppendHeader(nil, 2))
	f.Add(AppendHeader(nil, 4))
	f.Add([]byte("LLMCTOK1\x01\x00\x00\x00\x03\x00\x00\x00"))
	f.Add([]byte("short"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseHeader(b)
		if err != nil {
			return
		}
		if h.Version != Version || (h.BytesPerToken != 2 && h.BytesPerToken != 4) || string(b[:8]) != Magic {
			t.Fatalf("accepted %q as %+v", b, h)
		}
		if got := AppendHeader(nil, int(h.BytesPerToken)); string(got) != string(b[:HeaderBytes]) {
			t.Fatalf("re-encoding %+v gives %q, not %q", h, got, b[:HeaderBytes])
		}
		if binary.LittleEndian.Uint32(b[12:]) != h.BytesPerToken {
			t.Fatal("width is not little-endian")
		}
	})
}

func FuzzParseMeta(f *testing.F) {
	good := `{"format":"llmcloud-shards","version":1,"tokenizer":"tokenizer.json","vocab_size":4096,` +
		`"dtype":"uint16","bos_id":0,"eos_id":0,"train":[{"file":"train_0000.bin","tokens":10}],"val":[]}`
	f.Add([]byte(good))
	f.Add([]byte(strings.Replace(good, "uint16", "uint32", 1)))
	f.Add([]byte(strings.Replace(good, "train_0000.bin", "../etc/passwd", 1)))
	f.Add([]byte(`{"format":"llmcloud-shards","version":1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseMeta(b)
		if err != nil {
			return
		}
		// whatever is accepted is self-consistent and survives a write/read round trip
		if BytesPerToken(m.DType) == 0 || m.VocabSize <= 0 || m.BOSID >= m.VocabSize || m.EOSID >= m.VocabSize {
			t.Fatalf("accepted inconsistent meta %+v", m)
		}
		for _, s := range append(append([]Shard{}, m.Train...), m.Val...) {
			if strings.ContainsAny(s.File, `/\`) || s.Tokens < 0 {
				t.Fatalf("accepted shard %+v", s)
			}
		}
		js, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseMeta(js); err != nil {
			t.Fatalf("re-encoded meta rejected: %v", err)
		}
	})
}
