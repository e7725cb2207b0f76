// This file implements model directories: OpenDir reads model.safetensors or a sharded
// checkpoint (model.safetensors.index.json + model-0000i-of-0000n.safetensors), and
// WriteSharded writes one.
package safetensors

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/tensor"
)

// Names of the files in a Hugging Face model directory.
const (
	SingleFile = "model.safetensors"
	IndexFile  = "model.safetensors.index.json"
)

// Set is the union of the tensors of a model directory's safetensors files.
type Set struct {
	Files   []*File
	Tensors map[string]*tensor.Tensor
}

// Close unmaps every file of the set.
func (s *Set) Close() error {
	var errs []error
	for _, f := range s.Files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// index is the JSON of model.safetensors.index.json.
type index struct {
	Metadata  map[string]any    `json:"metadata"`
	WeightMap map[string]string `json:"weight_map"`
}

// OpenDir opens the safetensors weights of a model directory: model.safetensors when it
// exists, else the shards named by model.safetensors.index.json. Every tensor the index names
// must be in the shard it names, and every tensor of a shard must be in the index.
func OpenDir(dir string) (*Set, error) {
	single := filepath.Join(dir, SingleFile)
	if _, err := os.Stat(single); err == nil {
		f, err := Open(single)
		if err != nil {
			return nil, err
		}
		s := &Set{Files: []*File{f}, Tensors: make(map[string]*tensor.Tensor, len(f.Tensors))}
		for i := range f.Tensors {
			s.Tensors[f.Tensors[i].Name] = &f.Tensors[i]
		}
		return s, nil
	}
	idxPath := filepath.Join(dir, IndexFile)
	raw, err := os.ReadFile(idxPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %s: neither %s nor %s found", dir, SingleFile, IndexFile)
	}
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	s, err := openIndexed(dir, idxPath, raw)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openIndexed opens the shards listed in an index file and cross-checks them.
func openIndexed(dir, idxPath string, raw []byte) (*Set, error) {
	var idx index
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, fmt.Errorf("safetensors: %s: bad JSON: %v", idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("safetensors: %s: weight_map is missing or empty", idxPath)
	}
	var shards []string
	for name, shard := range idx.WeightMap {
		if shard == "" || shard != filepath.Base(shard) || shard == "." || shard == ".." || strings.ContainsAny(shard, `/\`) {
			return nil, fmt.Errorf("safetensors: %s: tensor %q maps to %q, which is not a file name in the directory", idxPath, name, shard)
		}
		if !slices.Contains(shards, shard) {
			shards = append(shards, shard)
		}
	}
	slices.Sort(shards)
	s := &Set{Tensors: make(map[string]*tensor.Tensor, len(idx.WeightMap))}
	for _, shard := range shards {
		p := filepath.Join(dir, shard)
		if _, err := os.Stat(p); err != nil {
			s.Close()
			return nil, fmt.Errorf("safetensors: %s names shard %s, which is missing: %v", idxPath, shard, err)
		}
		f, err := Open(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.Files = append(s.Files, f)
		for i := range f.Tensors {
			t := &f.Tensors[i]
			want, ok := idx.WeightMap[t.Name]
			if !ok {
				s.Close()
				return nil, fmt.Errorf("safetensors: %s: tensor %q is not listed in %s", p, t.Name, idxPath)
			}
			if want != shard {
				s.Close()
				return nil, fmt.Errorf("safetensors: %s: tensor %q is also in %s, where %s puts it", p, t.Name, want, idxPath)
			}
			s.Tensors[t.Name] = t
		}
	}
	for name, shard := range idx.WeightMap {
		if _, ok := s.Tensors[name]; !ok {
			s.Close()
			return nil, fmt.Errorf("safetensors: %s: tensor %q is missing from shard %s", idxPath, name, shard)
		}
	}
	return s, nil
}

// WriteSharded writes tensors, in order, into dir as shards of at most maxShardBytes of
// tensor data each (a larger tensor gets a shard of its own), named
// model-00001-of-0000n.safetensors, plus model.safetensors.index.json with weight_map and
// metadata.total_size. When everything fits in one shard it writes model.safetensors instead.
// metadata goes into every shard's header. The weights file of the other layout is removed so
// that OpenDir sees what was just written.
func WriteSharded(dir string, tensors []tensor.Tensor, metadata map[string]string, maxShardBytes int64) error {
	if maxShardBytes <= 0 {
		return fmt.Errorf("safetensors: write %s: maxShardBytes must be positive, got %d", dir, maxShardBytes)
	}
	if len(tensors) == 0 {
		return fmt.Errorf("safetensors: write %s: no tensors", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if _, err := encodeHeader(tensors, nil); err != nil { // validate everything before writing
		return fmt.Errorf("safetensors: write %s: %w", dir, err)
	}
	var groups [][]tensor.Tensor
	var size, total int64
	for _, t := range tensors {
		n := int64(len(t.Data))
		if len(groups) == 0 || (size+n > maxShardBytes && size > 0) {
			groups = append(groups, nil)
			size = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], t)
		size += n
		total += n
	}
	if len(groups) == 1 {
		if err := WriteFile(filepath.Join(dir, SingleFile), tensors, metadata); err != nil {
			return err
		}
		return removeIfExists(filepath.Join(dir, IndexFile))
	}
	idx := index{Metadata: map[string]any{"total_size": total}, WeightMap: map[string]string{}}
	for i, g := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(groups))
		if err := WriteFile(filepath.Join(dir, name), g, metadata); err != nil {
			return err
		}
		for _, t := range g {
			idx.WeightMap[t.Name] = name
		}
	}
	js, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: write %s: %w", dir, err)
	}
	js = append(js, '\n')
	err = atomicfile.Write(filepath.Join(dir, IndexFile), func(w io.Writer) error {
		_, err := w.Write(js)
		return err
	})
	if err != nil {
		return err
	}
	return removeIfExists(filepath.Join(dir, SingleFile))
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}
