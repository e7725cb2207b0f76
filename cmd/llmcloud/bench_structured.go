// `llmcloud bench structured`: MaskBench for llmcloud's grammar engine. For each schema file
// of a directory (a JSON object with "schema" and "tests", each test {"data", "valid"}) it
// compiles the schema, then drives every test instance (compact JSON, tokenized with
// --tokenizer) through a Matcher token by token, computing the full vocabulary mask before
// each token. A valid instance must be accepted to the end, an invalid one rejected somewhere.
// It prints schemas passing, compile errors, validation errors (valid rejected), invalidation
// errors (invalid accepted), and compile and mask time percentiles (bench_structured_report.go).
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/loader"
	"github.com/llmcloud/llmcloud/tokenizer"
)

func init() {
	benchModes["structured"] = runBenchStructured
}

// schemaFile is one MaskBench data file.
type schemaFile struct {
	Schema json.RawMessage `json:"schema"`
	Tests  []struct {
		Data  json.RawMessage `json:"data"`
		Valid bool            `json:"valid"`
	} `json:"tests"`
}

// schemaResult is what happened to one schema file.
type schemaResult struct {
	File      string  `json:"file"`
	Status    string  `json:"status"` // pass, fail, compile_error, timeout, crash
	Error     string  `json:"error,omitempty"`
	CompileUS float64 `json:"compile_us"`
	Tests     int     `json:"tests"`
	Tokens    int     `json:"tokens"` // masks computed
	MaskMaxUS float64 `json:"mask_max_us"`
	MaskSumUS float64 `json:"mask_sum_us"`
	// ValidationErrors are valid instances rejected; InvalidationErrors invalid ones accepted.
	ValidationErrors   int           `json:"validation_errors"`
	InvalidationErrors int           `json:"invalidation_errors"`
	Failures           []testFailure `json:"failures,omitempty"`
	maskNS             []int64
}

type testFailure struct {
	Test   int    `json:"test"`
	Valid  bool   `json:"valid"`
	Reason string `json:"reason"`
}

type structuredOptions struct {
	whitespace bool
	timeout    time.Duration
}

