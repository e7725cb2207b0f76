package perf

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/tensor"
)

// LatencyOptions configures a llama-bench-style latency run.
type LatencyOptions struct {
	Prompt      int // pp test: one batched forward of Prompt tokens from an empty cache (0 = skip)
	Gen         int // tg test: Gen single-token decodes from an empty cache (0 = skip)
	Repetitions int // timed runs of each test, after one warm-up run
	// Depth (llama-bench's -d) runs both tests after a context of Depth tokens, prefilled
	// once untimed: pp then processes positions Depth.., tg decodes from position Depth.
	Depth int
	// Probe, when set, is called during the timed tg runs: before each run's first step,
	// after every ProbeEvery steps and after its last, with its time left out of the steps'
	// and the run's; it returns the memory read bandwidth at that moment (bytes/s: a Prober
	// pass). TGWindows pairs each window of steps with the probes around it, so a decode's
	// share of the bandwidth is taken against what the host gave at the same time.
	Probe      func() float64
	ProbeEvery int
}

// ProbeWindow is a run of consecutive decode steps and the read bandwidth probed just before
// and just after it.
type ProbeWindow struct {
	Steps         int
	Time          time.Duration // the steps' time (the probes excluded)
	Before, After float64       // bytes/s
}

// LatencyResult holds tokens/s of every timed repetition.
type LatencyResult struct {
	PP, TG []float64
	// TGSteps holds the time of every decode step of the timed tg runs, in order: their
	// spread tells a slow step now and then (a descheduled thread, a late wake-up) from a
	// uniformly slower run.
	TGSteps []time.Duration
	// TGCPU holds the process's CPU time during each of those steps (zeros where unknown):
	// with T threads a step whose CPU time is well under T times its length had a thread off
	// the CPU (descheduled by a busy host, or parked), which no kernel can be blamed for.
	// Linux brings the CPU time of a thread running on another CPU up to date at scheduler
	// ticks, so a step's value is good to about a tick (4 ms at HZ=250): a step ending just
	// before a tick shows too little and the next too much.
	TGCPU []time.Duration
	// TGWindows holds the tg runs' windows between probes (LatencyOptions.Probe), in order;
	// TGProbes every probe's result, in order.
	TGWindows []ProbeWindow
	TGProbes  []float64
}

