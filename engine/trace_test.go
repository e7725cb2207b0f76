// This file implements the data-driven trace tests: each testdata/*.txt scenario is a list of
// commands, each followed by "----" and the expected output, ended by a blank line. The
// harness checks every invariant after every command and, at the end of a scenario, aborts
// what is still live and checks that no block leaked. `go test ./engine -run Trace -update`
// rewrites the expectations (review the diff by hand).
//
// Commands:
//
//	config blocks=N block_size=N budget=N max_seqs=N chunked=bool caching=bool policy=fcfs|priority max_len=N
//	add id=N prompt=1,2,5..9 [max_tokens=N] [stop=7,8] [priority=N] [arrival=N] [salt=S]
//	schedule              Schedule, print the plan
//	update [id=tok ...]   run the pending plan on the fake runner, Update (tokens override the fake model)
//	step [id=tok ...]     schedule + update
//	run [max=N]           step until nothing is live (one line per step)
//	abort id | finish id stopped|length
//	state                 sequences and blocks
//	lookup prompt=... [salt=S]   GetComputedBlocks for a prompt

package engine

import (
	"bufio"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata expectations")

type traceCase struct {
	pre      string // comments and blank lines before the command
	cmd      string
	expected string
}

func parseTrace(t *testing.T, path string) []traceCase {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []traceCase
	var pre strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			pre.WriteString(line + "\n")
			continue
		}
		c := traceCase{pre: pre.String(), cmd: line}
		pre.Reset()
		if !sc.Scan() || sc.Text() != "----" {
			t.Fatalf("%s: command %q not followed by ----", path, line)
		}
		var exp []string
		for sc.Scan() && sc.Text() != "" {
			exp = append(exp, sc.Text())
		}
		c.expected = strings.Join(exp, "\n")
		cases = append(cases, c)
	}
	if pre.Len() > 0 {
		cases = append(cases, traceCase{pre: pre.String()})
	}
	return cases
}

func TestTrace(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.txt")
	if len(files) == 0 {
		t.Fatal("no testdata/*.txt")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { runTraceFile(t, f) })
	}
}

func runTraceFile(t *testing.T, path string) {
	cases := parseTrace(t, path)
	h := &traceHarness{}
	var out strings.Builder
	for _, c := range cases {
		out.WriteString(c.pre)
		if c.cmd == "" {
			continue
		}
		got := strings.TrimRight(h.do(c.cmd), "\n")
		if got == "" {
			got = "(nothing)"
		}
		if h.s != nil {
			if err := h.s.check(); err != nil {
				got += "\nINVARIANT: " + err.Error()
			}
		}
		if got != c.expected && !*update {
			t.Errorf("%s: %s\n--- got\n%s\n--- want\n%s", path, c.cmd, got, c.expected)
		}
		fmt.Fprintf(&out, "%s\n----\n%s\n\n", c.cmd, got)
	}
	if err := h.drain(); err != nil {
		t.Errorf("%s: at the end: %v", path, err)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type traceHarness struct {
	s      *Scheduler
	runner *fakeRunner
	plan   *StepPlan
}

func parseArgs(fields []string) (map[string]string, []string) {
	kv := map[string]string{}
	var pos []string
	for _, f := range fields {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		} else {
			pos = append(pos, f)
		}
	}
	return kv, pos
}

// parseIDs reads "1,2,5..9" (ranges inclusive).
func parseIDs(s string) ([]int, error) {
	var out []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		if a, b, ok := strings.Cut(part, ".."); ok {
			lo, err1 := strconv.Atoi(a)
			hi, err2 := strconv.Atoi(b)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad range %q", part)
			}
			for i := lo; i <= hi; i++ {
				out = append(out, i)
			}
			continue
		}
		v, err := strconv.Atoi(part)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func atoiOr(kv map[string]string, k string, def int) int {
	if v, ok := kv[k]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic(fmt.Sprintf("%s=%q: %v", k, v, err))
		}
		return n
	}
	return def
}

