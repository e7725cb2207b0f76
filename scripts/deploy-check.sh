#!/usr/bin/env bash
# Checks the deployment files with Helm: helm lint and helm template of deploy/helm/llmcloud
# (printed), then the deploy package's tests with LLMCLOUD_HELM set: the default render must
# equal deploy/k8s/, every optional part must render to strictly valid objects, and bad values
# must fail. With --update it first rewrites deploy/k8s/llmcloud.yaml from the chart.
#
# Helm comes from the Go module proxy (HELM_VERSION, built once into the Go cache; the first
# build takes minutes). Usage: scripts/deploy-check.sh [--update]
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
version="${HELM_VERSION:-v3.22.0}"
bin="${HELM_BIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/llmcloud/helm-$version}"
if [ ! -x "$bin/helm" ]; then
  echo "== building helm $version into $bin (once)"
  mkdir -p "$bin"
  (cd /tmp && GOBIN="$bin" go install "helm.sh/helm/v3/cmd/helm@$version")
fi
helm="$bin/helm"
"$helm" version --short

echo "== helm lint --strict deploy/helm/llmcloud"
"$helm" lint --strict deploy/helm/llmcloud --namespace llmcloud

echo "== helm template llmcloud deploy/helm/llmcloud --namespace llmcloud (kinds and names)"
"$helm" template llmcloud deploy/helm/llmcloud --namespace llmcloud |
  awk '/^kind:/{k=$2} /^  name:/{if(k){print "  " k " " $2; k=""}}'

if [ "${1:-}" = "--update" ]; then
  echo "== rewriting deploy/k8s/llmcloud.yaml"
  LLMCLOUD_HELM="$helm" LLMCLOUD_DEPLOY_UPDATE=deploy/k8s go test ./deploy -run '^TestHelm$/^WritePlainManifests$' -count=1
fi

echo "== go test ./deploy with helm"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
status=0
LLMCLOUD_HELM="$helm" go test ./deploy -count=1 -v >"$log" 2>&1 || status=$?
grep -vE '^=== (RUN|PAUSE|CONT)' "$log"
exit "$status"
