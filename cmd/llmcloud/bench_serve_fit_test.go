package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

// prepareServe parses args as `bench serve` flags and prepares the run.
func prepareServe(t *testing.T, args ...string) (*serveRun, string, error) {
	t.Helper()
	fs := newFlags("bench serve", &bytes.Buffer{})
	f := addServeFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	run, err := f.prepare(&errb)
	return run, errb.String(), err
}

// TestBenchServeMaxModelLen: lengths that cannot fit the server's max_model_len are refused
// before the run with the flags to change; the random dataset's default lengths shrink to fit
// with one line saying so; a server that does not report max_model_len is not checked.
func TestBenchServeMaxModelLen(t *testing.T) {
	srv := benchtest.New(benchtest.Script{TTFT: time.Millisecond, ITL: time.Millisecond}, false)
	defer srv.Close()
	srv.MaxModelLen.Store(256)

	_, _, err := prepareServe(t, "--base-url", srv.URL, "--num-prompts", "4", "--random-input-len", "1024")
	if err == nil || !strings.Contains(err.Error(), "max_model_len of 256 tokens") || !strings.Contains(err.Error(), "--random-input-len and --random-output-len (e.g. 144 and 64)") {
		t.Errorf("explicit lengths over max_model_len: %v", err)
	}
	_, _, err = prepareServe(t, "--base-url", srv.URL, "--num-prompts", "4", "--dataset-name", "prefix-repetition")
	if err == nil || !strings.Contains(err.Error(), "--prefix-repetition-prefix-len") {
		t.Errorf("prefix-repetition over max_model_len: %v", err)
	}

	run, msg, err := prepareServe(t, "--base-url", srv.URL, "--num-prompts", "4")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, "max_model_len is 256 tokens: random prompts of 144 input + 64 output tokens instead of the default 1024 + 128") {
		t.Errorf("scaling note %q", msg)
	}
	for _, r := range run.cfg.Requests {
		if r.PromptTokens != 144 || r.OutputTokens != 64 {
			t.Fatalf("request of %d + %d tokens", r.PromptTokens, r.OutputTokens)
		}
	}
	if p := run.res.Params; p["random_input_len"] != 144 || p["random_output_len"] != 64 {
		t.Errorf("params %v", p)
	}

	_, msg, err = prepareServe(t, "--base-url", srv.URL, "--num-prompts", "40", "--random-input-len", "150",
		"--random-output-len", "50", "--random-range-ratio", "0.5")
	if err != nil || !strings.Contains(msg, "requests ask for more than the server's max_model_len of 256 tokens") {
		t.Errorf("some over: %v %q", err, msg)
	}

	srv.MaxModelLen.Store(0) // not reported: no check, no scaling
	run, msg, err = prepareServe(t, "--base-url", srv.URL, "--num-prompts", "2", "--random-input-len", "1024")
	if err != nil || msg != "" || run.cfg.Requests[0].PromptTokens != 1024 {
		t.Errorf("unreported max_model_len: %v %q", err, msg)
	}
}