func (h *traceHarness) do(cmd string) (out string) {
	defer func() {
		if r := recover(); r != nil {
			out = fmt.Sprintf("PANIC: %v", r)
		}
	}()
	fields := strings.Fields(cmd)
	kv, pos := parseArgs(fields[1:])
	if fields[0] != "config" && h.s == nil {
		return "error: no config"
	}
	switch fields[0] {
	case "config":
		return h.config(kv)
	case "add":
		prompt, err := parseIDs(kv["prompt"])
		if err != nil {
			return "error: " + err.Error()
		}
		stop, err := parseIDs(kv["stop"])
		if err != nil {
			return "error: " + err.Error()
		}
		_, err = h.s.AddRequest(SeqRequest{
			ID: SeqID(atoiOr(kv, "id", 0)), Prompt: prompt, MaxTokens: atoiOr(kv, "max_tokens", 0),
			StopTokenIDs: stop, Priority: atoiOr(kv, "priority", 0),
			ArrivalTime: int64(atoiOr(kv, "arrival", 0)), CacheSalt: kv["salt"],
		})
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "schedule":
		return h.schedule()
	case "update":
		return h.update(kv)
	case "step":
		return h.schedule() + "\n" + h.update(kv)
	case "run":
		var b strings.Builder
		for i := 0; h.s.HasUnfinished() && i < atoiOr(kv, "max", 1000); i++ {
			plan := h.s.Schedule()
			h.plan = plan
			fmt.Fprintf(&b, "%s | %s\n", planLine(plan), h.update(nil))
		}
		return b.String()
	case "abort", "finish":
		id, _ := strconv.Atoi(pos[0])
		var err error
		if fields[0] == "abort" {
			err = h.s.Abort(SeqID(id))
		} else {
			st := map[string]Status{"stopped": StatusFinishedStopped, "length": StatusFinishedLength}[pos[1]]
			err = h.s.Finish(SeqID(id), st)
		}
		if err != nil {
			return "error: " + err.Error()
		}
		return "ok"
	case "state":
		return h.state()
	case "lookup":
		toks, _ := parseIDs(kv["prompt"])
		blocks, n := h.s.blocks.GetComputedBlocks(toks, kv["salt"])
		return fmt.Sprintf("blocks %v, %d cached tokens", blocks, n)
	}
	return "error: unknown command " + fields[0]
}

// drain aborts every live sequence and checks that all blocks came back.
func (h *traceHarness) drain() error {
	if h.s == nil {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(h.s.seqs)) {
		h.s.Abort(id)
	}
	return h.s.blocks.checkEmpty()
}

func (h *traceHarness) config(kv map[string]string) string {
	if err := h.drain(); err != nil {
		return "LEAK in the previous scenario: " + err.Error()
	}
	cfg := DefaultConfig()
	cfg.NumBlocks = atoiOr(kv, "blocks", cfg.NumBlocks)
	cfg.BlockSizeTokens = atoiOr(kv, "block_size", cfg.BlockSizeTokens)
	cfg.MaxNumBatchedTokens = atoiOr(kv, "budget", cfg.MaxNumBatchedTokens)
	cfg.MaxNumSeqs = atoiOr(kv, "max_seqs", cfg.MaxNumSeqs)
	cfg.MaxModelLenTokens = atoiOr(kv, "max_len", cfg.NumBlocks*cfg.BlockSizeTokens)
	cfg.ChunkedPrefill = kv["chunked"] != "false"
	cfg.PrefixCaching = kv["caching"] != "false"
	if kv["policy"] == "priority" {
		cfg.Policy = PolicyPriority
	}
	s, err := NewScheduler(cfg)
	if err != nil {
		return "error: " + err.Error()
	}
	h.s, h.runner, h.plan = s, newFakeRunner(cfg.NumBlocks, cfg.BlockSizeTokens), nil
	return "ok"
}

func (h *traceHarness) schedule() string {
	h.plan = h.s.Schedule()
	var b strings.Builder
	fmt.Fprintf(&b, "step %d: %d seqs, %d tokens", h.plan.Step, len(h.plan.Seqs), h.plan.NumBatchedTokens)
	for _, ss := range h.plan.Seqs {
		fmt.Fprintf(&b, "\n  %s", seqLine(ss))
	}
	if len(h.plan.Preempted) > 0 {
		fmt.Fprintf(&b, "\n  preempted %v", h.plan.Preempted)
	}
	return b.String()
}

