// The distributed side of `llmcloud serve`: --tensor-parallel-size T (-tp) and
// --pipeline-parallel-size P (-pp) serve the model from T·P rank processes, each holding its
// shard of one stage's weights and KV cache. Rank 0 is this process: it starts ranks
// 1..T·P-1 as `llmcloud serve ... --distributed-init 127.0.0.1:PORT --rank R --world-size N`
// (the same flags a rank on another host is started with), runs the HTTP server and the
// engine, and broadcasts every step (package engine/dist).
// A rank that dies or hangs fails the group: rank 0 names it, fails the requests in flight and
// exits nonzero. See docs/distributed-serving.md.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmcloud/llmcloud/comm"
	"github.com/llmcloud/llmcloud/engine"
	"github.com/llmcloud/llmcloud/engine/dist"
	"github.com/llmcloud/llmcloud/format/gguf"
	"github.com/llmcloud/llmcloud/graph"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/model"
	"github.com/llmcloud/llmcloud/server"
	"github.com/prometheus/client_golang/prometheus"
)

// parallelFlags are serve's distributed flags (vLLM's names where vLLM has them).
type parallelFlags struct {
	tp, pp    int
	ep        bool   // --enable-expert-parallel
	micro     int    // --pipeline-micro-batches (0: the pipeline-parallel size)
	partition string // --pipeline-layer-partition
	layers    []int  // its numbers (nil: equal stages)
	initAddr  string
	rank      int
	worldSize int
	timeout   time.Duration

	ranks  *dist.Ranks
	leader atomic.Pointer[dist.Leader]
	kids   []*exec.Cmd
	exited chan rankExit // children that ended (rank 0 of a local launch)
	wg     sync.WaitGroup
	log    *slog.Logger
	fs     *flag.FlagSet
	// reg is the server's /metrics registry (serve sets server.Options.Registry to it): a
	// group's collectives register their metrics on it when it joins.
	reg *prometheus.Registry
}

type rankExit struct {
	rank int
	err  error
}

func registerParallelFlags(fs *flag.FlagSet) *parallelFlags {
	p := &parallelFlags{fs: fs, reg: prometheus.NewRegistry()}
	for _, n := range []string{"tensor-parallel-size", "tp"} {
		fs.IntVar(&p.tp, n, 1, "tensor-parallel ranks: the model's heads, feed-forward and vocabulary split over this many processes (started on this host unless --distributed-init)")
	}
	for _, n := range []string{"pipeline-parallel-size", "pp"} {
		fs.IntVar(&p.pp, n, 1, "pipeline-parallel stages: the layers cut into this many runs, each served by --tensor-parallel-size processes (started on this host unless --distributed-init)")
	}
	fs.IntVar(&p.micro, "pipeline-micro-batches", 0, "with --pipeline-parallel-size: cut each step's batch into up to this many micro-batches of whole sequences, so the stages work at once (default: the pipeline-parallel size; 1: one batch in the pipeline at a time)")
	fs.StringVar(&p.partition, "pipeline-layer-partition", "", "with --pipeline-parallel-size: the layers of each stage, comma-separated (e.g. 8,4: the last stage also runs the output matmul; default: equal stages)")
	fs.BoolVar(&p.ep, "enable-expert-parallel", false, "with --tensor-parallel-size: split a mixture of experts by expert (each rank holds 1/T of the experts whole) instead of splitting every expert's feed-forward width")
	fs.StringVar(&p.initAddr, "distributed-init", "", "HOST:PORT of rank 0's rendezvous: join a serving group as --rank of --world-size (rank 0 serves HTTP; the local launch uses 127.0.0.1 and a free port)")
	fs.IntVar(&p.rank, "rank", 0, "with --distributed-init: this process's rank (0 runs the server and the engine)")
	fs.IntVar(&p.worldSize, "world-size", 0, "with --distributed-init: the group's ranks (default: --tensor-parallel-size)")
	fs.DurationVar(&p.timeout, "distributed-timeout", 30*time.Second, "a collective (a step's all-reduce, a ping) waiting longer than this fails the group")
	return p
}

// on reports whether serving is distributed.
func (p *parallelFlags) on() bool { return p.tp > 1 || p.pp > 1 || p.initAddr != "" }

