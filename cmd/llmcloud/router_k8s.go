// Kubernetes discovery for the router command (placeholder until router/k8s lands).
package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/llmcloud/llmcloud/router"
)

func watchKubernetes(ctx context.Context, f routerFlags, rt *router.Router, log *slog.Logger) error {
	return errors.New("kubernetes discovery is not built in yet")
}
