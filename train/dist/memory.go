// This file implements the per-rank memory table of a data-parallel run: the bytes of
// parameters, gradients and optimizer state measured from the buffers a rank actually
// allocated, next to the ZeRO paper's formulas for fp32 AdamW (Ψ parameters, N_d
// data-parallel ranks, 4 bytes a value, two moments):
//
//	stage 0 (DDP)  4Ψ + 4Ψ + 8Ψ         = 16Ψ
//	stage 1        4Ψ + 4Ψ + 8Ψ/N_d
//	stage 2        4Ψ + (4Ψ + 8Ψ)/N_d
//	stage 3        (4Ψ + 4Ψ + 8Ψ)/N_d
//
// Ψ is the model this rank holds (its tensor-parallel shard and pipeline stage), padded so
// every unit splits evenly over the N_d ranks (at most N_d-1 values a unit; both columns use
// the padded Ψ, so they agree exactly). Transient buffers (ZeRO's gather and reduce slots) are
// listed on their own.
package dist

import (
	"fmt"
	"strings"
)

// Memory is one rank's state memory.
type Memory struct {
	Stage     int
	DP        int   // N_d
	Psi       int64 // parameters this rank's model holds, unpadded
	PsiPadded int64 // with each unit padded to a multiple of DP

	ParamsBytes, GradsBytes, OptimBytes int64 // measured: the persistent buffers
	Transient                           []Buffer
}

// Buffer is a named transient buffer.
type Buffer struct {
	Name  string
	Bytes int64
}

// Formula is the paper's bytes of parameters, gradients and optimizer state for this stage,
// with the padded Ψ.
func (m Memory) Formula() (params, grads, optim int64) {
	p, n := m.PsiPadded, int64(m.DP)
	params, grads, optim = 4*p, 4*p, 8*p
	if m.Stage >= 1 {
		optim /= n
	}
	if m.Stage >= 2 {
		grads /= n
	}
	if m.Stage >= 3 {
		params /= n
	}
	return params, grads, optim
}

// Total is the measured persistent bytes.
func (m Memory) Total() int64 { return m.ParamsBytes + m.GradsBytes + m.OptimBytes }

// String is a small table: measured next to the formula, then the transient buffers.
func (m Memory) String() string {
	fp, fg, fo := m.Formula()
	var b strings.Builder
	fmt.Fprintf(&b, "memory per rank (ZeRO stage %d, N_d = %d, Ψ = %d parameters, %d padded):\n", m.Stage, m.DP, m.Psi, m.PsiPadded)
	fmt.Fprintf(&b, "  %-10s %14s %14s\n", "", "measured", "formula")
	for _, r := range []struct {
		name   string
		got, f int64
		expr   string
	}{
		{"params", m.ParamsBytes, fp, pick(m.Stage >= 3, "4Ψ/N_d", "4Ψ")},
		{"grads", m.GradsBytes, fg, pick(m.Stage >= 2, "4Ψ/N_d", "4Ψ")},
		{"optimizer", m.OptimBytes, fo, pick(m.Stage >= 1, "8Ψ/N_d", "8Ψ")},
		{"total", m.Total(), fp + fg + fo, ""},
	} {
		line := fmt.Sprintf("  %-10s %14s %14s  %s", r.name, bytesStr(r.got), bytesStr(r.f), r.expr)
		b.WriteString(strings.TrimRight(line, " ") + "\n")
	}
	for _, t := range m.Transient {
		fmt.Fprintf(&b, "  transient  %14s  %s\n", bytesStr(t.Bytes), t.Name)
	}
	return b.String()
}

func pick(c bool, a, b string) string {
	if c {
		return a
	}
	return b
}

func bytesStr(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// Memory measures z's buffers; optimBytes is the optimizer's moments (allocated by the
// caller over ShardLen values).
func (z *ZeRO) Memory(optimBytes int64) Memory {
	m := Memory{Stage: z.Stage, DP: z.n, OptimBytes: optimBytes}
	for _, u := range z.Units {
		m.Psi += int64(u.Size)
		m.PsiPadded += int64(z.n * u.Shard)
	}
	for _, b := range z.wFull {
		m.ParamsBytes += 4 * int64(len(b))
	}
	for _, b := range z.gFull {
		m.GradsBytes += 4 * int64(len(b))
	}
	m.ParamsBytes += 4 * int64(len(z.wShard))
	m.GradsBytes += 4 * int64(len(z.gShard))
	names := []string{"embedding", "head", "even blocks", "odd blocks"}
	for s := range z.gBuf {
		m.Transient = append(m.Transient, Buffer{"gradient slot (" + names[s] + ")", 4 * int64(len(z.gBuf[s]))},
			Buffer{"reduce-scatter result (" + names[s] + ")", 4 * int64(len(z.tmp[s]))})
	}
	for s := range z.wBuf {
		m.Transient = append(m.Transient, Buffer{"weight gather slot (" + names[s] + ")", 4 * int64(len(z.wBuf[s]))})
	}
	return m
}