// check validates the flags and, when serving is distributed, the model against them, before
// any rank is started.
func (p *parallelFlags) check(mf *modelFlags, lf *loraFlags, spec bool) error {
	if p.tp < 1 || p.pp < 1 {
		return usagef("--tensor-parallel-size %d and --pipeline-parallel-size %d must be at least 1", p.tp, p.pp)
	}
	if p.micro < 0 {
		return usagef("--pipeline-micro-batches %d must be at least 1 (0: the pipeline-parallel size)", p.micro)
	}
	if p.micro == 0 {
		p.micro = p.pp
	}
	if p.partition != "" {
		for _, f := range strings.Split(p.partition, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return usagef("--pipeline-layer-partition %q: want the layers of each stage, comma-separated", p.partition)
			}
			p.layers = append(p.layers, n)
		}
		if len(p.layers) != p.pp {
			return usagef("--pipeline-layer-partition %q gives %d stages, --pipeline-parallel-size is %d", p.partition, len(p.layers), p.pp)
		}
	}
	if p.ep && p.tp == 1 {
		return usagef("--enable-expert-parallel splits the experts over --tensor-parallel-size ranks: give it a size above 1")
	}
	if !p.on() {
		if p.rank != 0 || p.worldSize != 0 {
			return usagef("--rank and --world-size need --distributed-init")
		}
		return nil
	}
	if p.worldSize == 0 {
		p.worldSize = p.tp * p.pp
	}
	switch {
	case p.worldSize != p.tp*p.pp:
		return usagef("--world-size %d is not --tensor-parallel-size %d x --pipeline-parallel-size %d", p.worldSize, p.tp, p.pp)
	case p.rank < 0 || p.rank >= p.worldSize:
		return usagef("--rank %d is outside the group of %d", p.rank, p.worldSize)
	case *lf.enable || len(lf.modules) > 0:
		return usagef("--enable-lora with --tensor-parallel-size %d: LoRA adapters are not sharded yet", p.tp)
	case spec:
		return usagef("speculative decoding with --tensor-parallel-size %d is not supported yet", p.tp)
	case mf.w8a8.on:
		return usagef("--w8a8 with --tensor-parallel-size %d is not supported yet", p.tp)
	}
	threads := false
	p.fs.Visit(func(f *flag.Flag) { threads = threads || f.Name == "threads" })
	if !threads { // the ranks share this host's cores (a remote rank: pass --threads)
		mf.threads = max(1, runtime.NumCPU()/p.worldSize)
	}
	if p.initAddr != "" {
		if _, _, err := net.SplitHostPort(p.initAddr); err != nil {
			return usagef("--distributed-init %q: want HOST:PORT", p.initAddr)
		}
	}
	f, err := gguf.Open(mf.model)
	if err != nil {
		return fmt.Errorf("tensor-parallel serving loads GGUF files: %w", err)
	}
	defer f.Close()
	cfg, err := model.ConfigFromGGUF(f)
	if err != nil {
		return fmt.Errorf("%s: %w", mf.model, err)
	}
	if p.ep && cfg.Experts == 0 {
		return usagef("--enable-expert-parallel: %s is not a mixture of experts", mf.model)
	}
	if err := model.CheckTP(&cfg, p.tp, p.tpOptions()); err != nil {
		return usagef("%s: %v", mf.model, err)
	}
	if err := model.CheckPipeline(&cfg, p.pp, p.layers); err != nil {
		if p.layers == nil {
			return usagef("%s: %v (--pipeline-layer-partition cuts uneven stages)", mf.model, err)
		}
		return usagef("%s: %v", mf.model, err)
	}
	for i := range f.Tensors {
		if err := model.CheckTPTensor(&f.Tensors[i], p.tp, p.tpOptions()); err != nil {
			return usagef("%s: %v", mf.model, err)
		}
	}
	return nil
}

// tpOptions are the shard's options the flags give.
func (p *parallelFlags) tpOptions() graph.TPOptions { return graph.TPOptions{ExpertParallel: p.ep} }

// env is this process's place in the group (a local launch's rank 0 picks a free port).
func (p *parallelFlags) env() (comm.Env, error) {
	e := comm.Env{Rank: p.rank, LocalRank: p.rank, WorldSize: p.worldSize, MasterAddr: "127.0.0.1"}
	if p.initAddr == "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return e, err
		}
		e.MasterPort = ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		return e, nil
	}
	host, port, _ := net.SplitHostPort(p.initAddr)
	n, err := strconv.Atoi(port)
	if err != nil {
		return e, usagef("--distributed-init %q: bad port", p.initAddr)
	}
	e.MasterAddr, e.MasterPort = host, n
	return e, nil
}

// start joins the group. A rank other than 0 runs its whole life here (worker is true). Rank 0
// of a local launch starts the other ranks first; rank 0 then loads its shard through mf.
func (p *parallelFlags) start(ctx context.Context, args []string, mf *modelFlags, log *slog.Logger, stderr io.Writer) (worker bool, err error) {
	p.log = log
	env, err := p.env()
	if err != nil {
		return false, err
	}
	if p.initAddr == "" {
		if err := p.launch(args, env, stderr); err != nil {
			return false, err
		}
	}
	type joined struct {
		r   *dist.Ranks
		err error
	}
	jc := make(chan joined, 1)
	go func() {
		reg := p.reg
		if reg == nil {
			reg = prometheus.NewRegistry()
		}
		r, err := dist.JoinWith(env, dist.Layout{TP: p.tp, PP: p.pp}, p.timeout, log, reg)
		jc <- joined{r, err}
	}()
	select {
	case j := <-jc:
		if j.err != nil {
			return false, j.err
		}
		p.ranks = j.r
		p.ranks.ExpertParallel, p.ranks.Partition = p.ep, p.layers
	case e := <-p.exited:
		return false, fmt.Errorf("rank %d exited while the group formed: %v", e.rank, e.err)
	case <-ctx.Done():
		return false, ctx.Err()
	}
	mf.part = p.ranks.Part()
	if env.Rank == 0 {
		log.Info("serving group formed", "ranks", env.WorldSize, "tensor_parallel", p.tp, "pipeline_parallel", p.pp,
			"pipeline_micro_batches", p.micro, "expert_parallel", p.ep, "rendezvous", net.JoinHostPort(env.MasterAddr, strconv.Itoa(env.MasterPort)))
		return false, nil
	}
	b, err := mf.open()
	if err != nil {
		return true, fmt.Errorf("rank %d: %w", env.Rank, err)
	}
	defer b.Close()
	p.logShard(b)
	return true, dist.Work(p.ranks, b.Model, log)
}

