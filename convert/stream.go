// Package convert writes a model — a loaded bundle, or any Plan such as the random models of
// package synth — as a GGUF file, a Hugging Face directory or a llama2.c checkpoint, with a
// selectable weight type.
//
// This file implements the streaming writers: tensors are produced one at a time by a
// generator and written straight to disk, so converting or synthesizing a multi-gigabyte model
// holds one tensor in memory at a time. The file headers are produced by the format packages'
// own writers (format/gguf, format/safetensors) run over placeholder data of the right sizes,
// so the bytes are exactly what those writers would produce for the whole model.
package convert

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/format/safetensors"
	"github.com/llmcloud/llmcloud/internal/atomicfile"
	"github.com/llmcloud/llmcloud/tensor"
)

// outTensor is one tensor to write: its final name, type and shape, and a generator of its
// bytes (exactly ByteSize(Type, Shape) of them).
type outTensor struct {
	Name  string
	Type  tensor.DType
	Shape []int
	Gen   func() ([]byte, error)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// limitWriter passes the first n bytes to w and swallows the rest.
type limitWriter struct {
	w io.Writer
	n int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(int64(len(p)), l.n)
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
		l.n -= k
	}
	return len(p), nil
}

// placeholders returns tensors with the sizes of ts whose Data all alias one zero buffer
// (never written to, so its pages are not touched), and the sizes.
func placeholders(ts []outTensor) ([]tensor.Tensor, []int64, error) {
	sizes := make([]int64, len(ts))
	var biggest int
	for i, t := range ts {
		n, err := tensor.ByteSize(t.Type, t.Shape)
		if err != nil {
			return nil, nil, fmt.Errorf("tensor %s: %w", t.Name, err)
		}
		sizes[i] = int64(n)
		biggest = max(biggest, n)
	}
	zero := make([]byte, biggest)
	out := make([]tensor.Tensor, len(ts))
	for i, t := range ts {
		out[i] = tensor.Tensor{Name: t.Name, Type: t.Type, Shape: t.Shape, Data: zero[:sizes[i]]}
	}
	return out, sizes, nil
}

// emit generates each tensor in turn and writes it, padding each to align bytes (0: none).
func emit(w io.Writer, ts []outTensor, sizes []int64, align int64) error {
	var pad []byte
	if align > 0 {
		pad = make([]byte, align)
	}
	for i, t := range ts {
		data, err := t.Gen()
		if err != nil {
			return err
		}
		if int64(len(data)) != sizes[i] {
			return fmt.Errorf("tensor %s: generated %d bytes, %s %v needs %d", t.Name, len(data), t.Type, t.Shape, sizes[i])
		}
		if _, err := w.Write(data); err != nil {
			return err
		}
		if align > 0 {
			if r := sizes[i] % align; r != 0 {
				if _, err := w.Write(pad[:align-r]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// ggufAlign is the data alignment of the files written here (general.alignment is not set).
const ggufAlign = 32

// writeGGUFStream writes a GGUF v3 file at path with the metadata kvs and the tensors ts.
func writeGGUFStream(path string, kvs []gguf.KV, ts []outTensor) error {
	ph, sizes, err := placeholders(ts)
	if err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	var cw countWriter
	if err := gguf.Write(&cw, kvs, ph); err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	header := cw.n
	if len(ts) > 0 {
		for _, s := range sizes {
			header -= (s + ggufAlign - 1) / ggufAlign * ggufAlign
		}
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		if err := gguf.Write(&limitWriter{w: w, n: header}, kvs, ph); err != nil {
			return err
		}
		return emit(w, ts, sizes, ggufAlign)
	})
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// writeSafetensorsStream writes one safetensors file at path.
func writeSafetensorsStream(path string, ts []outTensor, meta map[string]string) error {
	ph, sizes, err := placeholders(ts)
	if err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	var cw countWriter
	if err := safetensors.Write(&cw, ph, meta); err != nil {
		return fmt.Errorf("convert: %s: %w", path, err)
	}
	header := cw.n
	for _, s := range sizes {
		header -= s
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		if err := safetensors.Write(&limitWriter{w: w, n: header}, ph, meta); err != nil {
			return err
		}
		return emit(w, ts, sizes, 0)
	})
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// writeSafetensorsDir writes ts into dir as model.safetensors, or as shards of at most
// shardBytes of tensor data plus model.safetensors.index.json (the layout
// safetensors.WriteSharded produces), removing the weights file of the other layout.
func writeSafetensorsDir(dir string, ts []outTensor, shardBytes int64) error {
	meta := map[string]string{"format": "pt"}
	var groups [][]outTensor
	var size, total int64
	for _, t := range ts {
		n, err := tensor.ByteSize(t.Type, t.Shape)
		if err != nil {
			return fmt.Errorf("convert: tensor %s: %w", t.Name, err)
		}
		if len(groups) == 0 || (shardBytes > 0 && size+int64(n) > shardBytes && size > 0) {
			groups = append(groups, nil)
			size = 0
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], t)
		size += int64(n)
		total += int64(n)
	}
	single := filepath.Join(dir, safetensors.SingleFile)
	index := filepath.Join(dir, safetensors.IndexFile)
	if len(groups) <= 1 {
		if err := writeSafetensorsStream(single, ts, meta); err != nil {
			return err
		}
		return removeIfExists(index)
	}
	weightMap := map[string]string{}
	for i, g := range groups {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(groups))
		if err := writeSafetensorsStream(filepath.Join(dir, name), g, meta); err != nil {
			return err
		}
		for _, t := range g {
			weightMap[t.Name] = name
		}
	}
	js, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{"total_size": total}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return fmt.Errorf("convert: %s: %w", index, err)
	}
	if err := atomicfile.Write(index, func(w io.Writer) error { _, err := w.Write(append(js, '\n')); return err }); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return removeIfExists(single)
}

func removeIfExists(path string) error {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}
