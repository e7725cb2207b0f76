package kubeapi

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// ServiceAccountDir holds a pod's service-account token, CA bundle and namespace.
const ServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// InCluster is a Client with the pod's service account: the API server at
// $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, its CA from ca.crt, and the token file
// (re-read every minute, as the kubelet rotates it).
func InCluster() (*Client, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("kubernetes API: not in a cluster (KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are unset)")
	}
	return inCluster(ServiceAccountDir, "https://"+net.JoinHostPort(host, port))
}

func inCluster(dir, server string) (*Client, error) {
	tokenFile := filepath.Join(dir, "token")
	if _, err := os.Stat(tokenFile); err != nil {
		return nil, fmt.Errorf("kubernetes API: service account token: %w", err)
	}
	pool, err := caPool(filepath.Join(dir, "ca.crt"), "")
	if err != nil {
		return nil, err
	}
	return New(Config{Server: server, TLS: &tls.Config{RootCAs: pool}, TokenFile: tokenFile})
}

// PodNamespace is the namespace of the pod this runs in (from its service account), or
// "default".
func PodNamespace() string {
	b, err := os.ReadFile(filepath.Join(ServiceAccountDir, "namespace"))
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// kubeconfig is the part of a kubeconfig file that FromKubeconfig reads.
type kubeconfig struct {
	CurrentContext string `yaml:"current-context"`
	Clusters       []struct {
		Name    string `yaml:"name"`
		Cluster struct {
			Server        string `yaml:"server"`
			CA            string `yaml:"certificate-authority"`
			CAData        string `yaml:"certificate-authority-data"`
			Insecure      bool   `yaml:"insecure-skip-tls-verify"`
			TLSServerName string `yaml:"tls-server-name"`
			ProxyURL      string `yaml:"proxy-url"`
		} `yaml:"cluster"`
	} `yaml:"clusters"`
	Contexts []struct {
		Name    string `yaml:"name"`
		Context struct {
			Cluster string `yaml:"cluster"`
			User    string `yaml:"user"`
		} `yaml:"context"`
	} `yaml:"contexts"`
	Users []struct {
		Name string `yaml:"name"`
		User struct {
			Token        string      `yaml:"token"`
			TokenFile    string      `yaml:"tokenFile"`
			Cert         string      `yaml:"client-certificate"`
			CertData     string      `yaml:"client-certificate-data"`
			Key          string      `yaml:"client-key"`
			KeyData      string      `yaml:"client-key-data"`
			Username     string      `yaml:"username"`
			Password     string      `yaml:"password"`
			As           string      `yaml:"as"`
			AsGroups     []string    `yaml:"as-groups"`
			Exec         *ExecConfig `yaml:"exec"`
			AuthProvider *struct {
				Name string `yaml:"name"`
			} `yaml:"auth-provider"`
		} `yaml:"user"`
	} `yaml:"users"`
}

// FromKubeconfig is a Client for the current context of the kubeconfig file at path (one
// file; relative file names in it are relative to its directory). It takes the cluster's
// server, CA (file or data), insecure-skip-tls-verify, tls-server-name and proxy-url, and the
// user's token, tokenFile, client certificate and key (files or data), username and password,
// as/as-groups and exec credential plugin. auth-provider entries (the removed in-tree gcp,
// azure and oidc providers) are refused.
func FromKubeconfig(path string) (*Client, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	var kc kubeconfig
	if err := yaml.Unmarshal(b, &kc); err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg, err := kc.config(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return New(cfg)
}

func (kc *kubeconfig) config(dir string) (Config, error) {
	var cfg Config
	if kc.CurrentContext == "" {
		return cfg, errors.New("no current-context")
	}
	ci := -1
	for i := range kc.Contexts {
		if kc.Contexts[i].Name == kc.CurrentContext {
			ci = i
		}
	}
	if ci < 0 {
		return cfg, fmt.Errorf("context %q not found", kc.CurrentContext)
	}
	ctx := kc.Contexts[ci].Context
	found := false
	tc := &tls.Config{}
	for _, c := range kc.Clusters {
		if c.Name != ctx.Cluster {
			continue
		}
		found = true
		cl := c.Cluster
		cfg.Server = cl.Server
		if cl.CA != "" || cl.CAData != "" {
			pool, err := caPool(rel(dir, cl.CA), cl.CAData)
			if err != nil {
				return cfg, err
			}
			tc.RootCAs = pool
		}
		tc.InsecureSkipVerify = cl.Insecure
		tc.ServerName = cl.TLSServerName
		if cl.ProxyURL != "" {
			pu, err := url.Parse(cl.ProxyURL)
			if err != nil {
				return cfg, fmt.Errorf("cluster %q: proxy-url: %w", c.Name, err)
			}
			cfg.Proxy = http.ProxyURL(pu)
		}
	}
	if !found {
		return cfg, fmt.Errorf("cluster %q of context %q not found", ctx.Cluster, kc.CurrentContext)
	}
	cfg.TLS = tc
	for _, u := range kc.Users {
		if u.Name != ctx.User {
			continue
		}
		us := u.User
		if us.AuthProvider != nil {
			return cfg, fmt.Errorf("user %q: auth-provider %q is not supported (use an exec credential plugin)", u.Name, us.AuthProvider.Name)
		}
		cfg.Token, cfg.Username, cfg.Password = us.Token, us.Username, us.Password
		cfg.Impersonate, cfg.ImpersonateGroups = us.As, us.AsGroups
		if us.TokenFile != "" {
			cfg.TokenFile = rel(dir, us.TokenFile)
		}
		if us.Exec != nil {
			if us.Exec.Command == "" {
				return cfg, fmt.Errorf("user %q: exec without a command", u.Name)
			}
			e := *us.Exec
			if strings.ContainsRune(e.Command, filepath.Separator) {
				e.Command = rel(dir, e.Command) // a path, not a name to look up in $PATH
			}
			cfg.Exec = &e
		}
		if us.Cert != "" || us.CertData != "" {
			certPEM, err := fileOrData(rel(dir, us.Cert), us.CertData)
			if err != nil {
				return cfg, fmt.Errorf("user %q: client certificate: %w", u.Name, err)
			}
			keyPEM, err := fileOrData(rel(dir, us.Key), us.KeyData)
			if err != nil {
				return cfg, fmt.Errorf("user %q: client key: %w", u.Name, err)
			}
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				return cfg, fmt.Errorf("user %q: %w", u.Name, err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		return cfg, nil
	}
	if ctx.User != "" {
		return cfg, fmt.Errorf("user %q of context %q not found", ctx.User, kc.CurrentContext)
	}
	return cfg, nil
}

// rel makes a kubeconfig's relative file name relative to the kubeconfig's directory.
func rel(dir, name string) string {
	if name == "" || filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

// fileOrData is the base64 data if given, else the file's contents.
func fileOrData(file, data string) ([]byte, error) {
	if data != "" {
		return base64.StdEncoding.DecodeString(strings.TrimSpace(data))
	}
	if file == "" {
		return nil, errors.New("neither a file nor data")
	}
	return os.ReadFile(file)
}

func caPool(file, data string) (*x509.CertPool, error) {
	pem, err := fileOrData(file, data)
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("kubernetes API: CA: no PEM certificate in it")
	}
	return pool, nil
}

// ExecConfig is a kubeconfig user's exec credential plugin (client.authentication.k8s.io v1
// or v1beta1), as cloud providers' kubeconfigs use (aws eks get-token,
// gke-gcloud-auth-plugin, kubelogin).
type ExecConfig struct {
	APIVersion string   `yaml:"apiVersion"`
	Command    string   `yaml:"command"`
	Args       []string `yaml:"args"`
	Env        []struct {
		Name  string `yaml:"name"`
		Value string `yaml:"value"`
	} `yaml:"env"`
	InteractiveMode    string `yaml:"interactiveMode"`
	ProvideClusterInfo bool   `yaml:"provideClusterInfo"`
}

// tokenSource gives the bearer token: a fixed one, a file re-read every minute, or an exec
// plugin's answer kept until it expires.
type tokenSource struct {
	static string
	file   string
	exec   *ExecConfig
	server string
	tls    *tls.Config

	mu      sync.Mutex
	tok     string
	cert    *tls.Certificate
	expires time.Time // zero: no expiry (exec) / not read yet (file)
	read    time.Time
	valid   bool
}

func (t *tokenSource) get() (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	switch {
	case t.exec != nil:
		if !t.valid || (!t.expires.IsZero() && now.After(t.expires.Add(-10*time.Second))) {
			if err := t.runExec(); err != nil {
				return "", err
			}
		}
	case t.file != "":
		if !t.valid || now.Sub(t.read) > time.Minute {
			b, err := os.ReadFile(t.file)
			if err != nil {
				if t.valid {
					return t.tok, nil // keep the last one; the file may be mid-rotation
				}
				if t.static != "" {
					return t.static, nil
				}
				return "", err
			}
			t.tok, t.read, t.valid = strings.TrimSpace(string(b)), now, true
		}
	default:
		return t.static, nil
	}
	return t.tok, nil
}

func (t *tokenSource) invalidate() {
	t.mu.Lock()
	t.valid = false
	t.mu.Unlock()
}

func (t *tokenSource) clientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	if _, err := t.get(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cert == nil {
		return &tls.Certificate{}, nil // none: the server may still take the token
	}
	return t.cert, nil
}

// runExec runs the plugin as client-go does: KUBERNETES_EXEC_INFO holds an ExecCredential
// with the spec, stdout is an ExecCredential with the status, stderr goes to ours. It runs
// non-interactively (no stdin), so a plugin that must prompt fails.
func (t *tokenSource) runExec() error {
	e := t.exec
	if e.InteractiveMode == "Always" {
		return fmt.Errorf("exec plugin %s needs a terminal (interactiveMode Always)", e.Command)
	}
	apiVersion := e.APIVersion
	if apiVersion == "" {
		apiVersion = "client.authentication.k8s.io/v1"
	}
	spec := map[string]any{"interactive": false}
	if e.ProvideClusterInfo {
		cluster := map[string]any{"server": t.server}
		if t.tls != nil {
			cluster["tls-server-name"] = t.tls.ServerName
			cluster["insecure-skip-tls-verify"] = t.tls.InsecureSkipVerify
		}
		spec["cluster"] = cluster
	}
	info, _ := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "ExecCredential", "spec": spec})
	cmd := exec.Command(e.Command, e.Args...)
	cmd.Env = append(os.Environ(), "KUBERNETES_EXEC_INFO="+string(info))
	for _, kv := range e.Env {
		cmd.Env = append(cmd.Env, kv.Name+"="+kv.Value)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("exec plugin %s: %w", e.Command, err)
	}
	var cred struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Status     *struct {
			Token                 string `json:"token"`
			ExpirationTimestamp   string `json:"expirationTimestamp"`
			ClientCertificateData string `json:"clientCertificateData"`
			ClientKeyData         string `json:"clientKeyData"`
		} `json:"status"`
	}
	if err := json.Unmarshal(out.Bytes(), &cred); err != nil {
		return fmt.Errorf("exec plugin %s: its output: %w", e.Command, err)
	}
	if cred.Kind != "ExecCredential" || cred.APIVersion != apiVersion || cred.Status == nil {
		return fmt.Errorf("exec plugin %s: want an ExecCredential %s with a status, got kind %q apiVersion %q",
			e.Command, apiVersion, cred.Kind, cred.APIVersion)
	}
	st := cred.Status
	t.tok, t.cert, t.expires = st.Token, nil, time.Time{}
	if st.ClientCertificateData != "" || st.ClientKeyData != "" {
		cert, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return fmt.Errorf("exec plugin %s: client certificate: %w", e.Command, err)
		}
		t.cert = &cert
	} else if st.Token == "" {
		return fmt.Errorf("exec plugin %s: neither a token nor a client certificate", e.Command)
	}
	if st.ExpirationTimestamp != "" {
		exp, err := time.Parse(time.RFC3339, st.ExpirationTimestamp)
		if err != nil {
			return fmt.Errorf("exec plugin %s: expirationTimestamp: %w", e.Command, err)
		}
		t.expires = exp
	}
	t.valid = true
	return nil
}
