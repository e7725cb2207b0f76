// Absurd model files (internal/absurd: huge or zero context lengths, layers, heads, dimensions,
// vocabularies, sizes that disagree with the tensors) through the real binary: `inspect` and
// `serve` must each give a clear error (or, for a huge context, serve with a capped maximum
// model length) within 1 s and 100 MB of peak RSS.
package chaos

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/absurd"
)

const (
	absurdWall = time.Second
	absurdRSS  = 100 << 10 // KiB
)

var readyRE = regexp.MustCompile(`msg=ready .*max_model_len=(\d+)`)

func TestChaosAbsurdFiles(t *testing.T) {
	need(t)
	cases, err := absurd.Cases(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var worstWall time.Duration
	var worstRSS int64
	failed := 0
	for _, c := range cases {
		out, d, rss, err := runBin(30*time.Second, nil, "inspect", c.Path)
		line := firstErrLine(out)
		t.Logf("inspect %-34s exit=%v wall=%v rss=%dMB: %s", c.Name, exitCode(err), d.Round(time.Millisecond), rss>>10, line)
		worstWall, worstRSS = max(worstWall, d), max(worstRSS, rss)
		bad := d > absurdWall || rss > absurdRSS || crashText(out) != ""
		if c.Want != "" {
			bad = bad || err == nil || !strings.Contains(out, c.Want)
		}
		if bad {
			failed++
			t.Errorf("inspect %s: exit %v, wall %v, RSS %d KiB, want a clear error mentioning %q within %v and %d KiB\n%s",
				c.Name, err, d, rss, c.Want, absurdWall, absurdRSS, tail(out))
		}

		out, d, rss, maxLen, err := serveAbsurd(c.Path)
		t.Logf("serve   %-34s exit=%v wall=%v rss=%dMB max_model_len=%s: %s", c.Name, exitCode(err), d.Round(time.Millisecond), rss>>10, maxLen, firstErrLine(out))
		worstRSS = max(worstRSS, rss)
		bad = rss > absurdRSS || crashText(out) != ""
		if c.Want != "" {
			bad = bad || maxLen != "" || !strings.Contains(out, c.Want) || d > absurdWall
		} else {
			bad = bad || maxLen == ""
		}
		if bad {
			failed++
			t.Errorf("serve %s: exit %v, wall %v, RSS %d KiB, max_model_len %q, want %q\n%s", c.Name, err, d, rss, maxLen, c.Want, tail(out))
		}
	}
	summary(t, "absurd: %d files through inspect and serve, %d failed; slowest inspect %v, peak RSS %d MB",
		len(cases), failed, worstWall.Round(time.Millisecond), worstRSS>>10)
}

// serveAbsurd runs `serve path --port 0` until it exits or is ready (then stops it with
// SIGTERM); maxLen is the max_model_len it became ready with, "" when it did not. d is the time
// to the exit or to ready.
func serveAbsurd(path string) (out string, d time.Duration, rss int64, maxLen string, err error) {
	cmd := exec.Command(bin, "serve", path, "--host", "127.0.0.1", "--port", "0")
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return "", 0, 0, "", err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := time.After(30 * time.Second)
wait:
	for {
		select {
		case err = <-done:
			d = time.Since(t0)
			break wait
		case <-timeout:
			cmd.Process.Kill()
			err = <-done
			d = time.Since(t0)
			break wait
		case <-time.After(10 * time.Millisecond):
			if m := readyRE.FindStringSubmatch(logs.String()); m != nil {
				d, maxLen = time.Since(t0), m[1]
				cmd.Process.Signal(syscall.SIGTERM)
				err = <-done
				break wait
			}
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss
	}
	return logs.String(), d, rss, maxLen, err
}

// firstErrLine is the line of out that says "error", or its last line.
func firstErrLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l), "error") {
			return l
		}
	}
	return lines[len(lines)-1]
}

func exitCode(err error) int {
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
