// This file is the side of every rank but 0: receive each batch, run it.
package dist

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/model"
)

// Work runs rank r.World.Rank() > 0 of a serving group with m, its shard of the model: it
// takes the setup (checking that rank 0 serves the same model shape and KV type), makes its
// paged KV cache, then runs every batch rank 0 sends until rank 0 stops (nil) or the group
// fails (the error names the rank or step).
func Work(r *Ranks, m *model.Model, log *slog.Logger) error {
	me := r.World.Rank()
	hdr := make([]byte, headerBytes)
	var body []byte
	recv := func() (kind int, step uint64, err error) {
		if err := r.ctrl.Broadcast(hdr, 0); err != nil {
			return 0, 0, err
		}
		kind, n := int(binary.LittleEndian.Uint32(hdr)), int(binary.LittleEndian.Uint32(hdr[4:]))
		step = binary.LittleEndian.Uint64(hdr[8:])
		if cap(body) < n {
			body = make([]byte, n)
		}
		body = body[:n]
		if n > 0 {
			if err := r.ctrl.Broadcast(body, 0); err != nil {
				return 0, 0, err
			}
		}
		return kind, step, nil
	}
	kind, _, err := recv()
	if err != nil {
		return fmt.Errorf("rank %d: waiting for the setup: %w", me, err)
	}
	if kind != msgHello {
		return fmt.Errorf("rank %d: first message of kind %d, want the setup", me, kind)
	}
	setup, err := decodeSetup(body)
	if err != nil {
		return err
	}
	if got := shapeOf(m); got != setup.Shape {
		return fmt.Errorf("rank %d: model shape %v (layers, dim, heads, KV heads, head dim, ffn, vocab), rank 0 serves %v", me, got, setup.Shape)
	}
	if setup.ExpertParallel != r.ExpertParallel {
		return fmt.Errorf("rank %d: expert parallelism %v, rank 0's %v (start every rank with the same --enable-expert-parallel)", me, r.ExpertParallel, setup.ExpertParallel)
	}
	if !slices.Equal(setup.Partition, r.Partition) {
		return fmt.Errorf("rank %d: pipeline layer partition %v, rank 0's %v (start every rank with the same --pipeline-layer-partition)", me, r.Partition, setup.Partition)
	}
	if got := m.KVCacheDType.String(); got != setup.KVDType {
		return fmt.Errorf("rank %d: KV cache type %s, rank 0's is %s", me, got, setup.KVDType)
	}
	kv, err := m.NewPagedKV(setup.NumBlocks, setup.BlockSize)
	if err != nil {
		return fmt.Errorf("rank %d: %w", me, err)
	}
	if _, err := gatherWeights(r.ctrl, m); err != nil {
		return fmt.Errorf("rank %d: %w", me, err)
	}
	log.Info("tensor-parallel rank ready", "rank", me, "kv_blocks", setup.NumBlocks, "block_size", setup.BlockSize,
		"kv_bytes", kv.Bytes())
	var b model.Batch
	b.Invariant = setup.Invariant
	var seqs []model.BatchSeq
	lay := r.Layout
	stage, t := lay.stage(me), lay.tpRank(me)
	var hidden []float32
	var steps int
	var busy time.Duration
	for {
		kind, step, err := recv()
		if err != nil {
			return fmt.Errorf("rank %d: after %d steps: %w", me, steps, err)
		}
		switch kind {
		case msgStop:
			w := MeasureWeights(me, m)
			log.Info("tensor-parallel rank stopping", "rank", me, "steps", steps, "forward", busy,
				"weight_resident_bytes", w.Resident(), "weight_bytes", w.Bound)
			return nil
		case msgPing:
			if err := r.ctrl.Barrier(); err != nil {
				return fmt.Errorf("rank %d: ping: %w", me, err)
			}
		case msgStep:
			if seqs, err = decodePlan(body, seqs); err != nil {
				return fmt.Errorf("rank %d: step %d: %w", me, step, err)
			}
			t0 := time.Now()
			if stage > 0 { // the residual stream from the same tensor-parallel rank of the stage before
				n := 0
				for _, s := range seqs {
					n += len(s.Tokens)
				}
				if cap(hidden) < n*m.Config.Dim {
					hidden = make([]float32, n*m.Config.Dim)
				}
				b.StageInput = hidden[:n*m.Config.Dim]
				if err := r.World.Recv(comm.AsBytes(b.StageInput), (stage-1)*lay.TP+t); err != nil {
					return fmt.Errorf("rank %d: step %d: activations from stage %d: %w", me, step, stage-1, err)
				}
			}
			out, err := m.ForwardBatch(&b, kv, seqs)
			if err != nil {
				return fmt.Errorf("rank %d: step %d: %w", me, step, err)
			}
			switch {
			case stage < lay.PP-1:
				err = r.World.Send(comm.AsBytes(out), (stage+1)*lay.TP+t)
			case lay.PP > 1 && t == 0: // the last stage: the logits to rank 0
				err = r.back.Send(comm.AsBytes(out), 0)
			}
			if err != nil {
				return fmt.Errorf("rank %d: step %d: sending stage %d's output: %w", me, step, stage, err)
			}
			busy += time.Since(t0)
			steps++
		default:
			return fmt.Errorf("rank %d: message of unknown kind %d", me, kind)
		}
	}
}
