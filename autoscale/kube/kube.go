// Package kube is the Kubernetes implementation of autoscale.Scaler: it reads and sets the
// replica count of a Deployment through its scale subresource (GET and PUT
// /apis/apps/v1/namespaces/NS/deployments/NAME/scale), as the Horizontal Pod Autoscaler does.
// Kubernetes then starts or stops pods; removed pods get SIGTERM after leaving their Service's
// endpoints, which is the same drain order the local supervisor keeps.
//
// It lives in its own package so that nothing else in llmcloud links client-go through it.
// The RBAC it needs is in docs/cloud.md: get and update on deployments/scale.
package kube

import (
	"context"
	"errors"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// Scaler scales one Deployment. Its methods are safe for concurrent use.
type Scaler struct {
	client    kubernetes.Interface
	namespace string
	name      string
}

// New returns a Scaler of the Deployment namespace/name.
func New(client kubernetes.Interface, namespace, name string) (*Scaler, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, errors.New("kube: a client, a namespace and a Deployment name are required")
	}
	return &Scaler{client: client, namespace: namespace, name: name}, nil
}

// Replicas returns the Deployment's desired replica count (spec.replicas of its scale).
func (s *Scaler) Replicas(ctx context.Context) (int, error) {
	sc, err := s.get(ctx)
	if err != nil {
		return 0, err
	}
	return int(sc.Spec.Replicas), nil
}

// Scale sets spec.replicas of the Deployment's scale to n. The update carries the
// resourceVersion it read; on a conflict (someone else changed it in between) it reads again
// and retries, with client-go's default backoff.
func (s *Scaler) Scale(ctx context.Context, n int) error {
	if n < 0 || n > 1<<30 {
		return fmt.Errorf("kube: cannot scale to %d replicas", n)
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := s.get(ctx)
		if err != nil {
			return err
		}
		if int(sc.Spec.Replicas) == n {
			return nil
		}
		sc.Spec.Replicas = int32(n)
		_, err = s.client.AppsV1().Deployments(s.namespace).UpdateScale(ctx, s.name, sc, metav1.UpdateOptions{})
		return err
	})
}

func (s *Scaler) get(ctx context.Context) (*autoscalingv1.Scale, error) {
	sc, err := s.client.AppsV1().Deployments(s.namespace).GetScale(ctx, s.name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube: scale of deployment %s/%s: %w", s.namespace, s.name, err)
	}
	return sc, nil
}

// NewClient connects to the API server: from the kubeconfig file if one is given, else from the
// pod's service account (in-cluster).
func NewClient(kubeconfig string) (kubernetes.Interface, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return kubernetes.NewForConfig(cfg)
}
