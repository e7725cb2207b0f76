// The export command: llmcloud export --onnx OUT.onnx [MODEL] writes the model's graph as a
// standard ONNX model (graph/onnxexport; docs/onnx.md). --reference-ids also writes
// llmcloud's own logits for those token ids to OUT.onnx.reference.json, so that another
// runtime's output can be compared (scripts/onnx/check.mjs does, with ONNX Runtime).
package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/llmcloud/llmcloud/format/onnx"
	"github.com/llmcloud/llmcloud/graph/onnxexport"
	"github.com/llmcloud/llmcloud/model"
)

func init() {
	register("export", "export a model as a standard ONNX file (export --onnx OUT.onnx MODEL)", runExport)
}

func runExport(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr)
	out := fs.String("onnx", "", "output ONNX file (required)")
	maxPos := fs.Int("max-positions", 0, "longest sequence the exported model accepts (the rotary tables' length; default: the model's context length)")
	kvCache := fs.Bool("kv-cache", false, "add KV-cache inputs past_key_values.L.key/value and outputs present.L.key/value (docs/onnx.md)")
	external := fs.Bool("external-data", false, "write the weights to OUT.onnx.data beside the model (automatic above 2 GiB)")
	refIDs := fs.String("reference-ids", "", "also write llmcloud's logits for these token id sequences to OUT.onnx.reference.json: ids separated by ',', sequences by ';'")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: llmcloud export --onnx OUT.onnx [MODEL] [--max-positions N] [--kv-cache] [--external-data] [--reference-ids IDS]")
		fmt.Fprintln(stderr, "MODEL: any model llmcloud opens (default: the built-in default model); weights are written as float32")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if *out == "" {
		return usagef("--onnx OUT.onnx is required")
	}
	seqs, err := parseIDSeqs(*refIDs)
	if err != nil {
		return usagef("--reference-ids: %v", err)
	}
	b, err := openModelArg(pos, stderr)
	if err != nil {
		return err
	}
	defer b.Close()
	m, err := onnxexport.ExportModel(b.Model, onnxexport.Options{MaxPositions: *maxPos,
		Producer: "llmcloud", ProducerVersion: Version, KVCache: *kvCache})
	if err != nil {
		return err
	}
	nodes, inits := len(m.Graph.Nodes), len(m.Graph.Initializers)
	var size int64
	for _, t := range m.Graph.Initializers {
		size += int64(len(t.Raw))
	}
	if size > onnx.MaxProtoBytes-(64<<20) && !*external {
		fmt.Fprintf(stderr, "%.1f GiB of float32 weights exceed protobuf's 2 GiB: writing them to %s.data\n", float64(size)/(1<<30), *out)
		*external = true
	}
	if err := m.WriteFile(*out, *external); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s: %d ONNX nodes, %d initializers, opset %d\n", *out, nodes, inits, onnxexport.Opset)
	if len(seqs) > 0 {
		ref := *out + ".reference.json"
		if err := writeReference(ref, b.Model, seqs); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s: llmcloud's logits for %d sequences\n", ref, len(seqs))
	}
	return nil
}

// parseIDSeqs reads "1,2,3;4,5" ("" is none).
func parseIDSeqs(s string) ([][]int, error) {
	var out [][]int
	for _, part := range strings.Split(s, ";") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		var seq []int
		for _, f := range strings.Split(part, ",") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || id < 0 {
				return nil, fmt.Errorf("bad token id %q", f)
			}
			seq = append(seq, id)
		}
		out = append(out, seq)
	}
	return out, nil
}

// referenceFile is what writeReference writes: per sequence its ids and llmcloud's logits
// for every position, [len(ids)][vocab] float32 little-endian, base64.
type referenceFile struct {
	Vocab     int                 `json:"vocab"`
	Sequences []referenceSequence `json:"sequences"`
}

type referenceSequence struct {
	IDs    []int  `json:"ids"`
	Logits string `json:"logits_f32_base64"`
}

func writeReference(path string, m *model.Model, seqs [][]int) error {
	ref := referenceFile{Vocab: m.Config.Vocab}
	for i, ids := range seqs {
		for _, id := range ids {
			if id >= m.Config.Vocab {
				return fmt.Errorf("reference sequence %d: token id %d outside the vocabulary of %d", i, id, m.Config.Vocab)
			}
		}
		logits, err := m.Forward(m.NewCache(len(ids)), ids, 0, true)
		if err != nil {
			return fmt.Errorf("reference sequence %d: %w", i, err)
		}
		raw := make([]byte, 4*len(logits))
		for j, v := range logits {
			binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(v))
		}
		ref.Sequences = append(ref.Sequences, referenceSequence{IDs: ids, Logits: base64.StdEncoding.EncodeToString(raw)})
	}
	data, err := json.Marshal(ref)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
