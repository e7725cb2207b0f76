// This file collects W8A8 calibration statistics: the per-input-channel max |x| of every
// matmul the model runs, through the executor's observer hook (graph/exec/observe.go, attached to a Batch). It is
// the minimal observer SmoothQuant needs; `llmcloud quantize`'s calibration hooks collect
// more (and may replace it).
package model

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sync"
)

// W8A8Stats are per-weight, per-input-channel max |x| seen during calibration.
type W8A8Stats struct {
	mu     sync.Mutex
	Max    map[string][]float32 `json:"max"`
	Tokens int                  `json:"tokens"` // rows seen by the first weight's matmul
	first  string
}

// NewW8A8Stats returns empty statistics.
func NewW8A8Stats() *W8A8Stats { return &W8A8Stats{Max: map[string][]float32{}} }

// Observe folds the rows of x ([m, k]), the input of the named weights' matmul (several for a
// fused q/k/v or gate/up), into the statistics: an exec.MatMulObserver.
func (s *W8A8Stats) Observe(x []float32, m, k int, weights []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, name := range weights {
		mx := s.Max[name]
		if mx == nil {
			mx = make([]float32, k)
			s.Max[name] = mx
			if s.first == "" {
				s.first = name
			}
		}
		if len(mx) != k {
			continue
		}
		if name == s.first {
			s.Tokens += m
		}
		for i := 0; i < m; i++ {
			for j, v := range x[i*k : (i+1)*k] {
				mx[j] = max(mx[j], float32(math.Abs(float64(v))))
			}
		}
	}
}

// Run runs m over ids in chunks of ctx tokens (each chunk its own sequence; a shorter tail
// is run too) with s observing every matmul.
func (s *W8A8Stats) Run(m *Model, ids []int, ctx int) error {
	if err := m.ObserveChunks(ids, ctx, -1, false, s.Observe, nil); err != nil {
		return fmt.Errorf("w8a8 calibration: %w", err)
	}
	return nil
}

// Save writes s as JSON to path.
func (s *W8A8Stats) Save(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// LoadW8A8Stats reads statistics written by Save.
func LoadW8A8Stats(path string) (*W8A8Stats, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := NewW8A8Stats()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("w8a8 statistics %s: %w", path, err)
	}
	return s, nil
}
