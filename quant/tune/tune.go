// This file is the tuning loop. The float model (the teacher) and the quantized model (the
// student) run side by side over the calibration rows: each step the teacher's next-token
// probabilities become the student's soft targets (nn.SetSoftTargets), so the student's
// gradient is exactly that of KL(teacher || student) summed over the batch's positions. Only
// the blocks' scale factors move (Adam, the learning rate decaying linearly to zero). The held-out rows' exact KL picks the best factors seen,
// the stored scales (step 0) included, so the result is never worse than the input there.
package tune

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llmcloud/llmcloud/kernels"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/train/nn"
)

// Options of Scales.
type Options struct {
	Batch, Seq int     // rows per step and tokens per row (0: 4 and 256)
	Steps      int     // optimizer steps
	LR         float64 // Adam's learning rate on the relative scale factors (0: 1e-3)
	HoldOut    int     // rows kept out of training to pick the best step (0: a sixteenth of the rows, 4 to 16)
	EvalEvery  int     // steps between held-out evaluations (0: 10)
	Seed       uint64
	Pool       *kernels.Pool
	Log        func(msg string) // one line per evaluation (nil: none)
}

// Result reports a tuning run.
type Result struct {
	Tensors, Blocks  int
	TrainRows, Rows  int     // training rows and held-out rows of Seq tokens
	KLBefore, KLBest float64 // mean KL(teacher || student) per held-out position, nats
	BestStep         int     // 0: the stored scales were best
}

// Scales tunes the scales of quant (GGUF names; the blocks are rewritten in place) against
// the float model teacher (every trained tensor of cfg, as float32). student holds the
// student's other tensors (norms, tensors of untunable types), dequantized. ids are the
// calibration tokens; every row starts with bos.
func Scales(cfg model.Config, teacher, student map[string][]float32, quant map[string]*Quantized, ids []int32, bos int32, o Options) (Result, error) {
	var res Result
	if o.Batch <= 0 {
		o.Batch = 4
	}
	if o.Seq <= 0 {
		o.Seq = 256
	}
	if cfg.CtxLen > 0 && o.Seq > cfg.CtxLen {
		o.Seq = cfg.CtxLen
	}
	if o.LR <= 0 {
		o.LR = 1e-3
	}
	if o.EvalEvery <= 0 {
		o.EvalEvery = 10
	}
	if o.Steps <= 0 {
		return res, errors.New("tune: steps must be positive")
	}
	rows := chunk(ids, bos, o.Seq)
	if o.HoldOut <= 0 {
		o.HoldOut = min(max(len(rows)/16, 4), 16)
	}
	if len(rows) < o.HoldOut+o.Batch {
		return res, fmt.Errorf("tune: %d calibration tokens make %d rows of %d; tuning needs at least %d (%d held out, a batch of %d to train)",
			len(ids), len(rows), o.Seq, o.HoldOut+o.Batch, o.HoldOut, o.Batch)
	}
	hold, trainRows := rows[len(rows)-o.HoldOut:], rows[:len(rows)-o.HoldOut] // the text's end
	res.TrainRows, res.Rows = len(trainRows), len(hold)
	net, err := nn.New(cfg, o.Batch, o.Seq, o.Pool)
	if err != nil {
		return res, fmt.Errorf("tune: %w", err)
	}
	params := net.Params()
	for _, p := range params {
		if teacher[p.Name] == nil || len(teacher[p.Name]) != len(p.W) {
			return res, fmt.Errorf("tune: the float model has no %s of %d values", p.Name, len(p.W))
		}
		if quant[p.Name] == nil && len(student[p.Name]) != len(p.W) {
			return res, fmt.Errorf("tune: the quantized model has no %s of %d values", p.Name, len(p.W))
		}
	}
	for name := range quant {
		if !hasParam(params, name) {
			return res, fmt.Errorf("tune: %s is not a trained tensor of this model", name)
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x74756e65)) // stream: "tune"
	tnet, err := nn.New(cfg, o.Batch, o.Seq, o.Pool)
	if err != nil {
		return res, fmt.Errorf("tune: %w", err)
	}
	for _, p := range tnet.Params() {
		copy(p.W, teacher[p.Name])
	}
	V := cfg.Vocab
	holdLP := make([]float32, len(hold)*o.Seq*V)
	for i := 0; i < len(hold); i += o.Batch {
		n := min(o.Batch, len(hold)-i)
		logits := forward(tnet, hold[i:i+n], o.Seq)
		for r := 0; r < n*o.Seq; r++ {
			logSoftmax(logits[r*V:(r+1)*V], holdLP[(i*o.Seq+r)*V:][:V])
		}
	}
	soft := make([]float32, o.Batch*o.Seq*V)
	if err := net.SetSoftTargets(soft); err != nil {
		return res, fmt.Errorf("tune: %w", err)
	}
	// The student.
	type qp struct {
		p      nn.Param
		bl     *blocks
		td, tm []float32
	}
	var qs []*qp
	for _, p := range params {
		q := quant[p.Name]
		if q == nil {
			copy(p.W, student[p.Name])
			continue
		}
		bl, err := newBlocks(q, len(p.W))
		if err != nil {
			return res, fmt.Errorf("tune: %s: %w", p.Name, err)
		}
		x := &qp{p: p, bl: bl, td: ones(len(bl.d0))}
		if bl.m0 != nil {
			x.tm = ones(len(bl.m0))
		}
		bl.weights(p.W, x.td, x.tm)
		qs = append(qs, x)
		res.Tensors++
		res.Blocks += len(bl.d0)
	}
	// The factors as one vector for Adam: each tensor's td then tm.
	var theta []*float32
	for _, x := range qs {
		for i := range x.td {
			theta = append(theta, &x.td[i])
		}
		for i := range x.tm {
			theta = append(theta, &x.tm[i])
		}
	}
	grad := make([]float32, len(theta))
	opt := newAdam(len(theta), o.LR)
	best := snapshot(theta)
	res.KLBefore = holdKL(net, hold, holdLP, o)
	res.KLBest = res.KLBefore
	o.logf("tune: %d tensors, %d blocks, %d training rows and %d held out of %d tokens; held-out KL %.6f at step 0",
		res.Tensors, res.Blocks, len(trainRows), len(hold), o.Seq, res.KLBefore)
	x, y := make([]int32, o.Batch*o.Seq), make([]int32, o.Batch*o.Seq)
	order := rng.Perm(len(trainRows))
	next := 0
	for step := 1; step <= o.Steps; step++ {
		for b := range o.Batch {
			if next == len(order) {
				order, next = rng.Perm(len(trainRows)), 0
			}
			r := order[next]
			next++
			copy(x[b*o.Seq:(b+1)*o.Seq], trainRows[r])
		}
		tnet.Forward(x, nil, o.Batch, o.Seq)
		tl := tnet.Logits()
		copy(soft, tl[:len(soft)])
		for r := range o.Batch * o.Seq {
			y[r] = argmax(soft[r*V : (r+1)*V]) // the teacher's top token: Forward's reported loss
			kernels.Softmax(soft[r*V : (r+1)*V])
		}
		net.ZeroGrad()
		loss := net.Forward(x, y, o.Batch, o.Seq)
		if math.IsNaN(float64(loss)) || math.IsInf(float64(loss), 0) {
			return res, fmt.Errorf("tune: the loss is %v at step %d (lower --tune-lr)", loss, step)
		}
		net.Backward()
		clear(grad)
		k := 0
		for _, q := range qs {
			gd := grad[k : k+len(q.td)]
			gm := grad[k+len(q.td) : k+len(q.td)+len(q.tm)]
			q.bl.grads(q.p.G, gd, gm)
			k += len(q.td) + len(q.tm)
		}
		opt.lr = o.LR * (1 - float64(step-1)/float64(o.Steps)) // linear decay to zero
		opt.step(theta, grad)
		for _, q := range qs {
			q.bl.weights(q.p.W, q.td, q.tm)
		}
		if step%o.EvalEvery == 0 || step == o.Steps {
			kl := holdKL(net, hold, holdLP, o)
			mark := ""
			if kl < res.KLBest {
				res.KLBest, res.BestStep, best = kl, step, snapshot(theta)
				mark = " (best)"
			}
			o.logf("tune: step %d: loss %.4f, held-out KL %.6f%s", step, loss, kl, mark)
		}
	}
	for i, t := range theta {
		*t = best[i]
	}
	for _, q := range qs {
		q.bl.apply(q.td, q.tm)
	}
	return res, nil
}

