// Package kubetest gives tests a fake Kubernetes API (client-go's fake clientset) holding one
// Deployment whose scale subresource works as the API server's does: GET reads the
// Deployment's spec.replicas, PUT writes it (with resourceVersion checks). client-go's object
// tracker does not serve subresources by itself. Only tests import this package.
package kubetest

import (
	"errors"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// Cluster is the fake API.
type Cluster struct {
	*fake.Clientset
	// Conflicts makes the next scale updates fail with 409 Conflict.
	Conflicts atomic.Int32
}

// New returns a fake API holding Deployment namespace/name with the given replicas.
func New(namespace, name string, replicas int32) *Cluster {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	c := &Cluster{Clientset: fake.NewClientset(d)}
	c.PrependReactor("get", "deployments", c.getScale)
	c.PrependReactor("update", "deployments", c.updateScale)
	return c
}

// Replicas returns spec.replicas of Deployment namespace/name (-1 if it is missing).
func (c *Cluster) Replicas(namespace, name string) int32 {
	obj, err := c.Tracker().Get(deployments, namespace, name)
	if err != nil {
		return -1
	}
	return *obj.(*appsv1.Deployment).Spec.Replicas
}

func (c *Cluster) getScale(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "scale" {
		return false, nil, nil
	}
	obj, err := c.Tracker().Get(deployments, a.GetNamespace(), a.(k8stesting.GetAction).GetName())
	if err != nil {
		return true, nil, err
	}
	d := obj.(*appsv1.Deployment)
	return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: d.Name, Namespace: d.Namespace, ResourceVersion: d.ResourceVersion},
		Spec: autoscalingv1.ScaleSpec{Replicas: *d.Spec.Replicas}}, nil
}

func (c *Cluster) updateScale(a k8stesting.Action) (bool, runtime.Object, error) {
	if a.GetSubresource() != "scale" {
		return false, nil, nil
	}
	sc := a.(k8stesting.UpdateAction).GetObject().(*autoscalingv1.Scale)
	if c.Conflicts.Load() > 0 {
		c.Conflicts.Add(-1)
		return true, nil, apierrors.NewConflict(deployments.GroupResource(), sc.Name, errors.New("the object has been modified"))
	}
	obj, err := c.Tracker().Get(deployments, a.GetNamespace(), sc.Name)
	if err != nil {
		return true, nil, err
	}
	d := obj.(*appsv1.Deployment).DeepCopy()
	if sc.ResourceVersion != d.ResourceVersion {
		return true, nil, apierrors.NewConflict(deployments.GroupResource(), sc.Name, errors.New("stale resourceVersion"))
	}
	n := sc.Spec.Replicas
	d.Spec.Replicas = &n
	d.ResourceVersion += "1"
	if err := c.Tracker().Update(deployments, d, d.Namespace); err != nil {
		return true, nil, err
	}
	return true, sc, nil
}
