// ui_test.go checks the training console: `train --ui` in a real process serving its run while
// it trains and after, until SIGINT; `llmcloud ui RUN` on the directory it wrote (?after=K, a
// half-written last line, the done rule); and the errors for a missing or non-run directory.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
	"github.com/llmcloud/llmcloud/train"
)

// runJSON GETs a /console/api/run URL.
func runJSON(t *testing.T, url string) (int, train.RunView) {
	t.Helper()
	code, body := status(t, url, "")
	var v train.RunView
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v in %s", url, err, body)
		}
	}
	return code, v
}

func TestTrainUIAndUIRun(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	for range 40 {
		text.WriteString("The ferry left the harbour at six and the gulls followed it out to the island.\n\n")
	}
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(text.String()), 0o644)
	run(t, "tokenizer", "train", "--vocab-size", "300", "--input", txt, "-o", filepath.Join(dir, "tok"))
	data := filepath.Join(dir, "data")
	run(t, "data", "prepare", "--tokenizer", filepath.Join(dir, "tok"), "--input", txt, "--val-fraction", "0.2", "-o", data)
	out := filepath.Join(dir, "run")

	// train --ui in its own process (the signal ends it).
	var logs proc.Buffer
	cmd := exec.Command(os.Args[0], "train", "--ui", "127.0.0.1:0", "--data", data, "--out", out, "--steps", "8",
		"--dim", "32", "--layers", "1", "--heads", "2", "--batch", "2", "--seq", "16", "--warmup", "2",
		"--eval-every", "4", "--eval-batches", "1", "--threads", "1")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	addrRE := regexp.MustCompile(`the console at http://(\S+)`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addrRE.FindStringSubmatch(logs.String()); m != nil {
			base = "http://" + m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no console address:\n%s", logs.String())
		}
	}
	code, v := runJSON(t, base+"/console/api/run")
	if code != 200 || v.Config == nil || v.Config.Steps != 8 || v.Dir != out {
		t.Fatalf("train --ui at the start: %d %+v (want the config before any checkpoint)", code, v)
	}
	for deadline := time.Now().Add(20 * time.Second); !v.Done; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the run never read as done:\n%s", logs.String())
		}
		_, v = runJSON(t, base+"/console/api/run")
	}
	if len(v.Records) != 10 || v.Records[9].ValLoss == nil || v.Records[9].Step != 8 {
		t.Fatalf("train --ui when done: %d records %+v; want 8 steps and 2 validations", len(v.Records), v.Records)
	}
	if code, body := status(t, base+"/", ""); code != 200 || !strings.Contains(body, `content="train"`) {
		t.Errorf("GET / of train --ui: %d, want the page in train mode", code)
	}
	time.Sleep(200 * time.Millisecond) // still serving after the run
	if code, _ := status(t, base+"/console/api/run?after=10", ""); code != 200 {
		t.Errorf("train --ui after the run: %d", code)
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("train --ui after SIGINT: %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("train --ui did not stop on SIGINT")
	}

	// llmcloud ui RUN on the directory it wrote.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- uiMain(ctx, []string{out, "--port", "0"}, &logs, func(a string) { addr <- a }) }()
	select {
	case a := <-addr:
		base = "http://" + a
	case err := <-done:
		t.Fatal(err)
	}
	code, all := runJSON(t, base+"/console/api/run")
	if code != 200 || len(all.Records) != 10 || !all.Done || all.Config == nil || all.Config.Steps != 8 {
		t.Fatalf("ui RUN: %d, %d records, done %v, config %v", code, len(all.Records), all.Done, all.Config)
	}
	_, tail := runJSON(t, base+"/console/api/run?after=7")
	if len(tail.Records) != 3 || tail.Records[0].Step != all.Records[7].Step || !tail.Done {
		t.Errorf("?after=7: %+v", tail.Records)
	}
	if _, past := runJSON(t, base+"/console/api/run?after=99"); past.Records == nil || len(past.Records) != 0 {
		t.Errorf("?after=99: %#v, want []", past.Records)
	}
	for _, q := range []string{"?after=-1", "?after=x"} {
		if code, _ := status(t, base+"/console/api/run"+q, ""); code != 400 {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}
	if code, body := status(t, base+"/", ""); code != 200 || !strings.Contains(body, `content="train"`) {
		t.Errorf("GET / of ui RUN: %d", code)
	}
	// A writer between two writes: the half line is not read, and the run is live again.
	f, _ := os.OpenFile(filepath.Join(out, "log.jsonl"), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"step":9,"loss":2.5,"lr":0.00`)
	f.Close()
	if code, half := runJSON(t, base+"/console/api/run"); code != 200 || len(half.Records) != 10 || half.Done {
		t.Errorf("half-written last line: %d, %d records, done %v; want 200, 10, false", code, len(half.Records), half.Done)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ui RUN stopped with %v", err)
	}

	// Bad input: said at the start.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{filepath.Join(dir, "nope")}, "no such file"},
		{[]string{data}, "not a run directory"},
		{[]string{txt}, "not a directory"},
		{nil, "give one run directory"},
	} {
		err := uiMain(context.Background(), c.args, &logs, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ui %q: %v, want an error saying %q", c.args, err, c.want)
		}
	}
	var ue usageError
	if err := runTrain([]string{"--ui", "127.0.0.1:0", "--data", data, "--steps", "1"}, &logs, &logs); !errors.As(err, &ue) ||
		!strings.Contains(err.Error(), "--ui needs --out") {
		t.Errorf("train --ui without --out: %v", err)
	}
}