func seqLine(ss ScheduledSeq) string {
	end := ss.StartPos + len(ss.Tokens) - 1
	s := fmt.Sprintf("seq %d prefill pos %d..%d", ss.ID, ss.StartPos, end)
	if !ss.Prefill {
		s = fmt.Sprintf("seq %d decode pos %d tok %d", ss.ID, ss.StartPos, ss.Tokens[0])
	}
	s += fmt.Sprintf(" blocks %v", ss.BlockTable)
	if ss.NeedsLogits {
		s += " logits"
	}
	return s
}

// planLine is a one-line summary: "step 3: 1:p0-15 2:d20 preempted [3]".
func planLine(p *StepPlan) string {
	parts := []string{fmt.Sprintf("step %d:", p.Step)}
	for _, ss := range p.Seqs {
		if ss.Prefill {
			parts = append(parts, fmt.Sprintf("%d:p%d-%d", ss.ID, ss.StartPos, ss.StartPos+len(ss.Tokens)-1))
		} else {
			parts = append(parts, fmt.Sprintf("%d:d%d", ss.ID, ss.StartPos))
		}
	}
	if len(p.Preempted) > 0 {
		parts = append(parts, fmt.Sprintf("preempted %v", p.Preempted))
	}
	return strings.Join(parts, " ")
}

func (h *traceHarness) update(kv map[string]string) string {
	if h.plan == nil {
		return "error: no pending plan"
	}
	plan := h.plan
	h.plan = nil
	sampled, err := h.runner.run(h.s, plan)
	if err != nil {
		return "RUNNER: " + err.Error()
	}
	for k, v := range kv {
		id, _ := strconv.Atoi(k)
		tok, _ := strconv.Atoi(v)
		sampled[SeqID(id)] = tok
	}
	outs, err := h.s.Update(plan, sampled)
	if err != nil {
		return "error: " + err.Error()
	}
	var parts []string
	for _, o := range outs {
		p := fmt.Sprintf("%d->%d", o.ID, o.Token)
		if o.Status != StatusRunning {
			p += " " + o.Status.String()
		}
		parts = append(parts, p)
	}
	if len(parts) == 0 {
		return "no tokens"
	}
	return strings.Join(parts, ", ")
}

func (h *traceHarness) state() string {
	s := h.s
	var b strings.Builder
	list := func(name string, q []*Sequence) {
		fmt.Fprintf(&b, "%s:", name)
		for _, x := range q {
			fmt.Fprintf(&b, " %d", x.ID)
		}
		b.WriteString("\n")
	}
	list("running", s.running)
	list("waiting", s.waiting)
	for _, id := range slices.Sorted(maps.Keys(s.seqs)) {
		q := s.seqs[id]
		fmt.Fprintf(&b, "seq %d %v computed %d/%d cached %d preemptions %d out %v blocks %v\n",
			q.ID, q.Status, q.NumComputedTokens, q.NumTokens(), q.NumCachedTokens, q.NumPreemptions,
			q.Output(), s.blocks.BlockTable(q.ID))
	}
	m := s.blocks
	st := m.Stats()
	fmt.Fprintf(&b, "blocks: free %d/%d %v cached %d usage %.2f\n", m.NumFreeBlocks(), m.NumBlocks(), m.FreeOrder(), m.NumCachedBlocks(), m.Usage())
	var refs []string
	for i := range m.NumBlocks() {
		if r := m.RefCount(BlockID(i)); r > 1 {
			refs = append(refs, fmt.Sprintf("%d:%d", i, r))
		}
	}
	if len(refs) > 0 {
		fmt.Fprintf(&b, "shared refs: %s\n", strings.Join(refs, " "))
	}
	fmt.Fprintf(&b, "stats: query %d hit %d evictions %d preemptions %d finished %d aborted %d",
		st.QueryTokens, st.HitTokens, st.Evictions, s.stats.Preemptions, s.stats.Finished, s.stats.Aborted)
	return b.String()
}
