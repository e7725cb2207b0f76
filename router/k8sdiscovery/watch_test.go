package k8sdiscovery

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/internal/kubeapi"
	"github.com/llmcloud/llmcloud/internal/kubeapi/kubeapitest"
)

func slice(ns, name, service string, port int32, eps ...Endpoint) *EndpointSlice {
	http := "http"
	s := &EndpointSlice{Ports: []EndpointPort{{Name: &http, Port: &port}}, Endpoints: eps}
	s.Metadata.Name, s.Metadata.Namespace = name, ns
	s.Metadata.Labels = map[string]string{"kubernetes.io/service-name": service}
	return s
}

func ep(ip string, ready bool) Endpoint {
	e := Endpoint{Addresses: []string{ip}}
	e.Conditions.Ready = &ready
	return e
}

func slices_(ns string) string {
	return "/apis/discovery.k8s.io/v1/namespaces/" + ns + "/endpointslices"
}

func client(t *testing.T, api *kubeapitest.Server) *kubeapi.Client {
	t.Helper()
	c, err := kubeapi.New(kubeapi.Config{Server: api.URL, Token: api.Token})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWatchFollowsEndpointSlices(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api := kubeapitest.New()
	defer api.Close()
	api.Token = "sa-token"
	api.Put(slices_("llm"), slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", true), ep("10.0.0.2", false)))
	api.Put(slices_("llm"), slice("llm", "other", "something-else", 8000, ep("10.0.9.9", true)))       // another selector
	api.Put(slices_("elsewhere"), slice("elsewhere", "llm-x", "llmcloud", 8000, ep("10.0.8.8", true))) // another namespace
	got := make(chan []string, 16)
	done := make(chan error)
	go func() {
		done <- Watch(ctx, Options{Client: client(t, api), Namespace: "llm", Selector: "kubernetes.io/service-name=llmcloud",
			Port: 8000, Set: func(u []string) { got <- u }})
	}()
	expect := func(want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		deadline := time.After(5 * time.Second)
		for {
			select {
			case u := <-got:
				if slices.Equal(u, want) {
					return
				}
				t.Logf("interim %v", u)
			case <-deadline:
				t.Fatalf("never saw %v", want)
			}
		}
	}
	expect("http://10.0.0.1:8000")

	// The second pod becomes ready; a second slice of the same service adds a third.
	api.Put(slices_("llm"), slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", true), ep("10.0.0.2", true)))
	expect("http://10.0.0.1:8000", "http://10.0.0.2:8000")
	api.Put(slices_("llm"), slice("llm", "llm-b", "llmcloud", 8000, ep("10.0.0.3", true)))
	expect("http://10.0.0.1:8000", "http://10.0.0.2:8000", "http://10.0.0.3:8000")

	// A pod terminating (not ready) leaves; a deleted slice takes its endpoints with it.
	api.Put(slices_("llm"), slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", false), ep("10.0.0.2", true)))
	expect("http://10.0.0.2:8000", "http://10.0.0.3:8000")
	api.Delete(slices_("llm"), "llm-a")
	expect("http://10.0.0.3:8000")

	// The API server's watch cache moves on (410 Gone): discovery lists again and misses
	// nothing that changed meanwhile.
	api.Expire()
	api.Put(slices_("llm"), slice("llm", "llm-c", "llmcloud", 8000, ep("10.0.0.4", true)))
	expect("http://10.0.0.3:8000", "http://10.0.0.4:8000")
	api.Delete(slices_("llm"), "llm-b")
	api.Delete(slices_("llm"), "llm-c")
	expect()

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Watch did not return after cancel")
	}
	// It listed with the selector and watched from the list's version, as an informer does.
	lists := 0
	for _, r := range api.Requests() {
		if r == "GET "+slices_("llm") {
			lists++
		}
	}
	if lists < 3 {
		t.Errorf("%d requests for the slices, want at least a list and a watch before and after the expiry: %q", lists, api.Requests())
	}
}

func TestReadyURLs(t *testing.T) {
	ipv6 := slice("n", "v6", "s", 9000, ep("fd00::1", true))
	unset := slice("n", "u", "s", 8000, Endpoint{Addresses: []string{"10.1.0.1"}})
	noPort := &EndpointSlice{Endpoints: []Endpoint{ep("10.2.0.1", true)}}
	dup := slice("n", "d", "s", 8000, ep("10.1.0.1", true))
	got := ReadyURLs([]*EndpointSlice{ipv6, unset, noPort, dup}, 0, "http")
	want := []string{"http://10.1.0.1:8000", "http://[fd00::1]:9000"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got := ReadyURLs([]*EndpointSlice{ipv6}, 8443, "https"); fmt.Sprint(got) != "[https://[fd00::1]:8443]" {
		t.Fatalf("port override: %v", got)
	}
}

// A selector the API server refuses (400) ends Watch with an error instead of retrying.
func TestWatchBadSelector(t *testing.T) {
	api := kubeapitest.New()
	defer api.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := Watch(ctx, Options{Client: client(t, api), Namespace: "llm", Selector: "a in (", Set: func([]string) {}})
	if err == nil || !strings.Contains(err.Error(), "400") {
		t.Fatalf("bad selector: %v", err)
	}
}
