package regress

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// Revision is the VCS revision a Go binary was built from (its build info's vcs.revision),
// with "+dirty" when the tree had uncommitted changes; "" when the binary records none.
func Revision(bin string) (string, error) {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+dirty"
	}
	return rev, nil
}

// Build is a binary built from one commit of a repository.
type Build struct {
	Repo   string // the repository's top directory
	Rev    string // as given ("main", "HEAD~1")
	Commit string // the full hash Rev resolved to
}

// BuildCommit builds the Go package pkg ("./cmd/llmcloud") of the git repository holding dir as
// it is at rev, into out: it checks rev out in a temporary `git worktree` (detached), runs
// `go build -o out pkg` there and removes the worktree. Progress lines go to log (may be nil).
//
// The worktree is made at one fixed path per user (os.TempDir()/llmcloud-regress-base, held by
// a lock file while in use; a second concurrent build gets a fresh directory): the go build
// cache keys a package on its directory, so the same path lets the next build of a nearby
// commit reuse every package that did not change.
func BuildCommit(ctx context.Context, dir, rev, pkg, out string, log io.Writer) (*Build, error) {
	if log == nil {
		log = io.Discard
	}
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("building %s: %s not found in PATH (--base-commit needs git and the go toolchain)", rev, tool)
		}
	}
	top, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, fmt.Errorf("building %s: %s is not in a git repository: %v", rev, dir, err)
	}
	commit, err := git(ctx, top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev+"^{commit}")
	if err != nil {
		msg := fmt.Sprintf("building %s: no commit %q in %s", rev, rev, top)
		if sh, _ := git(ctx, top, "rev-parse", "--is-shallow-repository"); sh == "true" {
			msg += " (a shallow clone: `git fetch --unshallow` or a deeper clone brings the history)"
		}
		return nil, errors.New(msg)
	}
	b := &Build{Repo: top, Rev: rev, Commit: commit}

	wt, unlock, err := worktreeDir()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, err := git(ctx, top, "worktree", "add", "--detach", "--force", wt, commit); err != nil {
		return nil, fmt.Errorf("building %s: git worktree add: %v", rev, err)
	}
	defer func() {
		// Remove the checkout and git's record of it whatever happened. (Not `git worktree
		// prune`: that would touch the records of other worktrees of the repository.)
		git(context.Background(), top, "worktree", "remove", "--force", wt)
		os.RemoveAll(wt)
	}()
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "building %s (%s = %.12s) in %s\n", pkg, rev, commit, wt)
	var errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "build", "-o", abs, pkg)
	cmd.Dir, cmd.Stdout, cmd.Stderr = wt, &errb, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("building %s at %s (%.12s): go build %s: %v\n%s", pkg, rev, commit, pkg, err, lastLines(errb.String(), 20))
	}
	return b, nil
}

// worktreeDir returns a directory path for the temporary worktree (not yet existing) and the
// function that releases it.
func worktreeDir() (string, func(), error) {
	fixed := filepath.Join(os.TempDir(), fmt.Sprintf("llmcloud-regress-base-%d", os.Getuid()))
	if f, err := os.OpenFile(fixed+".lock", os.O_CREATE|os.O_RDWR, 0o600); err == nil {
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(fixed) // left by a build that was killed
			return fixed, func() { f.Close() }, nil
		}
		f.Close()
	}
	tmp, err := os.MkdirTemp("", "llmcloud-regress-base-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(tmp, "src"), func() { os.RemoveAll(tmp) }, nil
}

// git runs git in dir and returns its trimmed stdout, or an error with its stderr.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	if err := cmd.Run(); err != nil {
		if s := strings.TrimSpace(errb.String()); s != "" {
			return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), s)
		}
		return "", fmt.Errorf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(out.String()), nil
}
