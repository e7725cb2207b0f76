// Package deploy holds no code: this directory has the deployment files of llmcloud (the Helm
// chart in helm/llmcloud, the plain manifests in k8s/ and the tensor/pipeline-parallel serving
// groups in k8s/parallel/, Prometheus and prometheus-adapter
// configuration, the Grafana dashboard in grafana/), and its tests check them: every manifest
// strictly decoded into the Kubernetes API types (unknown or misspelled fields fail), the
// references between objects, the flags given to llmcloud against the command's own flag
// definitions, metric names against the ones the server and router export, and, with
// LLMCLOUD_HELM set (scripts/deploy-check.sh), helm lint and helm template against k8s/.
// docs/deploy.md explains how to use them.
package deploy
