package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSlurmJob runs deploy/train/train.sbatch under a real Slurm (LLMCLOUD_SLURM=1, sbatch on
// PATH, a partition with one node of at least 2 CPUs): two tasks train 20 steps as dp2, then a
// second submission resumes from the first's checkpoint to 30 steps (--resume auto).
func TestSlurmJob(t *testing.T) {
	if os.Getenv("LLMCLOUD_SLURM") != "1" {
		t.Skip("set LLMCLOUD_SLURM=1 with a running Slurm to submit the sbatch script")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Fatal("LLMCLOUD_SLURM=1 but no sbatch on PATH")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "llmcloud")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/llmcloud").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var text strings.Builder
	for i := range 2000 {
		text.WriteString([]string{"the ferry ", "left the harbour ", "at six ", "and the gulls ", "followed it. "}[i%5])
		if i%40 == 39 {
			text.WriteString("\n\n")
		}
	}
	txt := filepath.Join(dir, "text.txt")
	os.WriteFile(txt, []byte(text.String()), 0o644)
	for _, args := range [][]string{
		{"tokenizer", "train", "--vocab-size", "280", "--input", txt, "-o", filepath.Join(dir, "tok")},
		{"data", "prepare", "--tokenizer", filepath.Join(dir, "tok"), "--input", txt, "-o", filepath.Join(dir, "data")},
	} {
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			t.Fatalf("llmcloud %v: %v\n%s", args, err, out)
		}
	}
	submit := func(steps string) string {
		out := filepath.Join(dir, "job-"+steps+".out")
		cmd := exec.Command("sbatch", "--wait", "--nodes", "1", "--ntasks-per-node", "2", "--cpus-per-task", "1",
			"--time", "10", "--output", out, filepath.Join("train", "train.sbatch"),
			"--dim", "32", "--layers", "2", "--heads", "4", "--batch", "4", "--seq", "32", "--steps", steps,
			"--eval-every", "0", "--log-every", "10")
		cmd.Env = append(os.Environ(), "DATA="+filepath.Join(dir, "data"), "RUN="+filepath.Join(dir, "run"),
			"LLMCLOUD="+bin, "TIMEOUT=30")
		msg, err := cmd.CombinedOutput()
		log, _ := os.ReadFile(out)
		if err != nil {
			t.Fatalf("sbatch: %v\n%s\n%s", err, msg, log)
		}
		return string(log)
	}
	log := submit("20")
	for _, want := range []string{`0: time=`, `grid="dp2 x pp1 x tp1"`, `1: time=`, "0: trained 20 steps"} {
		if !strings.Contains(log, want) {
			t.Errorf("first job's output lacks %q:\n%s", want, log)
		}
	}
	log = submit("30")
	for _, want := range []string{"resumed from " + filepath.Join(dir, "run", "ckpt", "step-00000020") + " at step 20", "0: trained 30 steps"} {
		if !strings.Contains(log, want) {
			t.Errorf("second job's output lacks %q:\n%s", want, log)
		}
	}
}
