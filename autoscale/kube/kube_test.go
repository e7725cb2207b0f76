package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/llmcloud/llmcloud/autoscale"
)

var _ autoscale.Scaler = (*Scaler)(nil)

// newFake returns a fake clientset holding Deployment ns/llmcloud with the given replicas,
// whose scale subresource reads and writes the Deployment's spec.replicas as the API server's
// does (client-go's object tracker does not serve subresources by itself). conflicts makes the
// next updates fail with 409 Conflict.
func newFake(t *testing.T, replicas int32, conflicts *int) *fake.Clientset {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "llmcloud", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	c := fake.NewClientset(d)
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	c.PrependReactor("get", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		name := a.(k8stesting.GetAction).GetName()
		obj, err := c.Tracker().Get(gvr, a.GetNamespace(), name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment)
		return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, ResourceVersion: d.ResourceVersion},
			Spec: autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas}}, nil
	})
	c.PrependReactor("update", "deployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "scale" {
			return false, nil, nil
		}
		sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
		if conflicts != nil && *conflicts > 0 {
			*conflicts--
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), sc.Name, errors.New("the object has been modified"))
		}
		obj, err := c.Tracker().Get(gvr, a.GetNamespace(), sc.Name)
		if err != nil {
			return true, nil, err
		}
		d := obj.(*appsv1.Deployment).DeepCopy()
		if sc.ResourceVersion != d.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), sc.Name, errors.New("stale resourceVersion"))
		}
		n := sc.Spec.Replicas
		d.Spec.Replicas = &n
		d.ResourceVersion += "1"
		if err := c.Tracker().Update(gvr, d, d.Namespace); err != nil {
			return true, nil, err
		}
		return true, sc, nil
	})
	return c
}

func deploymentReplicas(t *testing.T, c *fake.Clientset) int32 {
	t.Helper()
	d, err := c.AppsV1().Deployments("ns").Get(context.Background(), "llmcloud", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	c := newFake(t, 2, nil)
	s, err := New(c, "ns", "llmcloud")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.Replicas(ctx); err != nil || n != 2 {
		t.Fatalf("Replicas = %d, %v", n, err)
	}
	if err := s.Scale(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if got := deploymentReplicas(t, c); got != 5 {
		t.Fatalf("deployment has %d replicas, want 5", got)
	}
	if n, _ := s.Replicas(ctx); n != 5 {
		t.Fatalf("Replicas after Scale = %d", n)
	}
	// Idempotent: the same count sends no update.
	before := len(c.Actions())
	if err := s.Scale(ctx, 5); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Actions()[before:] {
		if a.GetVerb() == "update" {
			t.Errorf("Scale to the current count sent %v", a)
		}
	}
	if err := s.Scale(ctx, -1); err == nil {
		t.Error("negative count accepted")
	}
}

// A conflicting writer in between makes Scale read again and retry.
func TestScaleRetriesConflicts(t *testing.T) {
	conflicts := 2
	c := newFake(t, 1, &conflicts)
	s, _ := New(c, "ns", "llmcloud")
	if err := s.Scale(context.Background(), 3); err != nil {
		t.Fatal(err)
	}
	if conflicts != 0 || deploymentReplicas(t, c) != 3 {
		t.Fatalf("conflicts left %d, replicas %d", conflicts, deploymentReplicas(t, c))
	}
	gets := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == "get" && a.GetSubresource() == "scale" {
			gets++
		}
	}
	if gets != 3 {
		t.Errorf("%d reads of the scale, want 3 (one per attempt)", gets)
	}
}

// A missing Deployment is an error that names it, from both methods.
func TestMissingDeployment(t *testing.T) {
	c := newFake(t, 1, nil)
	s, _ := New(c, "ns", "nope")
	if _, err := s.Replicas(context.Background()); err == nil || !apierrors.IsNotFound(errors.Unwrap(err)) {
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
	c := newFake(t, 1, nil)
	s, _ := New(c, "ns", "llmcloud")
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
	if got := deploymentReplicas(t, c); got != 4 {
		t.Fatalf("deployment at %d replicas, want 4", got)
	}
	load = []autoscale.Sample{{Replica: "a"}, {Replica: "b"}, {Replica: "c"}, {Replica: "d"}}
	if d, err := ctl.Step(context.Background(), t0.Add(7*time.Second)); err != nil || d.Action != autoscale.ScaleDown || d.After != 1 {
		t.Fatalf("%+v %v", d, err)
	}
	if got := deploymentReplicas(t, c); got != 1 {
		t.Fatalf("deployment at %d replicas, want 1", got)
	}
}
