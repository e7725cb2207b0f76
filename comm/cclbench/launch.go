// Launch starts n local ranks of a command as child processes with torchrun's environment
// (MASTER_ADDR=127.0.0.1, a free MASTER_PORT, WORLD_SIZE, RANK, LOCAL_RANK), passes rank 0's
// stdout through, prefixes every rank's stderr, and waits for all of them. When one rank fails
// the others get grace to report it themselves, then are killed.
package cclbench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/llmcloud/llmcloud/internal/proc"
)

// Launch runs exe with args as n ranks. grace bounds how long the others may take to exit
// after the first rank failed.
func Launch(exe string, args []string, n int, stdout, stderr io.Writer, grace time.Duration) error {
	if n < 1 {
		return fmt.Errorf("--nproc must be >= 1, got %d", n)
	}
	port, err := proc.FreePort("127.0.0.1")
	if err != nil {
		return err
	}
	var errMu sync.Mutex // serialises writes to stderr
	cmds := make([]*exec.Cmd, n)
	pipes := make([]chan struct{}, n) // closed when rank r's stderr is read to the end
	for r := range n {
		cmd := exec.Command(exe, args...)
		cmd.Env = append(os.Environ(), "MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port),
			"WORLD_SIZE="+strconv.Itoa(n), "RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r))
		if r == 0 {
			cmd.Stdout = stdout
		}
		pr, err := cmd.StderrPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			for _, c := range cmds[:r] {
				c.Process.Kill()
				c.Wait()
			}
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		cmds[r] = cmd
		pipes[r] = make(chan struct{})
		go func() {
			defer close(pipes[r])
			sc := bufio.NewScanner(pr)
			for sc.Scan() {
				errMu.Lock()
				fmt.Fprintf(stderr, "[rank %d] %s\n", r, sc.Text())
				errMu.Unlock()
			}
		}()
	}
	type result struct {
		rank int
		err  error
	}
	done := make(chan result, n)
	for r, c := range cmds {
		go func() {
			<-pipes[r] // Wait closes the pipe; read it to the end first
			done <- result{r, c.Wait()}
		}()
	}
	var first error
	var deadline <-chan time.Time
	for left := n; left > 0; {
		select {
		case res := <-done:
			left--
			if res.err != nil && first == nil {
				first = fmt.Errorf("rank %d: %w", res.rank, res.err)
				deadline = time.After(grace)
			}
		case <-deadline:
			for _, c := range cmds {
				c.Process.Kill() // already-exited ranks ignore this
			}
			deadline = nil
		}
	}
	return first
}
