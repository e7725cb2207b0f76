// The test harness: the test binary re-executes itself as the ranks of a job (real processes,
// real sockets, real /dev/shm), each running one named scenario from scenarios_test.go with
// torchrun's environment variables set.
package comm

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	iproc "github.com/llmcloud/llmcloud/internal/proc"
)

const childEnv = "LLMCLOUD_COMM_TEST_SCENARIO"

func TestMain(m *testing.M) {
	if sc := os.Getenv(childEnv); sc != "" {
		os.Exit(runScenario(sc))
	}
	os.Exit(m.Run())
}

func freePort(t testing.TB) int {
	port, err := iproc.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// job is n running ranks of one scenario.
type job struct {
	cmds []*exec.Cmd
	mu   sync.Mutex
	out  []*bytes.Buffer
	seen []chan string // lines each rank prints, for tests that react to progress
}

func startJob(t *testing.T, n int, scenario string, extraEnv ...string) *job {
	t.Helper()
	port := freePort(t)
	j := &job{}
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+scenario, "MASTER_ADDR=127.0.0.1",
			"MASTER_PORT="+strconv.Itoa(port), "WORLD_SIZE="+strconv.Itoa(n), "RANK="+strconv.Itoa(r),
			"LOCAL_RANK="+strconv.Itoa(r))
		cmd.Env = append(cmd.Env, extraEnv...)
		pr, pw, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = pw, pw
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		buf := &bytes.Buffer{}
		lines := make(chan string, 1024)
		j.cmds, j.out, j.seen = append(j.cmds, cmd), append(j.out, buf), append(j.seen, lines)
		go func() {
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				j.mu.Lock()
				buf.WriteString(sc.Text() + "\n")
				j.mu.Unlock()
				select {
				case lines <- sc.Text():
				default:
				}
			}
			close(lines)
			pr.Close()
		}()
	}
	t.Cleanup(func() {
		for _, c := range j.cmds {
			if c.ProcessState == nil {
				c.Process.Kill()
				c.Wait()
			}
		}
	})
	return j
}

// wait waits for every rank (up to limit) and returns their errors (nil for exit 0).
func (j *job) wait(t *testing.T, limit time.Duration) []error {
	t.Helper()
	errs := make([]error, len(j.cmds))
	done := make(chan int, len(j.cmds))
	for i, c := range j.cmds {
		go func() { errs[i] = c.Wait(); done <- i }()
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for range j.cmds {
		select {
		case <-done:
		case <-timer.C:
			t.Fatalf("ranks still running after %v:\n%s", limit, j.output())
		}
	}
	return errs
}

func (j *job) output() string {
	time.Sleep(50 * time.Millisecond) // let the readers drain the pipes
	j.mu.Lock()
	defer j.mu.Unlock()
	var b strings.Builder
	for r, o := range j.out {
		fmt.Fprintf(&b, "--- rank %d ---\n%s", r, o.String())
	}
	return b.String()
}

func (j *job) rankOutput(r int) string {
	time.Sleep(50 * time.Millisecond)
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.out[r].String()
}

// runOK runs a scenario on n ranks and fails the test unless every rank exits 0.
func runOK(t *testing.T, n int, scenario string, env ...string) {
	t.Helper()
	j := startJob(t, n, scenario, env...)
	errs := j.wait(t, 3*time.Minute)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v\n%s", r, err, j.output())
		}
	}
}
