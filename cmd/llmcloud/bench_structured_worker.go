// Isolation for `llmcloud bench structured`: each thread runs its schemas in a child process
// (`bench structured --worker`), which loads the tokenizer once, reads schema file paths on
// stdin and answers one JSON line each. A schema over --timeout, or one that kills the child
// (a crash, or memory over --max-memory), costs only that child: the parent kills or reaps it,
// records the schema, and starts a fresh one, so a runaway schema never slows the schemas
// after it (a goroutine cannot be stopped from outside; a process can).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/grammar"
	"github.com/llmcloud/llmcloud/tokenizer"
)

// workerLine is one answer of a worker: a schema's result with its mask times.
type workerLine struct {
	Ready  bool          `json:"ready,omitempty"`
	Result *schemaResult `json:"result,omitempty"`
	MaskNS []int64       `json:"mask_ns,omitempty"`
}

// overMemory is what a worker prints to stderr before it exits over --max-memory.
const overMemory = "over --max-memory"

// runStructuredWorker is the child's side: answer each path read from in with a line on out.
func runStructuredWorker(in io.Reader, out io.Writer, tok *tokenizer.Tokenizer, v *grammar.Vocab, opt structuredOptions, maxMemory int64) error {
	if maxMemory > 0 {
		go watchMemory(maxMemory)
	}
	enc := json.NewEncoder(out)
	if err := enc.Encode(workerLine{Ready: true}); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		r := runSchemaProtected(sc.Text(), tok, v, opt)
		if err := enc.Encode(workerLine{Result: r, MaskNS: r.maskNS}); err != nil {
			return err
		}
	}
	return sc.Err()
}

// runSchemaProtected runs one schema file in this goroutine; a panic is reported as a crash.
func runSchemaProtected(path string, tok *tokenizer.Tokenizer, v *grammar.Vocab, opt structuredOptions) (r *schemaResult) {
	r = &schemaResult{File: filepath.Base(path)}
	defer func() {
		if p := recover(); p != nil {
			r.Status, r.Error = "crash", fmt.Sprint("panic: ", p)
		}
	}()
	runSchema(path, tok, v, opt, r)
	return r
}

// watchMemory exits the process when the Go heap goes over limit bytes.
func watchMemory(limit int64) {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	for range time.Tick(50 * time.Millisecond) {
		metrics.Read(s)
		if used := int64(s[0].Value.Uint64()); used > limit {
			fmt.Fprintf(os.Stderr, "%s: heap %d MiB\n", overMemory, used>>20)
			os.Exit(3)
		}
	}
}

// structuredWorker is the parent's handle on one child.
type structuredWorker struct {
	args    []string
	timeout time.Duration
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan []byte
	stderr  *headBuffer
}

// asMainEnvName makes a test binary run main (cmd/llmcloud's TestMain); llmcloud ignores it.
const asMainEnvName = "LLMCLOUD_TEST_AS_MAIN"

func (w *structuredWorker) start() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, w.args...)
	// Under `go test` the executable is the test binary; its TestMain runs main with this set.
	cmd.Env = append(os.Environ(), asMainEnvName+"=1")
	w.stderr = &headBuffer{max: 4096}
	cmd.Stderr = w.stderr
	if w.in, err = cmd.StdinPipe(); err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.cmd, w.lines = cmd, make(chan []byte)
	go func(lines chan<- []byte) {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				close(lines)
				return
			}
			lines <- line
		}
	}(w.lines)
	select { // the tokenizer loads before the first schema
	case line, ok := <-w.lines:
		var l workerLine
		if ok && json.Unmarshal(line, &l) == nil && l.Ready {
			return nil
		}
	case <-time.After(5 * time.Minute):
	}
	w.stop()
	return fmt.Errorf("bench structured worker did not start: %s", w.stderr.String())
}

func (w *structuredWorker) close() { w.stop() }

func (w *structuredWorker) stop() {
	if w.cmd == nil {
		return
	}
	w.in.Close()
	w.cmd.Process.Kill()
	w.cmd.Wait()
	for range w.lines { // let the reader goroutine finish
	}
	w.cmd = nil
}

// run sends one schema file to the child (starting one if needed) and waits for its answer.
func (w *structuredWorker) run(path string) (*schemaResult, error) {
	if w.cmd == nil {
		if err := w.start(); err != nil {
			return nil, err
		}
	}
	name := filepath.Base(path)
	t0 := time.Now()
	if _, err := fmt.Fprintln(w.in, path); err != nil {
		w.stop()
		return &schemaResult{File: name, Status: "crash", Error: "worker gone: " + w.stderr.String()}, nil
	}
	timer := time.NewTimer(w.timeout)
	defer timer.Stop()
	select {
	case line, ok := <-w.lines:
		if ok && time.Since(t0) > w.timeout {
			// The answer came after the limit: the timer and the answer were both ready when
			// select chose (a loaded host), and the limit decides, not select's random choice.
			return &schemaResult{File: name, Status: "timeout", Error: fmt.Sprintf("over %s", w.timeout)}, nil
		}
		var l workerLine
		if ok && json.Unmarshal(line, &l) == nil && l.Result != nil {
			l.Result.maskNS = l.MaskNS
			return l.Result, nil
		}
		w.stop()
		msg := strings.TrimSpace(w.stderr.String())
		if i := strings.Index(msg, "\n\ngoroutine "); i > 0 { // a Go crash: keep its first lines
			msg = msg[:i]
		}
		return &schemaResult{File: name, Status: "crash", Error: "worker died: " + clipN(msg, 600)}, nil
	case <-timer.C:
		w.stop()
		return &schemaResult{File: name, Status: "timeout", Error: fmt.Sprintf("over %s", w.timeout)}, nil
	}
}

// headBuffer keeps the first max bytes written to it (a crash's message comes first, its
// goroutine dump after).
type headBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (t *headBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.buf.Len(); room > 0 {
		t.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (t *headBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
