// Package kubetest gives tests a Kubernetes API server over real HTTP (package
// internal/kubeapi/kubeapitest) holding one Deployment whose scale subresource works as the
// API server's does: GET reads the Deployment's spec.replicas, PUT writes it (with
// resourceVersion checks). Only tests import this package.
package kubetest

import (
	"github.com/llmcloud/llmcloud/internal/kubeapi"
	"github.com/llmcloud/llmcloud/internal/kubeapi/kubeapitest"
)

// Cluster is the API server. Close it when done.
type Cluster struct {
	*kubeapitest.Server
}

// Deployments is the collection path of the Deployments of namespace.
func Deployments(namespace string) string {
	return "/apis/apps/v1/namespaces/" + namespace + "/deployments"
}

// New starts an API server holding Deployment namespace/name with the given replicas.
func New(namespace, name string, replicas int32) *Cluster {
	c := &Cluster{kubeapitest.New()}
	c.Put(Deployments(namespace), map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"spec":     map[string]any{"replicas": replicas}})
	return c
}

// Client is an API client of the server.
func (c *Cluster) Client() *kubeapi.Client {
	k, err := kubeapi.New(kubeapi.Config{Server: c.URL})
	if err != nil {
		panic(err)
	}
	return k
}

// Replicas returns spec.replicas of Deployment namespace/name (-1 if it is missing).
func (c *Cluster) Replicas(namespace, name string) int32 {
	return int32(c.Server.Replicas(Deployments(namespace), name))
}