func (o *Options) logf(format string, a ...any) {
	if o.Log != nil {
		o.Log(fmt.Sprintf(format, a...))
	}
}

func hasParam(ps []nn.Param, name string) bool {
	for _, p := range ps {
		if p.Name == name {
			return true
		}
	}
	return false
}

func ones(n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = 1
	}
	return s
}

func snapshot(theta []*float32) []float32 {
	s := make([]float32, len(theta))
	for i, t := range theta {
		s[i] = *t
	}
	return s
}

// chunk cuts ids into rows of seq tokens, each bos then seq-1 tokens of text.
func chunk(ids []int32, bos int32, seq int) [][]int32 {
	var rows [][]int32
	for i := 0; i+seq-1 <= len(ids); i += seq - 1 {
		r := make([]int32, seq)
		r[0] = bos
		copy(r[1:], ids[i:i+seq-1])
		rows = append(rows, r)
	}
	return rows
}

// forward runs rows through net for logits only and returns them ([len(rows)*seq, V]).
func forward(net *nn.Model, rows [][]int32, seq int) []float32 {
	x := make([]int32, len(rows)*seq)
	for i, r := range rows {
		copy(x[i*seq:], r)
	}
	net.Forward(x, nil, len(rows), seq)
	return net.Logits()
}

// holdKL is the mean KL(teacher || student) over the held-out positions.
func holdKL(net *nn.Model, hold [][]int32, lp []float32, o Options) float64 {
	V := net.Cfg.Vocab
	q := make([]float32, V)
	var sum float64
	for i := 0; i < len(hold); i += o.Batch {
		n := min(o.Batch, len(hold)-i)
		logits := forward(net, hold[i:i+n], o.Seq)
		for r := 0; r < n*o.Seq; r++ {
			logSoftmax(logits[r*V:(r+1)*V], q)
			p := lp[(i*o.Seq+r)*V:][:V]
			var kl float64
			for j, lpj := range p {
				kl += math.Exp(float64(lpj)) * float64(lpj-q[j])
			}
			sum += kl
		}
	}
	return sum / float64(len(hold)*o.Seq)
}

func logSoftmax(x, out []float32) {
	mx := x[0]
	for _, v := range x {
		mx = max(mx, v)
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v - mx))
	}
	lse := mx + float32(math.Log(s))
	for i, v := range x {
		out[i] = v - lse
	}
}

func argmax(x []float32) int32 {
	arg := 0
	for i, v := range x {
		if v > x[arg] {
			arg = i
		}
	}
	return int32(arg)
}
