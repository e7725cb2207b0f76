// Package kube is the Kubernetes implementation of autoscale.Scaler: it reads and sets the
// replica count of a Deployment through its scale subresource (GET and PUT
// /apis/apps/v1/namespaces/NS/deployments/NAME/scale), as the Horizontal Pod Autoscaler does.
// Kubernetes then starts or stops pods; removed pods get SIGTERM after leaving their Service's
// endpoints, which is the same drain order the local supervisor keeps.
//
// The calls are plain REST through package internal/kubeapi. The RBAC it needs is in
// docs/cloud.md: get and update on deployments/scale.
package kube

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/llmcloud/llmcloud/internal/kubeapi"
)

// Scaler scales one Deployment. Its methods are safe for concurrent use.
type Scaler struct {
	client    *kubeapi.Client
	namespace string
	name      string
}

// New returns a Scaler of the Deployment namespace/name.
func New(client *kubeapi.Client, namespace, name string) (*Scaler, error) {
	if client == nil || namespace == "" || name == "" {
		return nil, errors.New("kube: a client, a namespace and a Deployment name are required")
	}
	return &Scaler{client: client, namespace: namespace, name: name}, nil
}

// scale is an autoscaling/v1 Scale. Unknown fields are not kept: the API server reads only
// metadata (name, resourceVersion) and spec.replicas of an update.
type scale struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name            string `json:"name"`
		Namespace       string `json:"namespace,omitempty"`
		ResourceVersion string `json:"resourceVersion,omitempty"`
		UID             string `json:"uid,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Replicas int32 `json:"replicas"`
	} `json:"spec"`
}

func (s *Scaler) path() string {
	return "/apis/apps/v1/namespaces/" + url.PathEscape(s.namespace) + "/deployments/" + url.PathEscape(s.name) + "/scale"
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
// and retries, up to five attempts about 10 ms apart (client-go's retry.DefaultRetry).
func (s *Scaler) Scale(ctx context.Context, n int) error {
	if n < 0 || n > 1<<30 {
		return fmt.Errorf("kube: cannot scale to %d replicas", n)
	}
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10*time.Millisecond + rand.N(time.Millisecond)):
			}
		}
		var sc *scale
		if sc, err = s.get(ctx); err != nil {
			return err
		}
		if int(sc.Spec.Replicas) == n {
			return nil
		}
		sc.Spec.Replicas = int32(n)
		if err = s.client.Put(ctx, s.path(), sc, nil); err == nil || !kubeapi.IsConflict(err) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("kube: scaling deployment %s/%s to %d: %w", s.namespace, s.name, n, err)
	}
	return nil
}

func (s *Scaler) get(ctx context.Context) (*scale, error) {
	sc := new(scale)
	if err := s.client.Get(ctx, s.path(), nil, sc); err != nil {
		return nil, fmt.Errorf("kube: scale of deployment %s/%s: %w", s.namespace, s.name, err)
	}
	if sc.APIVersion == "" {
		sc.APIVersion, sc.Kind = "autoscaling/v1", "Scale"
	}
	return sc, nil
}

// NewClient connects to the API server: from the kubeconfig file if one is given, else from the
// pod's service account (in-cluster).
func NewClient(kubeconfig string) (*kubeapi.Client, error) {
	var c *kubeapi.Client
	var err error
	if kubeconfig != "" {
		c, err = kubeapi.FromKubeconfig(kubeconfig)
	} else {
		c, err = kubeapi.InCluster()
	}
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return c, nil
}
