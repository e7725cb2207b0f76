package train

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/loader"
)

// readLog returns log.jsonl's training losses by step and its validation records.
func readLog(t *testing.T, dir string) (map[int]float64, []Record) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, logFile))
	if err != nil {
		t.Fatal(err)
	}
	losses := map[int]float64{}
	var vals []Record
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if r.Loss != nil {
			if _, dup := losses[r.Step]; dup {
				t.Fatalf("step %d logged twice", r.Step)
			}
			losses[r.Step] = *r.Loss
		}
		if r.ValLoss != nil {
			vals = append(vals, r)
		}
	}
	return losses, vals
}

// TestRunInterruptResumeExport drives Run as `llmcloud train` does: a straight run with
// exports, and a run interrupted at step 30 (context cancelled: it saves a checkpoint) and
// resumed from "latest". The logs agree bit for bit; the validation, the loss curve and the
// exports are checked; the exported GGUF and HF models give the trainer's logits.
func TestRunInterruptResumeExport(t *testing.T) {
	dataDir := prepare(t, kibText+"\n\n"+kibText[:500], kibText[100:800])
	exp := t.TempDir()
	c := tinyConfig(dataDir, t.TempDir())
	c.Steps, c.EvalEvery, c.CkptEvery, c.LogEvery = 60, 20, 25, 10
	c.ExportGGUF, c.ExportHF = filepath.Join(exp, "m.gguf"), filepath.Join(exp, "hf")
	straight := newTrainer(t, c)
	var lines bytes.Buffer
	sum, err := straight.Run(context.Background(), RunOptions{Progress: &lines, PeakFLOPS: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 60 || sum.ValPPL <= 1 || sum.MFU <= 0 || sum.Tokens != 60*c.TokensPerStep() {
		t.Errorf("summary %+v", sum)
	}
	for _, want := range []string{"step 10/60 | loss ", "tok/s | MFU ", "step 20 | val loss ", "step 60/60"} {
		if !strings.Contains(lines.String(), want) {
			t.Errorf("progress output lacks %q:\n%s", want, lines.String())
		}
	}
	want, vals := readLog(t, c.Out)
	if len(want) != 60 || len(vals) != 3 || vals[0].Step != 20 || vals[2].Step != 60 {
		t.Fatalf("log: %d losses, validations %+v", len(want), vals)
	}
	if math.Abs(vals[2].ValPPL-math.Exp(*vals[2].ValLoss)) > 1e-9*vals[2].ValPPL {
		t.Errorf("val ppl %v is not exp(val loss %v)", vals[2].ValPPL, *vals[2].ValLoss)
	}
	f, err := os.Open(filepath.Join(c.Out, "loss.png"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil || img.Bounds().Dx() < 100 {
		t.Fatalf("loss.png: %v", err)
	}

	// Interrupted at 30, resumed from latest.
	c2 := c
	c2.Out, c2.ExportGGUF, c2.ExportHF = t.TempDir(), "", ""
	first := newTrainer(t, c2)
	ctx, cancel := context.WithCancel(context.Background())
	_, err = first.Run(ctx, RunOptions{PeakFLOPS: 1e9, OnStep: func(s StepStats) {
		if s.Step == 30 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v", err)
	}
	dir, err := ResolveCheckpoint("latest", c2.Out)
	if err != nil || filepath.Base(dir) != "step-00000030" {
		t.Fatalf("latest checkpoint %q (%v), want step-00000030", dir, err)
	}
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	second := newTrainer(t, ck.State.Config)
	if err := second.Restore(ck); err != nil {
		t.Fatal(err)
	}
	if _, err := second.Run(context.Background(), RunOptions{PeakFLOPS: 1e9}); err != nil {
		t.Fatal(err)
	}
	got, _ := readLog(t, c2.Out)
	for s := 1; s <= 60; s++ {
		if got[s] != want[s] {
			t.Fatalf("step %d: loss %v interrupted+resumed, %v straight", s, got[s], want[s])
		}
	}

	// The exports give the trainer's logits (f32: to 1e-4).
	B, T := c.Batch, c.Seq
	tokens := make([]int32, B*T)
	for i := range tokens {
		tokens[i] = int32(kibText[i%len(kibText)])
	}
	straight.Net.Forward(tokens, nil, B, T)
	ref := straight.Net.Logits()
	for _, path := range []string{c.ExportGGUF, c.ExportHF} {
		b, err := loader.Open(path, loader.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if b.Tok == nil || b.Tok.VocabSize() != 257 || b.Model.Config != straight.Model {
			t.Errorf("%s: tokenizer %v, config %+v", path, b.Tok != nil, b.Model.Config)
		}
		if ids := b.Tok.Encode("the ferry", false, false); len(ids) != 9 || ids[0] != 't' {
			t.Errorf("%s: tokenizer encodes %q as %v", path, "the ferry", ids)
		}
		V, worst := straight.Model.Vocab, 0.0
		for s := 0; s < B; s++ {
			ids := make([]int, T)
			for i := range ids {
				ids[i] = int(tokens[s*T+i])
			}
			lg, err := b.Model.Forward(b.Model.NewCache(T), ids, 0, true)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range lg {
				worst = max(worst, math.Abs(float64(v-ref[s*T*V+i])))
			}
		}
		t.Logf("%s: max |logit diff| %.3g", filepath.Base(path), worst)
		if worst > 1e-4 {
			t.Errorf("%s: logits differ from the trainer's by %.3g > 1e-4", path, worst)
		}
		b.Close()
	}
}