// logShard reports the weight bytes this rank binds against the whole model's, and those
// resident in it, measured from the process (/proc/self/smaps: the model file's mapping and
// the rank's copies of its blocks; -1 where unknown).
func (p *parallelFlags) logShard(b *loader.Bundle) {
	var whole int64
	for _, t := range b.Model.Weights {
		whole += int64(len(t.Data))
	}
	w := dist.MeasureWeights(p.ranks.World.Rank(), b.Model)
	lo, hi := b.Model.Layers()
	p.log.Info("model part loaded", "rank", p.ranks.World.Rank(), "of", p.ranks.World.Size(),
		"weight_bytes", w.Bound, "model_weight_bytes", whole, "tp", p.tp, "layers", fmt.Sprintf("%d-%d", lo, hi-1),
		"weight_resident_bytes", w.Resident(), "resident_file_bytes", w.File, "resident_copy_bytes", w.Copies)
}

// launch starts ranks 1..worldSize-1 of a local group as children of this process, their
// output on stderr with "[rank r] " in front.
func (p *parallelFlags) launch(args []string, env comm.Env, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p.exited = make(chan rankExit, p.worldSize)
	var mu sync.Mutex
	for r := 1; r < p.worldSize; r++ {
		cargs := append([]string{"serve"}, args...)
		cargs = append(cargs, "--distributed-init", net.JoinHostPort(env.MasterAddr, strconv.Itoa(env.MasterPort)),
			"--rank", strconv.Itoa(r), "--world-size", strconv.Itoa(p.worldSize))
		cmd := exec.Command(exe, cargs...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // rank 0 gone: no orphans
		out, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		cmd.Stdout = cmd.Stderr
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		p.log.Info("started rank", "rank", r, "pid", cmd.Process.Pid)
		p.kids = append(p.kids, cmd)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				mu.Lock()
				fmt.Fprintf(stderr, "[rank %d] %s\n", r, sc.Text())
				mu.Unlock()
			}
			err := cmd.Wait()
			if l := p.leader.Load(); err != nil && l != nil {
				l.Fail(fmt.Errorf("rank %d (pid %d) exited: %v", r, cmd.Process.Pid, err))
			}
			p.exited <- rankExit{r, err}
		}()
	}
	return nil
}

// attach makes rank 0's engine drive the group: the other ranks get the KV pool's shape and
// then every step.
func (p *parallelFlags) attach(srv *server.Server, b *loader.Bundle, eng *engine.Engine, invariant bool) error {
	if p.ranks == nil {
		return nil
	}
	p.logShard(b)
	cfg := eng.Config()
	l, err := dist.NewLeader(p.ranks, b.Model, dist.Setup{NumBlocks: cfg.NumBlocks, BlockSize: cfg.BlockSizeTokens,
		KVDType: b.Model.KVCacheDType.String(), Invariant: invariant}, p.log)
	if err != nil {
		return err
	}
	b.Model.MicroBatches = p.micro
	p.leader.Store(l)
	return srv.Registry().Register(&rankWeightsCollector{m: b.Model, ranks: l.Weights()})
}

// failed is closed when the group fails (nil, never ready, without one).
func (p *parallelFlags) failed() <-chan struct{} {
	if l := p.leader.Load(); l != nil {
		return l.Failed()
	}
	return nil
}

// err is the group's failure.
func (p *parallelFlags) err() error {
	if l := p.leader.Load(); l != nil {
		return l.Err()
	}
	return nil
}

// close stops the other ranks (orderly when the group works), leaves the group and waits for
// local ranks, killing those still running after a grace period.
func (p *parallelFlags) close() {
	if l := p.leader.Load(); l != nil {
		if err := l.Close(); err != nil && !errors.Is(err, l.Err()) {
			p.log.Warn("stopping the tensor-parallel ranks", "err", err)
		}
	}
	if p.ranks != nil {
		p.ranks.Close()
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		for _, k := range p.kids {
			k.Process.Kill()
		}
		<-done
	}
}

// stopServing ends a server whose group failed: new requests get 503, the requests in flight
// fail (their next step's forward does at once) within the collective timeout, and the
// group's failure is returned, naming the rank.
func (p *parallelFlags) stopServing(srv *server.Server, eng *engine.Engine, hs *http.Server) error {
	p.log.Error("stopping: the tensor-parallel group failed", "err", p.err())
	srv.BeginShutdown()
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	if err := eng.Shutdown(ctx); err != nil {
		p.log.Warn("requests aborted", "err", err)
	}
	hs.Close()
	return p.err()
}
