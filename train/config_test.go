package train

import (
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLRSchedule(t *testing.T) {
	c := DefaultConfig()
	c.LR, c.MinLR, c.Warmup, c.Steps = 1e-3, 1e-4, 10, 110
	if got := c.LRAt(0); math.Abs(got-1e-4) > 1e-12 {
		t.Errorf("step 0: lr %g, want lr/warmup = 1e-4", got)
	}
	if got := c.LRAt(9); got != 1e-3 {
		t.Errorf("last warmup step: lr %g, want 1e-3", got)
	}
	if got := c.LRAt(10); got != 1e-3 {
		t.Errorf("first decay step: lr %g, want the peak", got)
	}
	if got := c.LRAt(109); math.Abs(got-1e-4) > 1e-15 {
		t.Errorf("last step: lr %g, want min-lr", got)
	}
	if got, want := c.LRAt(10+99/2), 1e-4+0.5*(1e-3-1e-4)*(1+math.Cos(math.Pi*float64(49)/99)); math.Abs(got-want) > 1e-15 {
		t.Errorf("mid decay: lr %g, want %g", got, want)
	}
	for s := 11; s < 110; s++ {
		if c.LRAt(s) > c.LRAt(s-1) {
			t.Fatalf("lr rises at step %d", s)
		}
	}
}

func TestConfigFileAndFlags(t *testing.T) {
	dir := t.TempDir()
	yml := filepath.Join(dir, "c.yaml")
	os.WriteFile(yml, []byte("# a run\ndim: 64\nlayers: 2\nheads: 4\nlr: 0.002\nseq: 32\n"), 0o644)
	js := filepath.Join(dir, "c.json")
	os.WriteFile(js, []byte(`{"dim": 64, "layers": 2, "heads": 4, "lr": 0.002, "seq": 32}`), 0o644)
	for _, path := range []string{yml, js} {
		flags := DefaultConfig()
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		BindFlags(fs, &flags)
		if err := fs.Parse([]string{"--layers", "3", "--steps", "7"}); err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		if err := LoadFile(path, &c); err != nil {
			t.Fatal(err)
		}
		if err := OverlayFlags(fs, &c); err != nil {
			t.Fatal(err)
		}
		if c.Dim != 64 || c.Layers != 3 || c.Steps != 7 || c.LR != 0.002 || c.Seq != 32 || c.Batch != DefaultConfig().Batch {
			t.Errorf("%s: got dim %d layers %d steps %d lr %g seq %d batch %d", path, c.Dim, c.Layers, c.Steps, c.LR, c.Seq, c.Batch)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("dimm: 64\n"), 0o644)
	c := DefaultConfig()
	if err := LoadFile(bad, &c); err == nil || !strings.Contains(err.Error(), "dimm") {
		t.Errorf("unknown key: error %v, want one naming dimm", err)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Dim = 100; c.Heads = 3 }, "multiple of --heads"},
		{func(c *Config) { c.Heads = 4; c.KVHeads = 3 }, "--kv-heads"},
		{func(c *Config) { c.Batch = 0 }, "--batch"},
		{func(c *Config) { c.MinLR = 1 }, "--min-lr"},
		{func(c *Config) { c.Beta2 = 1 }, "--beta2"},
		{func(c *Config) { c.Ctx = 8 }, "--ctx"},
		{func(c *Config) { c.Dim = 12; c.Heads = 4 }, "odd"},
		{func(c *Config) { c.DP = -1 }, "--dp"},
		{func(c *Config) { c.ZeroStage = 4 }, "--zero-stage"},
		{func(c *Config) { c.PPSchedule = "gpipe" }, "--pp-schedule"},
		{func(c *Config) { c.BucketMB = -1 }, "--bucket-mb"},
		{func(c *Config) { c.Batch = 6; c.DP = 4 }, "multiple of --dp"},
		{func(c *Config) { c.TP = 3 }, "--tp 3 must divide"},
		{func(c *Config) { c.PP = 8 }, "every stage needs a layer"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
	c := DefaultConfig()
	mc := c.ModelConfig(4096)
	if err := mc.Validate(); err != nil || mc.FFN != 704 || mc.HeadDim != 64 || mc.CtxLen != c.Seq {
		t.Errorf("model config %+v (%v)", mc, err)
	}
}
