// Training scenarios through the real binary: a checkpoint with one flipped bit (in each of its
// files in turn) and a `latest` pointing outside the run directory are refused on resume, naming
// the file; a NaN loss injected at step k (LLMCLOUD_TRAIN_INJECT_NAN) is skipped and logged by
// step, and a run of them beyond --max-bad-steps stops with a checkpoint that resumes.
package chaos

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// trainData writes a tiny corpus, trains a tokenizer on it and prepares it; it returns the
// prepared data directory.
func trainData(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(strings.Repeat("The lamp in the lighthouse turned all night over the grey water.\n", 30)), 0o644)
	tok, data := filepath.Join(dir, "tok"), filepath.Join(dir, "data")
	mustRun(t, nil, "tokenizer", "train", "--vocab-size", "300", "--input", txt, "-o", tok)
	mustRun(t, nil, "data", "prepare", "--tokenizer", tok, "--input", txt, "-o", data)
	return data
}

// trainArgs is the smallest training run: a 1-layer, 32-wide model on 2 × 16 tokens a step.
func trainArgs(data, out string, steps int, extra ...string) []string {
	return append([]string{"train", "--data", data, "--out", out, "--dim", "32", "--layers", "1", "--heads", "2",
		"--batch", "2", "--seq", "16", "--steps", strconv.Itoa(steps), "--threads", "1"}, extra...)
}

func resumeArgs(out string, extra ...string) []string {
	return append([]string{"train", "--resume", "latest", "--out", out, "--threads", "1"}, extra...)
}

func mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, _, _, err := runBin(2*time.Minute, env, args...)
	if err != nil || crashText(out) != "" {
		t.Fatalf("llmcloud %s: %v\n%s", strings.Join(args, " "), err, tail(out))
	}
	return out
}

// latestCheckpoint is the checkpoint directory the run's latest file names.
func latestCheckpoint(t *testing.T, out string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimSpace(string(b))
	if !filepath.IsAbs(name) {
		name = filepath.Join(out, name)
	}
	return name
}

func TestChaosCheckpoints(t *testing.T) {
	need(t)
	data := trainData(t)
	out := filepath.Join(t.TempDir(), "run")
	mustRun(t, nil, trainArgs(data, out, 4)...)
	ck := latestCheckpoint(t, out)
	entries, err := os.ReadDir(ck)
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		p := filepath.Join(ck, e.Name())
		orig, err := os.ReadFile(p)
		if err != nil || len(orig) == 0 {
			t.Fatalf("%s: %v (%d bytes)", p, err, len(orig))
		}
		flipped := append([]byte(nil), orig...)
		flipped[len(flipped)/2] ^= 0x10
		os.WriteFile(p, flipped, 0o644)
		res, d, _, err := runBin(time.Minute, nil, resumeArgs(out, "--steps", "6")...)
		os.WriteFile(p, orig, 0o644)
		line := firstErrLine(res)
		t.Logf("flipped a bit of %s (%d bytes) at %d: exit %d after %v: %s", e.Name(), len(orig), len(orig)/2, exitCode(err), d.Round(time.Millisecond), line)
		if err == nil || !strings.Contains(res, e.Name()) || crashText(res) != "" {
			t.Errorf("resume with a flipped bit in %s: exit %v, want a refusal naming the file\n%s", e.Name(), err, tail(res))
			continue
		}
		refused++
	}

	latest := filepath.Join(out, "latest")
	good, _ := os.ReadFile(latest)
	os.WriteFile(latest, []byte("../../../../etc\n"), 0o644)
	res, _, _, err := runBin(time.Minute, nil, resumeArgs(out, "--steps", "6")...)
	os.WriteFile(latest, good, 0o644)
	t.Logf("latest = ../../../../etc: exit %d: %s", exitCode(err), firstErrLine(res))
	if err == nil || !strings.Contains(res, "inside the run directory") {
		t.Errorf("latest outside the run: exit %v\n%s", err, tail(res))
	}

	res = mustRun(t, nil, resumeArgs(out, "--steps", "6")...)
	t.Logf("intact checkpoint resumed: %s", grepLine(res, "trained"))
	if !strings.Contains(res, "trained 6 steps") {
		t.Errorf("resume of the intact checkpoint:\n%s", tail(res))
	}
	summary(t, "checkpoints: %d of %d files with a flipped bit refused naming the file; latest outside the run refused: %v; intact resume ok",
		refused, len(entries), err != nil)
}

func TestChaosNaN(t *testing.T) {
	need(t)
	data := trainData(t)

	// One NaN at step 3: skipped, logged by step, the run goes on to its end.
	out := filepath.Join(t.TempDir(), "run")
	res := mustRun(t, []string{"LLMCLOUD_TRAIN_INJECT_NAN=3"}, trainArgs(data, out, 6, "--max-bad-steps", "2")...)
	t.Logf("NaN at step 3 of 6: %s / %s", grepLine(res, "step 3"), grepLine(res, "trained"))
	if !strings.Contains(res, "step 3 skipped") || !strings.Contains(res, "trained 6 steps") {
		t.Errorf("one NaN at step 3:\n%s", tail(res))
	}
	logRaw, _ := os.ReadFile(filepath.Join(out, "log.jsonl"))
	if !strings.Contains(string(logRaw), `"skipped"`) {
		t.Errorf("log.jsonl records no skipped step:\n%s", logRaw)
	}

	// NaN from step 3 on with --max-bad-steps 2: stops at step 4 with the last good state.
	out = filepath.Join(t.TempDir(), "run")
	res, _, _, err := runBin(2*time.Minute, []string{"LLMCLOUD_TRAIN_INJECT_NAN=3-9"}, trainArgs(data, out, 8, "--max-bad-steps", "2")...)
	t.Logf("NaN at steps 3-9 of 8, --max-bad-steps 2: exit %d: %s / %s", exitCode(err), grepLine(res, "stopped"), grepLine(res, "checkpoint "))
	if err == nil || !strings.Contains(res, "step 3 skipped") || !strings.Contains(res, "checkpoint ") || crashText(res) != "" {
		t.Fatalf("a run of NaN steps: exit %v, want a stop with a checkpoint\n%s", err, tail(res))
	}
	res = mustRun(t, nil, resumeArgs(out)...)
	t.Logf("resumed without NaN: %s", grepLine(res, "trained"))
	if !strings.Contains(res, "trained 8 steps") {
		t.Errorf("resume after the NaN stop:\n%s", tail(res))
	}
	summary(t, "nan: a NaN at step 3 was skipped and logged, the run finished; NaN from step 3 on stopped the run with a checkpoint that resumed to step 8")
}

// grepLine is the first line of s containing sub.
func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
