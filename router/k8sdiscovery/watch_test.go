package k8sdiscovery

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func slice(ns, name, service string, port int32, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	http := "http"
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"kubernetes.io/service-name": service}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &http, Port: &port}},
		Endpoints:   eps,
	}
}

func ep(ip string, ready bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
}

func TestWatchFollowsEndpointSlices(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(
		slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", true), ep("10.0.0.2", false)),
		slice("llm", "other", "something-else", 8000, ep("10.0.9.9", true)), // another selector
		slice("elsewhere", "llm-x", "llmcloud", 8000, ep("10.0.8.8", true)), // another namespace
	)
	got := make(chan []string, 16)
	done := make(chan error)
	go func() {
		done <- Watch(ctx, Options{Client: client, Namespace: "llm", Selector: "kubernetes.io/service-name=llmcloud",
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
	s := slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", true), ep("10.0.0.2", true))
	if _, err := client.DiscoveryV1().EndpointSlices("llm").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("http://10.0.0.1:8000", "http://10.0.0.2:8000")
	if _, err := client.DiscoveryV1().EndpointSlices("llm").Create(ctx,
		slice("llm", "llm-b", "llmcloud", 8000, ep("10.0.0.3", true)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("http://10.0.0.1:8000", "http://10.0.0.2:8000", "http://10.0.0.3:8000")

	// A pod terminating (not ready) leaves; a deleted slice takes its endpoints with it.
	s = slice("llm", "llm-a", "llmcloud", 8000, ep("10.0.0.1", false), ep("10.0.0.2", true))
	if _, err := client.DiscoveryV1().EndpointSlices("llm").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("http://10.0.0.2:8000", "http://10.0.0.3:8000")
	if err := client.DiscoveryV1().EndpointSlices("llm").Delete(ctx, "llm-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expect("http://10.0.0.3:8000")
	if err := client.DiscoveryV1().EndpointSlices("llm").Delete(ctx, "llm-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
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
}

func TestReadyURLs(t *testing.T) {
	ipv6 := slice("n", "v6", "s", 9000, ep("fd00::1", true))
	unset := slice("n", "u", "s", 8000, discoveryv1.Endpoint{Addresses: []string{"10.1.0.1"}})
	noPort := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("10.2.0.1", true)}}
	dup := slice("n", "d", "s", 8000, ep("10.1.0.1", true))
	got := ReadyURLs([]*discoveryv1.EndpointSlice{ipv6, unset, noPort, dup}, 0, "http")
	want := []string{"http://10.1.0.1:8000", "http://[fd00::1]:9000"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got := ReadyURLs([]*discoveryv1.EndpointSlice{ipv6}, 8443, "https"); fmt.Sprint(got) != "[https://[fd00::1]:8443]" {
		t.Fatalf("port override: %v", got)
	}
}

func TestWatchBadSelector(t *testing.T) {
	err := Watch(context.Background(), Options{Client: fake.NewClientset(), Selector: "a in (", Set: func([]string) {}})
	if err == nil {
		t.Fatal("bad selector accepted")
	}
}
