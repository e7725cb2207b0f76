// Kubernetes discovery for the router command: the ready endpoints of the EndpointSlices that
// match --k8s-selector in --k8s-namespace become the router's backends (package k8sdiscovery,
// in-cluster credentials).
package main

import (
	"context"
	"log/slog"

	"github.com/llmcloud/llmcloud/router"
	"github.com/llmcloud/llmcloud/router/k8sdiscovery"
)

func watchKubernetes(ctx context.Context, f routerFlags, rt *router.Router, log *slog.Logger) error {
	client, err := k8sdiscovery.InClusterClient()
	if err != nil {
		return err
	}
	return k8sdiscovery.Watch(ctx, k8sdiscovery.Options{Client: client, Namespace: f.k8sNamespace,
		Selector: f.k8sSel, Port: f.k8sPort, Logger: log, Set: rt.SetBackends})
}
