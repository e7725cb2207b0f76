// This file implements the run log: log.jsonl in the run directory, one JSON object per
// optimizer step and one per validation (format in docs/training.md). A resumed run keeps the
// records up to its checkpoint's step and drops the rest, so the log never holds a step twice.
package train

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"

	"github.com/llmcloud/llmcloud/internal/atomicfile"
)

// Record is one line of log.jsonl: a training step (Loss set) or a validation (ValLoss set).
type Record struct {
	Step       int      `json:"step"`
	Loss       *float64 `json:"loss,omitempty"`
	LR         float64  `json:"lr,omitempty"`
	GradNorm   float64  `json:"grad_norm,omitempty"`
	AuxLoss    float64  `json:"aux_loss,omitempty"` // a mixture of experts' load-balancing loss (StepStats.AuxLoss)
	Tokens     int64    `json:"tokens,omitempty"`
	StepMs     float64  `json:"step_ms,omitempty"`
	TokensPerS float64  `json:"tokens_per_s,omitempty"`
	MFU        float64  `json:"mfu,omitempty"`
	HFU        float64  `json:"hfu,omitempty"` // hardware FLOPs utilisation (= MFU without recomputation)
	ValLoss    *float64 `json:"val_loss,omitempty"`
	ValPPL     float64  `json:"val_ppl,omitempty"`
	// Skipped says why a training step's update was skipped ("loss NaN", "grad_norm +Inf").
	Skipped string `json:"skipped,omitempty"`
	// Spikes counts the steps of this run skipped as loss spikes so far (spike.go).
	Spikes int `json:"spikes,omitempty"`
	// NonFinite lists the fields whose values JSON cannot hold, as "name=NaN"; those fields
	// are written as absent (null pointers or zero).
	NonFinite []string `json:"non_finite,omitempty"`
}

// sanitize moves NaN and infinite values out of the numeric fields into NonFinite.
func (r *Record) sanitize() {
	bad := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	ptr := func(name string, p **float64) {
		if *p != nil && bad(**p) {
			r.NonFinite = append(r.NonFinite, name+"="+fmtFloat(**p))
			*p = nil
		}
	}
	val := func(name string, p *float64) {
		if bad(*p) {
			r.NonFinite = append(r.NonFinite, name+"="+fmtFloat(*p))
			*p = 0
		}
	}
	ptr("loss", &r.Loss)
	ptr("val_loss", &r.ValLoss)
	val("lr", &r.LR)
	val("grad_norm", &r.GradNorm)
	val("aux_loss", &r.AuxLoss)
	val("step_ms", &r.StepMs)
	val("tokens_per_s", &r.TokensPerS)
	val("mfu", &r.MFU)
	val("hfu", &r.HFU)
	val("val_ppl", &r.ValPPL)
}

const logFile = "log.jsonl"

// runLog appends records to log.jsonl and keeps them for the loss curve.
type runLog struct {
	f       *os.File
	records []Record
}

// openRunLog opens dir/log.jsonl, keeping the records of steps <= keepSteps (0 for a fresh
// run) and rewriting the file atomically when any are dropped.
func openRunLog(dir string, keepSteps int) (*runLog, error) {
	path := filepath.Join(dir, logFile)
	l := &runLog{}
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("train: log: %w", err)
	}
	if keepSteps > 0 {
		sc := bufio.NewScanner(bytes.NewReader(raw))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			var r Record
			if json.Unmarshal(sc.Bytes(), &r) == nil && r.Step <= keepSteps {
				l.records = append(l.records, r)
			}
		}
	}
	if err := atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, r := range l.records {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("train: log: %w", err)
	}
	if l.f, err = os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, fmt.Errorf("train: log: %w", err)
	}
	return l, nil
}

func (l *runLog) add(r Record) error {
	r.sanitize()
	l.records = append(l.records, r)
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = l.f.Write(append(b, '\n'))
	return err
}

func (l *runLog) Close() error { return l.f.Close() }
