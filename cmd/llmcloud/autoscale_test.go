package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/autoscale/kube"
	"github.com/llmcloud/llmcloud/autoscale/kube/kubetest"
	"github.com/llmcloud/llmcloud/bench"
	"github.com/llmcloud/llmcloud/internal/fixture"
	"github.com/llmcloud/llmcloud/internal/proc"
)

// The autoscale command scales a Deployment (a Kubernetes API server over HTTP, kubetest, here) on the load a real
// router reports for a real replica: `up` with one replica provides both.
func TestAutoscaleCommandScalesDeployment(t *testing.T) {
	model := fixture.Path(t, "models", "stories260K", "stories260K.bin")
	url, _ := startUp(t, "--replicas", "1", "--model", model, "--health-interval", "200ms",
		"--", "--max-model-len", "512", "--threads", "1", "--max-num-seqs", "1", "--disable-log-requests")
	waitFleet(t, url, "1 ready replica", 60*time.Second, func(v fleetView) bool { return readyCount(v) == 1 })

	cluster := kubetest.New("llm", "replicas", 1)
	defer cluster.Close()
	scaler, err := kube.New(cluster.Client(), "llm", "replicas")
	if err != nil {
		t.Fatal(err)
	}
	logs := &proc.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	addrc := make(chan string, 1)
	go func() {
		done <- autoscaleMain(ctx, []string{"--router", url, "--autoscale", "1:3", "--target-waiting", "2",
			"--autoscale-interval", "100ms", "--host", "127.0.0.1", "--port", "0"}, logs, scaler, func(a string) { addrc <- a })
	}()
	metricsURL := "http://" + <-addrc + "/metrics"

	reqs, err := bench.RandomRequests(bench.Words{}, bench.RandomOptions{InputLen: 16, OutputLen: 200}, 40, 3)
	if err != nil {
		t.Fatal(err)
	}
	client := &bench.Client{URL: url + "/v1/completions", Model: "stories260K", IgnoreEOS: true, HTTP: bench.NewHTTPClient(time.Minute)}
	burst, stopBurst := context.WithCancel(context.Background())
	go bench.Run(burst, bench.Config{Client: client, Requests: reqs, RequestRate: bench.Rate(1e9)}, &bench.Result{})
	deadline := time.Now().Add(30 * time.Second)
	for cluster.Replicas("llm", "replicas") != 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	stopBurst()
	if got := cluster.Replicas("llm", "replicas"); got != 3 {
		t.Fatalf("deployment at %d replicas, want 3; log:\n%s", got, logs)
	}
	if !regexp.MustCompile(`msg=autoscale action=up before=1 after=3 desired=3 metric=waiting sum=\d+ target=2 values="http://127\.0\.0\.1:\d+=\d+"`).MatchString(logs.String()) {
		t.Errorf("no logged decision:\n%s", logs)
	}
	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `llmcloud_autoscaler_decisions_total{action="up"} 1`) {
		t.Errorf("metrics:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestAutoscaleCommandFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--deployment", "d", "--autoscale", "1:2"},
		{"--router", "http://r", "--autoscale", "1:2"},
		{"--router", "http://r", "--deployment", "d"},
		{"--router", "http://r", "--deployment", "d", "--autoscale", "2:1"},
		{"--router", "http://r", "--deployment", "d", "--autoscale", "1:2", "extra"},
	} {
		err := autoscaleMain(context.Background(), args, io.Discard, nil, nil)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: got %v, want a usage error", args, err)
		}
	}
}
