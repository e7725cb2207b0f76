// Command scripted-server serves the benchtest scripted OpenAI-compatible API on a loopback
// address, for trying `llmcloud bench serve` without a model:
//
//	go run ./bench/cmd/scripted-server --addr 127.0.0.1:8199 --ttft 50ms --itl 10ms
package main

import (
	"flag"
	"log"
	"net/http"
	"time"

	"github.com/llmcloud/llmcloud/bench/benchtest"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8199", "listen address")
	ttft := flag.Duration("ttft", 50*time.Millisecond, "time to first token")
	itl := flag.Duration("itl", 10*time.Millisecond, "gap between tokens")
	tokens := flag.Int("tokens", 0, "tokens per response (0: the request's max_tokens)")
	failEvery := flag.Int("fail-every", 0, "answer every n-th request with HTTP 500 (0: never)")
	record := flag.Bool("record", false, "record per-request timings (X-Request-Id) and serve them at "+benchtest.TimingsPath)
	flag.Parse()
	s := benchtest.Handler(func(n int64, _ *http.Request) benchtest.Script {
		sc := benchtest.Script{TTFT: *ttft, ITL: *itl, Tokens: *tokens}
		if *failEvery > 0 && (n+1)%int64(*failEvery) == 0 {
			sc.Status = http.StatusInternalServerError
		}
		return sc
	}, *record)
	log.Printf("scripted OpenAI-compatible server on http://%s (ttft %v, itl %v)", *addr, *ttft, *itl)
	log.Fatal(http.ListenAndServe(*addr, s))
}