// Latency runs the pp and tg tests on m (with m.Pool) as llama-bench does: token ids are
// pseudo-random, the cache starts empty for every run, pp asks for the last row's logits only,
// tg decodes one token per step starting from BOS-like id 1, and one untimed warm-up run of
// each test precedes the timed ones.
func Latency(m *model.Model, o LatencyOptions) (LatencyResult, error) {
	var res LatencyResult
	reps := max(o.Repetitions, 1)
	d := max(o.Depth, 0)
	c := m.NewCache(d + max(o.Prompt, o.Gen, 1))
	var logits []float32
	x := uint64(0x9E3779B97F4A7C15)
	rnd := func(n int) []int {
		ids := make([]int, n)
		for i := range ids {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			ids[i] = int(x % uint64(m.Config.Vocab))
		}
		return ids
	}
	if d > 0 {
		var err error
		if logits, err = m.ForwardTo(logits, c, rnd(d), 0, false); err != nil {
			return res, fmt.Errorf("depth %d: %w", d, err)
		}
	}
	if o.Prompt > 0 {
		ids := rnd(o.Prompt)
		for r := 0; r <= reps; r++ {
			t0 := time.Now()
			var err error
			if logits, err = m.ForwardTo(logits, c, ids, d, false); err != nil {
				return res, fmt.Errorf("pp%d: %w", o.Prompt, err)
			}
			if r > 0 {
				res.PP = append(res.PP, float64(o.Prompt)/time.Since(t0).Seconds())
			}
		}
	}
	if o.Gen > 0 {
		tok := []int{1 % m.Config.Vocab}
		every := o.ProbeEvery
		if every < 1 {
			every = o.Gen
		}
		for r := 0; r <= reps; r++ {
			probing := r > 0 && o.Probe != nil
			var bw float64
			if probing {
				bw = o.Probe()
				res.TGProbes = append(res.TGProbes, bw)
			}
			t0 := time.Now()
			prev, prevCPU := t0, processCPU()
			win, winSteps := t0, 0
			var paused time.Duration
			for i := 0; i < o.Gen; i++ {
				var err error
				if logits, err = m.ForwardTo(logits, c, tok, d+i, false); err != nil {
					return res, fmt.Errorf("tg%d: %w", o.Gen, err)
				}
				tok[0] = argmax(logits)
				if r == 0 {
					continue
				}
				now, cpu := time.Now(), processCPU()
				res.TGSteps = append(res.TGSteps, now.Sub(prev))
				res.TGCPU = append(res.TGCPU, cpu-prevCPU)
				prev, prevCPU = now, cpu
				if winSteps++; probing && (winSteps == every || i == o.Gen-1) {
					after := o.Probe()
					res.TGProbes = append(res.TGProbes, after)
					res.TGWindows = append(res.TGWindows, ProbeWindow{Steps: winSteps, Time: now.Sub(win), Before: bw, After: after})
					bw, winSteps = after, 0
					prev, prevCPU = time.Now(), processCPU()
					paused += prev.Sub(now)
					win = prev
				}
			}
			if r > 0 {
				res.TG = append(res.TG, float64(o.Gen)/(time.Since(t0)-paused).Seconds())
			}
		}
	}
	return res, nil
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// PairedShare is the share of the read bandwidth a decode reading bytesPerStep a step used,
// window by window (ws: LatencyResult.TGWindows): each window's read rate over the mean of
// the probes before and after it. It returns the median window's share and the whole run's
// (all windows' bytes over their time, over the windows' probe means weighted by their time);
// zeros without windows.
func PairedShare(ws []ProbeWindow, bytesPerStep float64) (median, overall float64) {
	if len(ws) == 0 {
		return 0, 0
	}
	shares := make([]float64, 0, len(ws))
	var bytes, probeSecs float64
	for _, w := range ws {
		t := w.Time.Seconds()
		if t <= 0 || w.Before+w.After <= 0 {
			continue
		}
		ref := (w.Before + w.After) / 2
		shares = append(shares, bytesPerStep*float64(w.Steps)/t/ref)
		bytes += bytesPerStep * float64(w.Steps)
		probeSecs += ref * t
	}
	if len(shares) == 0 {
		return 0, 0
	}
	slices.Sort(shares)
	return shares[len(shares)/2], bytes / probeSecs
}

// StepPercentiles returns the given percentiles (0 to 100) of steps, nearest rank; zeros for
// no steps.
func StepPercentiles(steps []time.Duration, ps ...float64) []time.Duration {
	out := make([]time.Duration, len(ps))
	if len(steps) == 0 {
		return out
	}
	s := slices.Clone(steps)
	slices.Sort(s)
	for i, p := range ps {
		k := int(math.Ceil(p/100*float64(len(s)))) - 1
		out[i] = s[min(max(k, 0), len(s)-1)]
	}
	return out
}

// OnCPUSteps returns the steps during which the process used at least frac·threads of the
// step's length in CPU time (all its threads on a CPU nearly all the time), in order: on a
// shared host their times measure the code, the others also the host's other load.
func OnCPUSteps(steps, cpu []time.Duration, threads int, frac float64) []time.Duration {
	var out []time.Duration
	for i, d := range steps {
		if i < len(cpu) && float64(cpu[i]) >= frac*float64(threads)*float64(d) {
			out = append(out, d)
		}
	}
	return out
}

// MeanSD returns the mean and sample standard deviation of xs (sd 0 for one value).
func MeanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1))
}

// ModelStats are the figures llama-bench's table shows for a model, plus the weight bytes a
// decode step streams.
type ModelStats struct {
	Bytes       int64  // all tensor data
	Params      int64  // all tensor elements
	DecodeBytes int64  // matrices read per generated token: every block's linear weights (of a mixture of experts, experts_used of the experts) and the output matrix
	Type        string // dominant weight type by bytes among the linear weights, e.g. Q8_0 (Q4_K_M when Q4_K with Q6_K)
}

// Stats computes m's ModelStats.
func Stats(m *model.Model) ModelStats {
	var s ModelStats
	byType := map[tensor.DType]int64{}
	for name, t := range m.Weights {
		s.Bytes += int64(len(t.Data))
		el := int64(1)
		for _, d := range t.Shape {
			el *= int64(d)
		}
		s.Params += el
		switch {
		case len(t.Shape) == 3 && m.Config.Experts > 0 && t.Shape[0] == m.Config.Experts:
			// Stacked experts: a token reads experts_used of them.
			s.DecodeBytes += int64(len(t.Data)) / int64(t.Shape[0]) * int64(m.Config.ExpertsUsed)
			byType[t.Type] += int64(len(t.Data))
			continue
		case len(t.Shape) != 2:
			continue
		}
		if name == "token_embd.weight" && !m.Config.Tied {
			continue // a decode step reads one embedding row
		}
		s.DecodeBytes += int64(len(t.Data))
		byType[t.Type] += int64(len(t.Data))
	}
	var best tensor.DType
	var bestBytes int64 = -1
	for ty, b := range byType {
		if b > bestBytes || (b == bestBytes && ty.String() < best.String()) {
			best, bestBytes = ty, b
		}
	}
	s.Type = best.String()
	if best == tensor.Q4_K && byType[tensor.Q6_K] > 0 {
		s.Type = "Q4_K_M"
	}
	return s
}

// SizeString formats bytes as llama-bench does (MiB below 1 GiB, else GiB).
func SizeString(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
}

// ParamsString formats a parameter count as llama-bench does (M below 1e9, else B).
func ParamsString(n int64) string {
	if n < 1e9 {
		return fmt.Sprintf("%.2f M", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f B", float64(n)/1e9)
}
