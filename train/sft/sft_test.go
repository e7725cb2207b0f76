// Tests of the examples' parsing (errors name the file and line), the loss mask (exactly the
// assistant's turns and the end of sequence), and packing: a packed row gives the loss and
// gradients of its examples run one by one.
package sft_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/defaultmodel"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
	"github.com/llmcloud/llmcloud/train/nn"
	"github.com/llmcloud/llmcloud/train/sft"
)

func defaultTok(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	p, err := defaultmodel.Path()
	if err != nil {
		t.Fatal(err)
	}
	b, err := loader.Open(p, loader.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b.Tok
}

func TestReadFileFormatsAndErrors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	os.WriteFile(good, []byte(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}

{"instruction":"Add.","input":"2 3","output":"5"}
{"instruction":"Say yes.","output":"yes"}
`), 0o644)
	ex, err := sft.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 3 || ex[1].Line != 3 || ex[1].Messages[0].Content != "Add.\n\n2 3" || ex[2].Messages[0].Content != "Say yes." || ex[0].Messages[2].Content != "hello" {
		t.Fatalf("examples %+v", ex)
	}
	for _, c := range []struct{ text, want string }{
		{"{\"instruction\":\"a\",\"output\":\"b\"}\n{not json\n", "bad.jsonl:2: not valid JSON"},
		{`{"messages":[{"role":"user","content":"hi"}]}`, "bad.jsonl:1: no assistant turn"},
		{`{"messages":[{"role":"robot","content":"hi"}]}`, `bad.jsonl:1: messages[0]: role "robot"`},
		{`{"prompt":"x"}`, "bad.jsonl:1: neither"},
	} {
		bad := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(bad, []byte(c.text), 0o644)
		_, err := sft.ReadFile(bad)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}

// maskedRuns decodes the runs of masked tokens.
func maskedRuns(tok *tokenizer.Tokenizer, ids []int32, mask []bool) (runs []string, endsEOS bool) {
	var cur []int
	for i, id := range ids {
		if mask[i] {
			if int(id) == tok.EOS() && i == len(ids)-1 {
				endsEOS = true
				continue
			}
			cur = append(cur, int(id))
			continue
		}
		if cur != nil {
			runs = append(runs, tok.Decode(cur))
			cur = nil
		}
	}
	if cur != nil {
		runs = append(runs, tok.Decode(cur))
	}
	return runs, endsEOS
}

func TestEncodeMaskIsAssistantTurns(t *testing.T) {
	tok := defaultTok(t)
	msgs := []sft.Message{{Role: "system", Content: "You add numbers."}, {Role: "user", Content: "What is 2+3?"},
		{Role: "assistant", Content: "5"}, {Role: "user", Content: "And 4+4?"}, {Role: "assistant", Content: "It is 8."},
		{Role: "user", Content: "dropped"}}
	chatml := `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`
	for _, c := range []struct {
		name, tmpl string
		want       []string
	}{
		{"plain transcript", "", []string{" 5\n", " It is 8.\n"}},
		{"chatml", chatml, []string{"5<|im_end|>\n", "It is 8.<|im_end|>\n"}},
	} {
		r := &sft.Renderer{Template: c.tmpl, Tok: tok}
		ids, mask, err := r.Encode(msgs)
		if err != nil {
			t.Fatal(err)
		}
		runs, eos := maskedRuns(tok, ids, mask)
		if strings.Join(runs, "|") != strings.Join(c.want, "|") || !eos {
			t.Errorf("%s: masked runs %q (ends in EOS %v), want %q then EOS", c.name, runs, eos, c.want)
		}
		// The prompt of the first turn is the server's prompt, token for token.
		_, pids, err := r.Prompt(msgs[:2])
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range pids {
			if ids[i] != int32(id) || mask[i] {
				t.Fatalf("%s: prompt token %d: %d (masked %v), server prompt %d", c.name, i, ids[i], mask[i], id)
			}
		}
		if !mask[len(pids)] {
			t.Fatalf("%s: the first token after the prompt is not trained", c.name)
		}
	}
	if _, _, err := (&sft.Renderer{Tok: tok}).Encode(msgs[:2]); err == nil {
		t.Fatal("no error without an assistant turn")
	}
}

func TestPackLayout(t *testing.T) {
	s := func(n int) sft.Seq {
		q := sft.Seq{IDs: make([]int32, n), Mask: make([]bool, n)}
		for i := range q.IDs {
			q.IDs[i] = int32(10*n + i)
			q.Mask[i] = i >= n/2
		}
		return q
	}
	p, err := sft.Pack([]sft.Seq{s(4), s(5), s(9), s(1), s(12)}, 8, true, 0)
	if err != nil {
		t.Fatal(err)
	}
	// rows: [4-1=3 + 5-1=4 = 7, pad 1], [9-1=8], [12 cut to 9: 8]
	if p.Rows != 3 || p.Truncated != 1 || p.Examples != 4 {
		t.Fatalf("rows %d truncated %d examples %d", p.Rows, p.Truncated, p.Examples)
	}
	wantStarts := []int32{0, 0, 0, 3, 3, 3, 3, 7}
	for i, w := range wantStarts {
		if p.Starts[i] != w {
			t.Fatalf("starts %v, want %v", p.Starts[:8], wantStarts)
		}
	}
	// example of 4: ids 40..43, mask from 2: targets at positions whose next token is masked.
	wantY := []int32{-1, 42, 43, -1, 52, 53, 54, -1}
	for i, w := range wantY {
		if p.Y[i] != w {
			t.Fatalf("targets %v, want %v", p.Y[:8], wantY)
		}
	}
}

// A packed row's loss and gradients are those of its examples run alone (weighted by their
// trained positions, the mean being over the row's), and the padding changes nothing.
func TestPackedEqualsSeparate(t *testing.T) {
	cfg := model.Config{Arch: "llama", Dim: 32, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8,
		FFN: 64, Vocab: 40, CtxLen: 64, RopeTheta: 10000, NormEps: 1e-5, Tied: true}
	var seqs []sft.Seq
	for k, n := range []int{7, 19, 2, 11} {
		q := sft.Seq{}
		for i := range n {
			q.IDs = append(q.IDs, int32((7*i+3*k+1)%cfg.Vocab))
			q.Mask = append(q.Mask, i >= n/3)
		}
		seqs = append(seqs, q)
	}
	const T = 48 // 6+18+1+10 = 35 positions, 13 of padding
	p, err := sft.Pack(seqs, T, true, 0)
	if err != nil || p.Rows != 1 {
		t.Fatalf("pack: %v, %d rows", err, p.Rows)
	}
	m, err := nn.New(cfg, 1, T, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(7)
	_, g := m.Flat()
	if err := m.SetDocStarts(p.Starts, 1, T); err != nil {
		t.Fatal(err)
	}
	loss := m.Forward(p.X, p.Y, 1, T)
	m.Backward()
	packed := append([]float32(nil), g...)

	if err := m.SetDocStarts(nil, 0, 0); err != nil {
		t.Fatal(err)
	}
	total := float64(p.Trained)
	want := make([]float64, len(g))
	var wantLoss float64
	for _, q := range seqs {
		n := len(q.IDs) - 1
		x, y := q.IDs[:n], make([]int32, n)
		cnt := 0
		for j := range n {
			y[j] = -1
			if q.Mask[j+1] {
				y[j] = q.IDs[j+1]
				cnt++
			}
		}
		m.ZeroGrad()
		l := m.Forward(x, y, 1, n)
		m.Backward()
		w := float64(cnt) / total
		wantLoss += w * float64(l)
		for i, v := range g {
			want[i] += w * float64(v)
		}
	}
	if math.Abs(float64(loss)-wantLoss) > 1e-5*wantLoss {
		t.Fatalf("packed loss %g, separate %g", loss, wantLoss)
	}
	var maxd, maxg float64
	for i := range want {
		maxd = max(maxd, math.Abs(float64(packed[i])-want[i]))
		maxg = max(maxg, math.Abs(want[i]))
	}
	if maxd > 1e-4*maxg {
		t.Fatalf("packed gradients differ from the separate runs' by %g (largest %g)", maxd, maxg)
	}
	t.Logf("loss %g; gradients max |diff| %.3g of max %.3g", loss, maxd, maxg)
}
