package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

// childServerEnv makes the test binary a scripted server (TestMain): the overhead measurement
// runs the server in its own process, so the server's garbage collector, goroutines and HTTP
// stack do not share the client's Go runtime.
const childServerEnv = "LLMCLOUD_BENCH_CHILD_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(childServerEnv) != "" {
		os.Exit(serveChild())
	}
	os.Exit(m.Run())
}

// serveChild answers one-token scripted requests on a loopback port it prints on stdout, with
// timings recorded, until its standard input closes.
func serveChild() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h := benchtest.Handler(func(int64, *http.Request) benchtest.Script { return benchtest.Script{Tokens: 1} }, true)
	go http.Serve(ln, h)
	fmt.Println("http://" + ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	return 0
}

// startChildServer starts the test binary as a scripted server and returns its base URL; the
// server stops when the test ends.
func startChildServer(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("child server: %v", err)
	}
	return strings.TrimSpace(line)
}
