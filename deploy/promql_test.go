package deploy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPromQLParses: every expression of the dashboard, and the KEDA trigger's query, is valid
// PromQL to a real Prometheus (an instant query against an empty one answers "success" or a
// bad_data parse error). Runs when a prometheus binary is found ($LLMCLOUD_PROMETHEUS or on
// PATH; Debian's package provides one).
func TestPromQLParses(t *testing.T) {
	bin := os.Getenv("LLMCLOUD_PROMETHEUS")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("prometheus"); err != nil {
			t.Skip("no prometheus binary (apt-get install prometheus, or set LLMCLOUD_PROMETHEUS)")
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 1m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	base := "http://" + addr
	if !waitReady(base+"/-/ready", 30*time.Second) {
		t.Skipf("prometheus not ready after 30 s (a loaded machine?):\n%s", logs.String())
	}

	var queries []string
	for _, p := range readDashboard(t).Panels {
		for _, tg := range p.Targets {
			q := strings.NewReplacer("$__rate_interval", "1m", "$instance", ".*").Replace(tg.Expr)
			queries = append(queries, q)
		}
	}
	keda, err := os.ReadFile("helm/llmcloud/templates/keda-scaledobject.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(keda), "\n") {
		if q, ok := strings.CutPrefix(strings.TrimSpace(line), "query: "); ok {
			// The template's own values, as the default install renders them.
			queries = append(queries, strings.NewReplacer(`{{ .Release.Namespace }}`, "llmcloud",
				`{{ include "llmcloud.replica" . }}`, "llmcloud-replica").Replace(q))
		}
	}
	if err := instantQuery(base, "sum(rate(vllm:generation_tokens_total[1m])"); err == nil {
		t.Fatal("a query missing a parenthesis was accepted: the check checks nothing")
	}
	for _, q := range queries {
		if err := instantQuery(base, q); err != nil {
			t.Errorf("%s: %v", q, err)
		}
	}
	t.Logf("%d queries accepted by %s", len(queries), bin)
}

func waitReady(u string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(u); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// instantQuery runs q and returns Prometheus's error, if any.
func instantQuery(base, q string) error {
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return fmt.Errorf("HTTP %d: %v", resp.StatusCode, err)
	}
	if r.Status != "success" {
		return fmt.Errorf("%s: %s", r.ErrorType, r.Error)
	}
	return nil
}
