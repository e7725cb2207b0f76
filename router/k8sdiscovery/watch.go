// Package k8sdiscovery finds the router's backends in Kubernetes: it follows the
// EndpointSlices of a label selector in one namespace (list, then watch, re-list when needed;
// package internal/kubeapi) and reports the http://IP:port of every ready endpoint whenever
// the set changes. The router command wires it to the router.
package k8sdiscovery

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"

	"github.com/llmcloud/llmcloud/internal/kubeapi"
)

// Options say what to watch and whom to tell.
type Options struct {
	Client    *kubeapi.Client
	Namespace string // "" : the pod's own (Namespace())
	Selector  string // label selector of the EndpointSlices, e.g. kubernetes.io/service-name=llmcloud
	Port      int    // the replicas' port; 0: the slice's port named "http", else its first port
	Scheme    string // "http" (default) or "https"
	Logger    *slog.Logger
	// Set gets the sorted backend URLs each time they change (and once after the first list).
	Set func(urls []string)
}

// EndpointSlice is the part of a discovery.k8s.io/v1 EndpointSlice that discovery reads.
type EndpointSlice struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Ports     []EndpointPort `json:"ports"`
	Endpoints []Endpoint     `json:"endpoints"`
}

// EndpointPort is one port of an EndpointSlice.
type EndpointPort struct {
	Name *string `json:"name,omitempty"`
	Port *int32  `json:"port,omitempty"`
}

// Endpoint is one endpoint of an EndpointSlice.
type Endpoint struct {
	Addresses  []string `json:"addresses"`
	Conditions struct {
		Ready *bool `json:"ready,omitempty"`
	} `json:"conditions"`
}

// InClusterClient is an API client from the pod's service account.
func InClusterClient() (*kubeapi.Client, error) {
	c, err := kubeapi.InCluster()
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery: %w", err)
	}
	return c, nil
}

// Namespace is the pod's namespace (from its service account), or "default".
func Namespace() string { return kubeapi.PodNamespace() }

// Watch reports backends until ctx is done (then it returns nil). A selector the API server
// cannot parse is an error; other failures are logged and retried.
func Watch(ctx context.Context, opts Options) error {
	if opts.Client == nil || opts.Set == nil {
		return fmt.Errorf("kubernetes discovery: Client and Set are required")
	}
	if opts.Namespace == "" {
		opts.Namespace = Namespace()
	}
	if opts.Scheme == "" {
		opts.Scheme = "http"
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	path := "/apis/discovery.k8s.io/v1/namespaces/" + url.PathEscape(opts.Namespace) + "/endpointslices"
	var last []string
	err := opts.Client.Follow(ctx, path, url.Values{"labelSelector": {opts.Selector}}, opts.Logger, func(items []json.RawMessage) {
		all := make([]*EndpointSlice, 0, len(items))
		for _, it := range items {
			s := new(EndpointSlice)
			if err := json.Unmarshal(it, s); err != nil {
				opts.Logger.Warn("kubernetes discovery: decoding an EndpointSlice", "err", err)
				continue
			}
			all = append(all, s)
		}
		urls := ReadyURLs(all, opts.Port, opts.Scheme)
		if last != nil && slices.Equal(urls, last) {
			return
		}
		last = urls
		opts.Logger.Info("kubernetes discovery: backends", "namespace", opts.Namespace, "selector", opts.Selector, "urls", urls)
		opts.Set(urls)
	})
	if err != nil {
		return fmt.Errorf("kubernetes discovery: selector %q: %w", opts.Selector, err)
	}
	return nil
}

// ReadyURLs are the scheme://IP:port of the ready endpoints of slices, sorted and without
// duplicates. An endpoint whose ready condition is unset counts as ready, as the API says.
func ReadyURLs(slices_ []*EndpointSlice, port int, scheme string) []string {
	urls := []string{}
	for _, s := range slices_ {
		p := port
		if p == 0 {
			p = slicePort(s)
		}
		if p == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				urls = append(urls, scheme+"://"+net.JoinHostPort(a, strconv.Itoa(p)))
				break // all addresses of an endpoint are the same pod
			}
		}
	}
	slices.Sort(urls)
	return slices.Compact(urls)
}

// slicePort is the slice's port named "http", else its first port, else 0.
func slicePort(s *EndpointSlice) int {
	first := 0
	for _, p := range s.Ports {
		if p.Port == nil {
			continue
		}
		if p.Name != nil && *p.Name == "http" {
			return int(*p.Port)
		}
		if first == 0 {
			first = int(*p.Port)
		}
	}
	return first
}
