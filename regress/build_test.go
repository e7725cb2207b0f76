package regress

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitRepo makes a git repository in a temporary directory holding a tiny Go module whose
// ./cmd/hello prints "v1" in the first commit and "v2" in the second.
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run("init", "-q", "-b", "main")
	write("go.mod", "module example.com/hello\n\ngo 1.22\n")
	write("cmd/hello/main.go", "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"v1\\n\") }\n")
	run("add", ".")
	run("commit", "-q", "-m", "v1")
	write("cmd/hello/main.go", "package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"v2\\n\") }\n")
	run("commit", "-q", "-am", "v2")
	return dir
}

// TestBuildCommit builds HEAD~1 of a real repository from a subdirectory and runs the result;
// the worktree is gone afterwards and the revision is in the binary's build info.
func TestBuildCommit(t *testing.T) {
	repo := gitRepo(t)
	out := filepath.Join(t.TempDir(), "hello")
	var log strings.Builder
	b, err := BuildCommit(context.Background(), filepath.Join(repo, "cmd"), "HEAD~1", "./cmd/hello", out, &log)
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(out).Output()
	if err != nil || string(got) != "v1\n" {
		t.Fatalf("built binary printed %q (%v), want the first commit's v1", got, err)
	}
	want, _ := git(context.Background(), repo, "rev-parse", "HEAD~1")
	if b.Commit != want || b.Rev != "HEAD~1" {
		t.Errorf("build %+v, want commit %s", b, want)
	}
	// The commit comes from Build (go build may stamp none: -buildvcs=false in GOFLAGS);
	// Revision reads the stamp of a binary built with it.
	if rev, err := Revision(out); err != nil || (rev != "" && rev != want) {
		t.Errorf("Revision(worktree build) = %q, %v; want %s or none", rev, err, want)
	}
	direct := filepath.Join(t.TempDir(), "direct")
	cmd := exec.Command("go", "build", "-buildvcs=true", "-o", direct, "./cmd/hello") // GOFLAGS may turn stamping off
	cmd.Dir = repo
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, o)
	}
	head, _ := git(context.Background(), repo, "rev-parse", "HEAD")
	if rev, err := Revision(direct); err != nil || rev != head {
		t.Errorf("Revision = %q, %v; want %s", rev, err, head)
	}
	if list, _ := git(context.Background(), repo, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left behind:\n%s", list)
	}
	if !strings.Contains(log.String(), "building ./cmd/hello (HEAD~1") {
		t.Errorf("progress %q", log.String())
	}
}

// TestBuildCommitErrors checks the messages for a missing revision, a shallow clone, a
// directory outside any repository and a commit that does not compile.
func TestBuildCommitErrors(t *testing.T) {
	repo := gitRepo(t)
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "bin")
	if _, err := BuildCommit(ctx, repo, "nosuchbranch", "./cmd/hello", out, nil); err == nil || !strings.Contains(err.Error(), `no commit "nosuchbranch"`) {
		t.Errorf("missing rev: %v", err)
	}
	shallow := filepath.Join(t.TempDir(), "shallow")
	if o, err := exec.Command("git", "clone", "-q", "--depth", "1", "file://"+repo, shallow).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, o)
	}
	if _, err := BuildCommit(ctx, shallow, "HEAD~1", "./cmd/hello", out, nil); err == nil || !strings.Contains(err.Error(), "shallow clone") {
		t.Errorf("shallow clone: %v", err)
	}
	if _, err := BuildCommit(ctx, t.TempDir(), "HEAD", "./cmd/hello", out, nil); err == nil || !strings.Contains(err.Error(), "not in a git repository") {
		t.Errorf("no repository: %v", err)
	}
	if _, err := BuildCommit(ctx, repo, "HEAD", "./cmd/nothere", out, nil); err == nil || !strings.Contains(err.Error(), "go build ./cmd/nothere") {
		t.Errorf("bad package: %v", err)
	}
	if list, _ := git(ctx, repo, "worktree", "list"); strings.Count(list, "\n") != 0 {
		t.Errorf("worktrees left behind after a failed build:\n%s", list)
	}
}