func runBenchStructured(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("bench structured", stderr)
	dir := fs.String("data", "", "directory of MaskBench schema files (*.json with \"schema\" and \"tests\")")
	tokPath := fs.String("tokenizer", "", "tokenizer the instances are tokenized with (tokenizer.json, HF dir, GGUF, encoder.json+vocab.bpe dir; e.g. testdata/models/llama3.2-tokenizer)")
	glob := fs.String("glob", "*.json", "which files of --data to run (a filepath.Match pattern, e.g. 'Github_hard*')")
	every := fs.Int("every", 1, "take every Nth file (in name order) for a sample across all the sources")
	limit := fs.Int("limit", 0, "at most this many schema files (0 = all), in name order")
	jsonOut := fs.String("json", "", "also write the summary and per-schema results to this JSON file")
	ws := fs.Bool("whitespace", false, "compile schemas allowing JSON white space between tokens (instances stay compact)")
	timeout := fs.Duration("timeout", 10*time.Second, "per-schema time limit (compile and all its tests); over it counts as a compile error")
	threads := fs.Int("threads", 1, "schemas processed in parallel (mask times are per thread)")
	isolate := fs.Bool("isolate", true, "run schemas in child processes, so that a schema over --timeout or --max-memory-mib can be stopped (false: in this process; a timed-out schema keeps running in the background)")
	maxMem := fs.Int64("max-memory-mib", 4096, "with --isolate, a child whose Go heap grows over this is stopped and its schema counted as a crash (0 = no limit)")
	worker := fs.Bool("worker", false, "internal: be a child of --isolate (read schema paths on stdin)")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	opt := structuredOptions{whitespace: *ws, timeout: *timeout}
	if *worker {
		tok, vocab, err := structuredVocab(*tokPath)
		if err != nil {
			return err
		}
		return runStructuredWorker(os.Stdin, stdout, tok, vocab, opt, *maxMem<<20)
	}
	switch {
	case len(pos) > 0:
		return usagef("unexpected argument %q", pos[0])
	case *dir == "" || *tokPath == "":
		return usagef("--data DIR and --tokenizer T are required")
	case *threads < 1 || *every < 1 || *limit < 0 || *timeout <= 0 || *maxMem < 0:
		return usagef("--threads and --every must be at least 1, --limit and --max-memory-mib at least 0, --timeout positive")
	}
	files, err := filepath.Glob(filepath.Join(*dir, *glob))
	if err != nil {
		return usagef("--glob %q: %v", *glob, err)
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no schema files match %s", *dir, *glob)
	}
	sort.Strings(files)
	if *every > 1 {
		var sample []string
		for i := 0; i < len(files); i += *every {
			sample = append(sample, files[i])
		}
		files = sample
	}
	if *limit > 0 && len(files) > *limit {
		files = files[:*limit]
	}
	// Every thread runs one schema at a time, in a child process or here.
	var newRunner func() schemaRunner
	if *isolate {
		wargs := []string{"bench", "structured", "--worker", "--tokenizer", *tokPath,
			fmt.Sprintf("--whitespace=%v", *ws), fmt.Sprintf("--max-memory-mib=%d", *maxMem)}
		newRunner = func() schemaRunner { return &structuredWorker{args: wargs, timeout: *timeout} }
	} else {
		tok, vocab, err := structuredVocab(*tokPath)
		if err != nil {
			return err
		}
		newRunner = func() schemaRunner { return inProcessRunner{tok, vocab, opt} }
	}
	results := make([]*schemaResult, len(files))
	var next int
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *threads; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runner := newRunner()
			defer runner.close()
			for {
				mu.Lock()
				i := next
				next++
				stop := firstErr != nil
				mu.Unlock()
				if i >= len(files) || stop {
					return
				}
				r, err := runner.run(files[i])
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				results[i] = r
				if (i+1)%500 == 0 {
					fmt.Fprintf(stderr, "%d/%d schemas (%s)\n", i+1, len(files), time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	sum := summarizeStructured(results)
	sum.Tokenizer, sum.Whitespace, sum.Threads = *tokPath, *ws, *threads
	sum.WallSeconds = time.Since(start).Seconds()
	writeStructuredTable(stdout, sum)
	if *jsonOut != "" {
		b, err := json.MarshalIndent(struct {
			Summary *structuredSummary `json:"summary"`
			Schemas []*schemaResult    `json:"schemas"`
		}{sum, results}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// structuredVocab loads the tokenizer at path and the grammar Vocab of its pieces (control
// tokens have no bytes and are never allowed; end-of-generation tokens are the EOS set).
func structuredVocab(path string) (*tokenizer.Tokenizer, *grammar.Vocab, error) {
	var tok *tokenizer.Tokenizer
	var err error
	enc, bpe := filepath.Join(path, "encoder.json"), filepath.Join(path, "vocab.bpe")
	if _, e1 := os.Stat(enc); e1 == nil {
		if _, e2 := os.Stat(bpe); e2 == nil { // GPT-2's own file names (the Llama 3 fixture)
			v, err := tokenizer.VocabFromGPT2Files(enc, bpe)
			if err != nil {
				return nil, nil, err
			}
			if tok, err = tokenizer.New(v); err != nil {
				return nil, nil, err
			}
		}
	}
	if tok == nil {
		if tok, _, err = loader.OpenTokenizer(path); err != nil {
			return nil, nil, err
		}
	}
	return tok, grammar.VocabFrom(tok, 0), nil
}

// schemaRunner runs schema files one at a time.
type schemaRunner interface {
	run(path string) (*schemaResult, error)
	close()
}

// inProcessRunner runs schema files in this process (--isolate=false).
type inProcessRunner struct {
	tok *tokenizer.Tokenizer
	v   *grammar.Vocab
	opt structuredOptions
}

func (r inProcessRunner) close() {}

func (r inProcessRunner) run(path string) (*schemaResult, error) {
	return runSchemaFile(path, r.tok, r.v, r.opt), nil
}

// runSchemaFile runs one schema file in this process under the time limit.
func runSchemaFile(path string, tok *tokenizer.Tokenizer, v *grammar.Vocab, opt structuredOptions) *schemaResult {
	done := make(chan *schemaResult, 1)
	t0 := time.Now()
	go func() { done <- runSchemaProtected(path, tok, v, opt) }()
	timer := time.NewTimer(opt.timeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if time.Since(t0) <= opt.timeout { // else both were ready: the limit decides (structuredWorker.run)
			return r
		}
	case <-timer.C:
	}
	// The work goes on in the background (the grammar API has no cancellation); it is counted
	// as a compile error like MaskBench's timeouts.
	return &schemaResult{File: filepath.Base(path), Status: "timeout", Error: fmt.Sprintf("over %s", opt.timeout)}
}

func runSchema(path string, tok *tokenizer.Tokenizer, v *grammar.Vocab, opt structuredOptions, r *schemaResult) {
	b, err := os.ReadFile(path)
	if err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return
	}
	var f schemaFile
	if err := json.Unmarshal(b, &f); err != nil {
		r.Status, r.Error = "compile_error", "reading the file: "+err.Error()
		return
	}
	t0 := time.Now()
	var g *grammar.Grammar
	ir, err := grammar.JSONSchema(f.Schema, grammar.SchemaOptions{Whitespace: opt.whitespace})
	if err == nil {
		g, err = grammar.Compile(ir, grammar.Limits{})
	}
	r.CompileUS = float64(time.Since(t0).Nanoseconds()) / 1e3
	if err != nil {
		r.Status, r.Error = "compile_error", err.Error()
		return
	}
	mask := make([]uint64, v.MaskWords())
	for i, tc := range f.Tests {
		var text bytes.Buffer
		if err := json.Compact(&text, tc.Data); err != nil {
			r.Failures = append(r.Failures, testFailure{i, tc.Valid, "skipped: data is not JSON: " + err.Error()})
			continue
		}
		r.Tests++
		ok, reason := runInstance(g, v, tok, text.Bytes(), tc.Valid, mask, &r.maskNS)
		switch {
		case tc.Valid && !ok:
			r.ValidationErrors++
			r.Failures = append(r.Failures, testFailure{i, true, reason})
		case !tc.Valid && ok:
			r.InvalidationErrors++
			r.Failures = append(r.Failures, testFailure{i, false, strings.TrimSpace("accepted " + clipN(text.String(), 200) + " " + reason)})
		}
	}
	r.Tokens = len(r.maskNS)
	for _, ns := range r.maskNS {
		us := float64(ns) / 1e3
		r.MaskSumUS += us
		r.MaskMaxUS = max(r.MaskMaxUS, us)
	}
	r.Status = "pass"
	if r.ValidationErrors+r.InvalidationErrors > 0 {
		r.Status = "fail"
	}
}

// runInstance drives text through a new Matcher token by token, timing every mask. It
// reports whether the grammar accepts the whole text, and if not, where and why not. At the
// end, the EOS bit of the last mask and CanEnd must agree: a valid instance needs both, an
// invalid one counts as accepted if either lets it end.
func runInstance(g *grammar.Grammar, v *grammar.Vocab, tok *tokenizer.Tokenizer, text []byte, valid bool, mask []uint64, times *[]int64) (bool, string) {
	ids := tok.Encode(string(text), false, false)
	var got []byte
	for _, id := range ids {
		got = append(got, tok.Piece(id)...)
	}
	if !bytes.Equal(got, text) {
		return false, "the tokenizer does not reproduce the text (" + clipN(string(got), 80) + ")"
	}
	m := g.NewMatcher(v)
	at := 0 // bytes accepted so far
	for i, id := range ids {
		t0 := time.Now()
		m.FillMask(mask)
		*times = append(*times, time.Since(t0).Nanoseconds())
		piece := tok.Piece(id)
		if mask[id/64]>>(id%64)&1 == 0 {
			return false, fmt.Sprintf("token %d %q (#%d) not allowed after %s", id, piece, i, tail(text[:at], 60))
		}
		if err := m.Accept(id); err != nil {
			return false, fmt.Sprintf("token %d %q (#%d) allowed by the mask but refused by Accept: %v", id, piece, i, err)
		}
		at += len(piece)
	}
	t0 := time.Now()
	m.FillMask(mask)
	*times = append(*times, time.Since(t0).Nanoseconds())
	canEnd, eosBit := m.CanEnd(), m.CanEnd()
	if eos := tok.EOS(); eos >= 0 && eos < v.Size() {
		eosBit = mask[eos/64]>>(eos%64)&1 != 0
	}
	switch {
	case canEnd && eosBit:
		return true, ""
	case !canEnd && !eosBit:
		return false, "the grammar cannot end after " + tail(text, 60)
	case !valid:
		return true, fmt.Sprintf("at the end CanEnd is %v but the EOS bit is %v", canEnd, eosBit)
	}
	return false, fmt.Sprintf("at the end CanEnd is %v but the EOS bit is %v", canEnd, eosBit)
}

func clipN(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// tail quotes the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		return "..." + fmt.Sprintf("%q", b[len(b)-n:])
	}
	return fmt.Sprintf("%q", b)
}
