package eval

import (
	"math"
	"os"
	"testing"

	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tokenizer"
)

func loadFixture(t *testing.T, name string) (*model.Model, *tokenizer.Tokenizer) {
	t.Helper()
	f, err := gguf.Open(fixture.Path(t, "models", "stories260K", name+".gguf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	v, err := tokenizer.VocabFromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.New(v)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.LoadGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok
}

// TestKLDivergence: a model against itself has KL 0, full top-1 agreement and the perplexity
// PerplexityChunks gives (up to its float32 max subtraction); f16 against f32 a small positive KL.
func TestKLDivergence(t *testing.T) {
	text, err := os.ReadFile(fixture.Path(t, "reference", "brown_val_100k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m32, tok := loadFixture(t, "stories260K-f32")
	m16, _ := loadFixture(t, "stories260K-f16")
	ids := tok.Encode(string(text), true, false)
	self, err := KLDivergence(m32, m32, ids, 128, 4)
	if err != nil {
		t.Fatal(err)
	}
	ppl, err := PerplexityChunks(m32, ids, 128, 4)
	if err != nil {
		t.Fatal(err)
	}
	if self.KLD > 1e-12 || self.Top1 != 1 || math.Abs(self.PPL-ppl.PPL) > 1e-7*ppl.PPL || math.Abs(self.BasePPL-ppl.PPL) > 1e-7*ppl.PPL {
		t.Errorf("self: KLD %g, top-1 %g, PPL %g / base %g; want 0, 1, %g", self.KLD, self.Top1, self.PPL, self.BasePPL, ppl.PPL)
	}
	d, err := KLDivergence(m32, m16, ids, 128, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("f16 vs f32: KLD %.3g +/- %.2g, top-1 %.4f, PPL %.4f (base %.4f)", d.KLD, d.KLDErr, d.Top1, d.PPL, d.BasePPL)
	if d.KLD <= 0 || d.KLD > 1e-3 || d.Top1 < 0.95 {
		t.Errorf("f16 vs f32: KLD %g, top-1 %g", d.KLD, d.Top1)
	}
}
