package kubeapi

import (
	"context"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/kubeapi/kubeapitest"
)

const deployments = "/apis/apps/v1/namespaces/ns/deployments"

type deployment struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
}

func startTLS(t *testing.T, token string) (*kubeapitest.Server, string) {
	t.Helper()
	api := kubeapitest.NewTLS()
	t.Cleanup(api.Close)
	api.Token = token
	api.Put(deployments, map[string]any{"metadata": map[string]any{"name": "d", "namespace": "ns"}})
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	return api, string(ca)
}

func get(t *testing.T, c *Client) error {
	t.Helper()
	var d deployment
	err := c.Get(context.Background(), deployments+"/d", nil, &d)
	if err == nil && d.Metadata.Name != "d" {
		t.Fatalf("got %+v", d)
	}
	return err
}

// In a pod: the CA and the token from the service account directory, the token re-read
// after a minute (the kubelet rotates it).
func TestInCluster(t *testing.T) {
	api, ca := startTLS(t, "first")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ca.crt"), []byte(ca), 0o600)
	os.WriteFile(filepath.Join(dir, "token"), []byte("first\n"), 0o600)
	c, err := inCluster(dir, api.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	api.Token = "second"
	os.WriteFile(filepath.Join(dir, "token"), []byte("second"), 0o600)
	if err := get(t, c); !hasCode(err, 401) {
		t.Fatalf("before the re-read: %v", err)
	}
	c.token.read = time.Now().Add(-2 * time.Minute)
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := InCluster(); err == nil {
		t.Error("InCluster outside a cluster")
	}
}

func writeKubeconfig(t *testing.T, server, ca, user string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config")
	kc := `apiVersion: v1
kind: Config
current-context: test
contexts:
- name: other
  context: {cluster: nowhere, user: nobody}
- name: test
  context: {cluster: c, user: u, namespace: ns}
clusters:
- name: c
  cluster:
    server: ` + server + `
    certificate-authority-data: ` + base64.StdEncoding.EncodeToString([]byte(ca)) + `
users:
- name: u
  user:
` + user
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestKubeconfigToken(t *testing.T) {
	api, ca := startTLS(t, "secret")
	c, err := FromKubeconfig(writeKubeconfig(t, api.URL, ca, "    token: secret\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
	// A wrong token is the API's 401, a server certificate not signed by the CA a TLS error.
	c, _ = FromKubeconfig(writeKubeconfig(t, api.URL, ca, "    token: wrong\n"))
	if err := get(t, c); !hasCode(err, 401) {
		t.Errorf("wrong token: %v", err)
	}
	c, _ = FromKubeconfig(writeKubeconfig(t, api.URL, "", "    token: secret\n")) // the system's roots
	if err := get(t, c); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("without the CA: %v", err)
	}
	// tokenFile, relative to the kubeconfig's directory.
	p := writeKubeconfig(t, api.URL, ca, "    tokenFile: tok\n")
	os.WriteFile(filepath.Join(filepath.Dir(p), "tok"), []byte("secret\n"), 0o600)
	if c, err = FromKubeconfig(p); err != nil {
		t.Fatal(err)
	}
	if err := get(t, c); err != nil {
		t.Fatal(err)
	}
}

// An exec credential plugin (as EKS, GKE and AKS kubeconfigs use) is run with
// KUBERNETES_EXEC_INFO and its ExecCredential's token is used until it expires.
func TestKubeconfigExec(t *testing.T) {
	api, ca := startTLS(t, "from-plugin")
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	plugin := filepath.Join(dir, "plugin.sh")
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	script := `#!/bin/sh
echo run >> ` + count + `
case "$KUBERNETES_EXEC_INFO" in *'"interactive":false'*) ;; *) echo "bad exec info: $KUBERNETES_EXEC_INFO" >&2; exit 1;; esac
[ "$EXTRA" = yes ] || exit 2
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"'$1'","expirationTimestamp":"` + exp + `"}}'
`
	if err := os.WriteFile(plugin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	user := "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: " + plugin +
		"\n      args: [from-plugin]\n      env: [{name: EXTRA, value: \"yes\"}]\n      interactiveMode: Never\n"
	c, err := FromKubeconfig(writeKubeconfig(t, api.URL, ca, user))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := get(t, c); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("plugin ran %d times, want once (the token is kept until it expires)", strings.Count(string(b), "run"))
	}
	// A 401 runs the plugin again once (the token may have been revoked).
	api.Token = "rotated"
	if err := get(t, c); !hasCode(err, 401) {
		t.Errorf("revoked token: %v", err)
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 2 {
		t.Errorf("plugin ran %d times after a 401, want twice", strings.Count(string(b), "run"))
	}
}

func TestKubeconfigRefused(t *testing.T) {
	for name, user := range map[string]string{
		"auth-provider":          "    auth-provider: {name: oidc}\n",
		"bad cert":               "    client-certificate-data: " + base64.StdEncoding.EncodeToString([]byte("x")) + "\n    client-key-data: eA==\n",
		"exec without a command": "    exec: {apiVersion: client.authentication.k8s.io/v1}\n",
	} {
		if _, err := FromKubeconfig(writeKubeconfig(t, "https://127.0.0.1:1", "x", user)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := FromKubeconfig(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing file accepted")
	}
}
