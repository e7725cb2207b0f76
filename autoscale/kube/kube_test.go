package kube

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/autoscale/kube/kubetest"
	"github.com/llmcloud/llmcloud/internal/kubeapi"
)

var _ autoscale.Scaler = (*Scaler)(nil)

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	c := kubetest.New("ns", "llmcloud", 2)
	defer c.Close()
	s, err := New(c.Client(), "ns", "llmcloud")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Replicas(ctx); err != nil || n != 2 {
		t.Fatalf("Replicas = %d, %v", n, err)
	}
	if err := s.Scale(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if got := c.Replicas("ns", "llmcloud"); got != 5 {
		t.Fatalf("deployment has %d replicas, want 5", got)
	}
	if n, _ := s.Replicas(ctx); n != 5 {
		t.Fatalf("Replicas after Scale = %d", n)
	}
	// Idempotent: the same count sends no update.
	before := len(c.Requests())
	if err := s.Scale(ctx, 5); err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Requests()[before:] {
		if !strings.HasPrefix(r, "GET ") {
			t.Errorf("Scale to the current count sent %v", r)
		}
	}
	if err := s.Scale(ctx, -1); err == nil {
		t.Error("negative count accepted")
	}
}

// A conflicting writer in between makes Scale read again and retry.
func TestScaleRetriesConflicts(t *testing.T) {
	c := kubetest.New("ns", "llmcloud", 1)
	defer c.Close()
	c.Conflicts.Store(2)
	s, _ := New(c.Client(), "ns", "llmcloud")
	if err := s.Scale(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if c.Conflicts.Load() != 0 || c.Replicas("ns", "llmcloud") != 3 {
		t.Fatalf("conflicts left %d, replicas %d", c.Conflicts.Load(), c.Replicas("ns", "llmcloud"))
	}
	gets := 0
	for _, r := range c.Requests() {
		if r == "GET /apis/apps/v1/namespaces/ns/deployments/llmcloud/scale" {
			gets++
		}
	}
	if gets != 3 {
		t.Errorf("%d reads of the scale, want 3 (one per attempt)", gets)
	}
}

// A missing Deployment is an error that names it, from both methods.
func TestMissingDeployment(t *testing.T) {
	c := kubetest.New("ns", "llmcloud", 1)
	defer c.Close()
	s, _ := New(c.Client(), "ns", "nope")
	if _, err := s.Replicas(context.Background()); err == nil || !kubeapi.IsNotFound(errors.Unwrap(err)) {
		t.Errorf("Replicas: %v", err)
	}
	if err := s.Scale(context.Background(), 2); err == nil {
		t.Error("Scale of a missing deployment succeeded")
	}
	if _, err := New(nil, "ns", "x"); err == nil {
		t.Error("nil client accepted")
	}
}

// The autoscaler's controller drives the Deployment through this Scaler.
func TestControllerScalesDeployment(t *testing.T) {
	c := kubetest.New("ns", "llmcloud", 1)
	defer c.Close()
	s, _ := New(c.Client(), "ns", "llmcloud")
	t0 := time.Unix(0, 0)
	load := []autoscale.Sample{{Replica: "pod-a", Waiting: 9}}
	ctl, err := autoscale.NewController(autoscale.ControllerOptions{
		Config: autoscale.Config{Metric: autoscale.MetricWaiting, Target: 2, MinReplicas: 1, MaxReplicas: 4,
			ScaleUpCooldown: time.Second, ScaleDownCooldown: 5 * time.Second},
		Scaler: s, Observe: func(context.Context) ([]autoscale.Sample, error) { return load, nil }}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := ctl.Step(context.Background(), t0.Add(time.Second)); err != nil || d.After != 4 {
		t.Fatalf("%+v %v", d, err)
	}
	if got := c.Replicas("ns", "llmcloud"); got != 4 {
		t.Fatalf("deployment at %d replicas, want 4", got)
	}
	load = []autoscale.Sample{{Replica: "a"}, {Replica: "b"}, {Replica: "c"}, {Replica: "d"}}
	if d, err := ctl.Step(context.Background(), t0.Add(7*time.Second)); err != nil || d.Action != autoscale.ScaleDown || d.After != 1 {
		t.Fatalf("%+v %v", d, err)
	}
	if got := c.Replicas("ns", "llmcloud"); got != 1 {
		t.Fatalf("deployment at %d replicas, want 1", got)
	}
}
