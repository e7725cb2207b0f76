// Package k8sdiscovery finds the router's backends in Kubernetes: it watches the EndpointSlices
// of a label selector in one namespace (an informer over client-go, which lists, watches and
// re-lists on its own) and reports the http://IP:port of every ready endpoint whenever the set
// changes. It is kept out of package router so the proxy does not link client-go's machinery
// into its tests; the router command wires the two together.
package k8sdiscovery

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Options say what to watch and whom to tell.
type Options struct {
	Client    kubernetes.Interface
	Namespace string // "" : the pod's own (Namespace())
	Selector  string // label selector of the EndpointSlices, e.g. kubernetes.io/service-name=llmcloud
	Port      int    // the replicas' port; 0: the slice's port named "http", else its first port
	Scheme    string // "http" (default) or "https"
	Resync    time.Duration
	Logger    *slog.Logger
	// Set gets the sorted backend URLs each time they change (and once after the first list).
	Set func(urls []string)
}

// InClusterClient is a clientset from the pod's service account.
func InClusterClient() (kubernetes.Interface, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}

// Namespace is the pod's namespace (from its service account), or "default".
func Namespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if ns := strings.TrimSpace(string(b)); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// Watch reports backends until ctx is done (then it returns nil).
func Watch(ctx context.Context, opts Options) error {
	if opts.Client == nil || opts.Set == nil {
		return fmt.Errorf("kubernetes discovery: Client and Set are required")
	}
	sel, err := labels.Parse(opts.Selector)
	if err != nil {
		return fmt.Errorf("kubernetes discovery: selector %q: %w", opts.Selector, err)
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
	factory := informers.NewSharedInformerFactoryWithOptions(opts.Client, opts.Resync,
		informers.WithNamespace(opts.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	inf := factory.Discovery().V1().EndpointSlices()
	lister := inf.Lister().EndpointSlices(opts.Namespace)

	var mu sync.Mutex
	var last []string
	synced := false
	update := func() {
		mu.Lock()
		defer mu.Unlock()
		if !synced {
			return
		}
		all, err := lister.List(sel)
		if err != nil {
			opts.Logger.Warn("kubernetes discovery: listing EndpointSlices", "err", err)
			return
		}
		urls := ReadyURLs(all, opts.Port, opts.Scheme)
		if last != nil && slices.Equal(urls, last) {
			return
		}
		last = urls
		opts.Logger.Info("kubernetes discovery: backends", "namespace", opts.Namespace, "selector", sel.String(), "urls", urls)
		opts.Set(urls)
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { update() },
		UpdateFunc: func(any, any) { update() },
		DeleteFunc: func(any) { update() },
	}
	if _, err := inf.Informer().AddEventHandler(h); err != nil {
		return fmt.Errorf("kubernetes discovery: %w", err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return nil // ctx done before the first list
	}
	mu.Lock()
	synced = true
	mu.Unlock()
	update()
	<-ctx.Done()
	return nil
}

// ReadyURLs are the scheme://IP:port of the ready endpoints of slices, sorted and without
// duplicates. An endpoint whose ready condition is unset counts as ready, as the API says.
func ReadyURLs(slices_ []*discoveryv1.EndpointSlice, port int, scheme string) []string {
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
func slicePort(s *discoveryv1.EndpointSlice) int {
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
