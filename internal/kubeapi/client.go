// Package kubeapi is the small part of a Kubernetes API client that llmcloud uses, as plain
// REST calls over net/http: JSON requests with the credentials of the pod's service account
// (InCluster) or of a kubeconfig file (FromKubeconfig), the API's Status errors, and watch
// streams. It replaces client-go, which was most of the binary's dependency graph for four
// calls (list and watch EndpointSlices, get and update a Deployment's scale). The objects are
// the callers' own structs with the JSON field names of the API.
package kubeapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Config says where the API server is and how to authenticate to it.
type Config struct {
	Server string      // https://host:port (a path prefix is kept)
	TLS    *tls.Config // nil: the system's roots, no client certificate

	// Credentials: at most one of a bearer token (Token, or TokenFile re-read every minute as
	// service-account tokens rotate; or an exec plugin) and basic auth. A client certificate
	// goes in TLS.
	Token              string
	TokenFile          string
	Exec               *ExecConfig
	Username, Password string

	Impersonate       string   // Impersonate-User, if set
	ImpersonateGroups []string // Impersonate-Group

	Proxy func(*http.Request) (*url.URL, error) // nil: http.ProxyFromEnvironment
}

// Client calls one API server. Its methods are safe for concurrent use.
type Client struct {
	base  string
	hc    *http.Client
	cfg   Config
	token *tokenSource
}

// New returns a Client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.Server)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("kubernetes API: bad server URL %q", cfg.Server)
	}
	if cfg.Exec != nil && cfg.TLS == nil {
		cfg.TLS = &tls.Config{}
	}
	proxy := cfg.Proxy
	if proxy == nil {
		proxy = http.ProxyFromEnvironment
	}
	tr := &http.Transport{
		Proxy:               proxy,
		TLSClientConfig:     cfg.TLS,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     90 * time.Second,
		MaxIdleConnsPerHost: 4,
		ForceAttemptHTTP2:   true,
	}
	c := &Client{base: strings.TrimSuffix(cfg.Server, "/"), hc: &http.Client{Transport: tr}, cfg: cfg}
	switch {
	case cfg.Exec != nil:
		c.token = &tokenSource{exec: cfg.Exec, server: c.base, tls: cfg.TLS}
		if cfg.TLS != nil && cfg.TLS.GetClientCertificate == nil && len(cfg.TLS.Certificates) == 0 {
			// The plugin may answer with a client certificate instead of a token.
			cfg.TLS.GetClientCertificate = c.token.clientCertificate
		}
	case cfg.TokenFile != "":
		c.token = &tokenSource{file: cfg.TokenFile, static: cfg.Token}
	case cfg.Token != "":
		c.token = &tokenSource{static: cfg.Token}
	}
	return c, nil
}

// StatusError is a response other than 2xx, with the API's Status (reason and message) if the
// server sent one.
type StatusError struct {
	Code    int    // HTTP status
	Reason  string // e.g. NotFound, Conflict, Forbidden
	Message string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	if e.Reason != "" {
		return fmt.Sprintf("%s (%d %s)", msg, e.Code, e.Reason)
	}
	return fmt.Sprintf("%s (%d)", msg, e.Code)
}

// IsNotFound says if err is a 404 from the API.
func IsNotFound(err error) bool { return hasCode(err, http.StatusNotFound) }

// IsConflict says if err is a 409 from the API (a stale resourceVersion on update).
func IsConflict(err error) bool { return hasCode(err, http.StatusConflict) }

// IsGone says if err is a 410 from the API (a watch's resourceVersion is too old).
func IsGone(err error) bool { return hasCode(err, http.StatusGone) }

func hasCode(err error, code int) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Code == code
}

// Get reads path (e.g. /apis/apps/v1/namespaces/ns/deployments/d/scale) into out.
func (c *Client) Get(ctx context.Context, path string, query url.Values, out any) error {
	return c.Do(ctx, http.MethodGet, path, query, nil, out)
}

// Put writes in to path (an update) and reads the server's answer into out if it is not nil.
func (c *Client) Put(ctx context.Context, path string, in, out any) error {
	return c.Do(ctx, http.MethodPut, path, nil, in, out)
}

// Do sends one request: in (if not nil) as JSON, the answer decoded into out (if not nil).
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	resp, err := c.send(ctx, method, path, query, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("kubernetes API: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// send makes the request and returns a 2xx response (or a *StatusError). A 401 with a
// plugin's token runs the plugin again and retries once (the token may have been revoked).
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body io.Reader) (*http.Response, error) {
	var payload []byte
	if body != nil {
		payload, _ = io.ReadAll(body)
	}
	for attempt := 0; ; attempt++ {
		u := c.base + path
		if len(query) > 0 {
			u += "?" + query.Encode()
		}
		var rb io.Reader
		if payload != nil {
			rb = bytes.NewReader(payload)
		}
		req, err := http.NewRequestWithContext(ctx, method, u, rb)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json")
		if payload != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("User-Agent", "llmcloud")
		if err := c.authorize(req); err != nil {
			return nil, fmt.Errorf("kubernetes API: credentials: %w", err)
		}
		resp, err := c.hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("kubernetes API: %w", err)
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		se := readStatus(resp)
		if se.Code == http.StatusUnauthorized && attempt == 0 && c.token != nil && c.token.exec != nil {
			c.token.invalidate()
			continue
		}
		return nil, fmt.Errorf("kubernetes API: %s %s: %w", method, path, se)
	}
}

func (c *Client) authorize(req *http.Request) error {
	switch {
	case c.token != nil:
		tok, err := c.token.get()
		if err != nil {
			return err
		}
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
	case c.cfg.Username != "" || c.cfg.Password != "":
		req.SetBasicAuth(c.cfg.Username, c.cfg.Password)
	}
	if c.cfg.Impersonate != "" {
		req.Header.Set("Impersonate-User", c.cfg.Impersonate)
		for _, g := range c.cfg.ImpersonateGroups {
			req.Header.Add("Impersonate-Group", g)
		}
	}
	return nil
}

// readStatus closes resp's body and returns its error: the API's Status object if the body is
// one, else the status line and the start of the body.
func readStatus(resp *http.Response) *StatusError {
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	se := &StatusError{Code: resp.StatusCode}
	var st status
	if json.Unmarshal(b, &st) == nil && st.Kind == "Status" {
		se.Reason, se.Message = st.Reason, st.Message
		return se
	}
	se.Message = strings.TrimSpace(string(b))
	if len(se.Message) > 200 {
		se.Message = se.Message[:200] + "..."
	}
	return se
}

// status is the API's metav1.Status, as far as errors need it.
type status struct {
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Message string `json:"message"`
	Reason  string `json:"reason"`
	Code    int    `json:"code"`
}
