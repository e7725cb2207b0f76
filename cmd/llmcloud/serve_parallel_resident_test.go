package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"
)

var (
	residentMetric = regexp.MustCompile(`(?m)^llmcloud:tp_rank_weight_resident_bytes\{rank="(\d+)"\} (\S+)$`)
	residentStop   = regexp.MustCompile(`tensor-parallel rank stopping" rank=(\d+) .*weight_resident_bytes=(\d+)`)
	modelBytes     = regexp.MustCompile(`model_weight_bytes=(\d+)`)
)

// Each rank's weight bytes resident in its process, as the rank measures them from
// /proc/self/smaps (the model file's mapped pages and its copies of its blocks), are its
// share of the model's: 1/T with T tensor-parallel ranks, 1/(T·P) with P equal stages, ±5%,
// in /metrics after a completion ran and in each rank's log line when it stops. The model (a
// 46 MB F16 Llama) is large enough that the pages around the blocks would show: binding row
// blocks as views of the mapping left the TP=2 ranks of a 320 MB model with 1.3x their share
// resident (docs/distributed-serving.md).
func TestServeTensorParallelResidentWeights(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	path := filepath.Join(t.TempDir(), "m.gguf")
	run(t, "synth", "-o", path, "--dim", "512", "--layers", "2", "--heads", "8", "--kv-heads", "4", "--ffn", "1536",
		"--vocab", "16384", "--type", "f16")
	for _, c := range [][2]int{{2, 1}, {4, 1}, {1, 2}} {
		T, P := c[0], c[1]
		t0 := time.Now()
		url, logs, stop := startServe(t, path, "--threads", "1", "-tp", strconv.Itoa(T), "-pp", strconv.Itoa(P),
			"--kv-cache-memory", "8MiB")
		greedy(t, url, "hello world", 8)
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := stop(); err != nil {
			t.Fatalf("TP=%d PP=%d: serve: %v", T, P, err)
		}
		m := modelBytes.FindStringSubmatch(logs.String())
		if m == nil {
			t.Fatalf("TP=%d PP=%d: no model_weight_bytes logged:\n%s", T, P, logs.String())
		}
		whole, _ := strconv.ParseFloat(m[1], 64)
		share := whole / float64(T*P)
		check := func(where, rank, v string) {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil || n < 0.95*share || n > 1.05*share {
				t.Errorf("TP=%d PP=%d rank %s (%s): %s weight bytes resident, want %.0f ±5%% (the model's %.0f / %d)", T, P, rank, where, v, share, whole, T*P)
			}
		}
		ms := residentMetric.FindAllStringSubmatch(string(body), -1)
		if len(ms) != T*P {
			t.Errorf("TP=%d PP=%d: %d ranks in /metrics, want %d:\n%s", T, P, len(ms), T*P, body)
		}
		for _, m := range ms {
			check("/metrics", m[1], m[2])
		}
		ss := residentStop.FindAllStringSubmatch(logs.String(), -1)
		if len(ss) != T*P-1 {
			t.Errorf("TP=%d PP=%d: %d ranks logged their resident weights at the end, want %d", T, P, len(ss), T*P-1)
		}
		for _, m := range ss {
			check("stopping", m[1], m[2])
		}
		t.Logf("TP=%d PP=%d: %v; /metrics %v", T, P, time.Since(t0).Round(time.Millisecond), ms)
	}
}
