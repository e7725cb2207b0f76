package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmcloud/llmcloud/bench"
)

func TestBenchPlot(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, rate := range []float64{1, 2, 4} {
		p := writeResult(t, dir, "r"+string(rune('0'+i)), rate, 50*rate)
		r, _ := bench.LoadResult(p)
		r.RequestRate = bench.Rate(rate)
		r.Save(dir, filepath.Base(p))
		files = append(files, p)
	}
	out := filepath.Join(dir, "plots")
	var stdout bytes.Buffer
	if err := runBenchPlot(append(files, "-o", out), &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ttft_cdf.png", "tpot_cdf.png", "itl_cdf.png", "e2el_cdf.png", "sweep_throughput.png", "sweep_ttft.png"} {
		fh, err := os.Open(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(fh)
		fh.Close()
		if err != nil || img.Bounds().Dx() < 400 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
