package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/lora"
	"github.com/llmcloud/llmcloud/train/nn"
)

// The trainer's network holding the base's dequantized weights gives the engine's logits.
func TestFinetuneBaseWeightsGiveEngineLogits(t *testing.T) {
	b, err := openBase("")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	base, _, _, err := baseWeights(b, false)
	if err != nil {
		t.Fatal(err)
	}
	ids := b.Tok.Encode("Once upon a time, there was a little girl named Lily. User: What is 2 + 3?\nAssistant: 5\n", false, true)
	T := len(ids)
	net, err := nn.New(b.Model.Config, 1, T, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range net.Params() {
		copy(p.W, base[p.Name])
	}
	x := make([]int32, T)
	for i, id := range ids {
		x[i] = int32(id)
	}
	net.Forward(x, nil, 1, T)
	got := net.Logits()
	cache := b.Model.NewCache(T)
	V := b.Model.Config.Vocab
	for i, id := range ids {
		want, err := b.Model.Forward(cache, []int{id}, i, false)
		if err != nil {
			t.Fatal(err)
		}
		var maxd, maxv float64
		for j := range V {
			maxd = max(maxd, math.Abs(float64(got[i*V+j]-want[j])))
			maxv = max(maxv, math.Abs(float64(want[j])))
		}
		if maxd > 2e-2*maxv { // the engine multiplies Q8_0 weights by quantized activations
			t.Fatalf("position %d: trainer logits differ from the engine's by %g (largest %g)", i, maxd, maxv)
		}
	}
}

// A LoRA run of 4 steps and one of 2 steps resumed to 4 write the same adapter (on the
// built-in Q8_0 base kept quantized, with LoRA dropout); a bad line is an error naming the
// file and line.
func TestFinetuneResumeAndBadLine(t *testing.T) {
	dir := t.TempDir()
	var so, se bytes.Buffer
	if err := runData([]string{"sft-tasks", "-o", dir, "--train", "20", "--test", "2"}, &so, &se); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "train.jsonl")
	run := func(out string, steps int, extra ...string) {
		t.Helper()
		args := append([]string{"--data", data, "--out", out, "--method", "lora", "--lora-r", "2", "--lora-target", "q_proj,down_proj",
			"--steps", fmt.Sprint(steps), "--batch", "2", "--seq", "64", "--warmup", "1", "--threads", "2", "--lora-dropout", "0.1"}, extra...)
		var o, e bytes.Buffer
		if err := runFinetune(args, &o, &e); err != nil {
			t.Fatalf("%v\n%s", err, e.String())
		}
	}
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	run(a, 4)
	run(b, 2)
	run(b, 4, "--resume", "latest")
	fa, err := os.ReadFile(filepath.Join(a, "adapter", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	fb, err := os.ReadFile(filepath.Join(b, "adapter", "adapter_model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fa, fb) {
		t.Fatal("the resumed run's adapter differs from the straight run's")
	}
	cj, err := os.ReadFile(filepath.Join(a, "adapter", "adapter_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cj), `"lora_dropout": 0.1`) {
		t.Fatalf("adapter_config.json without lora_dropout 0.1:\n%s", cj)
	}
	// The adapter is one the server loads on its base (package lora's reader and checks).
	bp, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	bb, err := loader.Open(bp, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bb.Close()
	la, err := lora.Open(filepath.Join(a, "adapter"), &bb.Model.Config, bb.Model.Weights)
	if err != nil {
		t.Fatal(err)
	}
	if la.Rank() != 2 || len(la.Pairs) != 2*bb.Model.Config.Layers {
		t.Fatalf("adapter rank %d, %d pairs", la.Rank(), len(la.Pairs))
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"instruction\":\"a\",\"output\":\"b\"}\n{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}\n"), 0o644)
	var o, e bytes.Buffer
	err = runFinetune([]string{"--data", bad, "--out", filepath.Join(dir, "c"), "--steps", "1"}, &o, &e)
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: no assistant turn") {
		t.Fatalf("error %v", err)
	}
}
