package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// helmCommand is the helm to run, from LLMCLOUD_HELM: a path, or a command line such as
// "go run helm.sh/helm/v3/cmd/helm@v3.22.0" (scripts/deploy-check.sh sets it). Building helm
// takes minutes, so the default test run leaves these tests out.
func helmCommand(t *testing.T) []string {
	t.Helper()
	h := strings.Fields(os.Getenv("LLMCLOUD_HELM"))
	if len(h) == 0 {
		t.Skip("set LLMCLOUD_HELM to a helm binary or command (scripts/deploy-check.sh does)")
	}
	return h
}

const chartDir = "helm/llmcloud"

// helm runs helm with args and returns its standard output.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	h := helmCommand(t)
	cmd := exec.Command(h[0], append(h[1:], args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, &helmError{err, stderr.String()}
	}
	return out, nil
}

type helmError struct {
	err    error
	stderr string
}

func (e *helmError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.stderr) }

// render is `helm template llmcloud CHART --namespace llmcloud` with --set values.
func render(t *testing.T, sets ...string) ([]byte, error) {
	args := []string{"template", "llmcloud", chartDir, "--namespace", "llmcloud"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return helm(t, args...)
}

// TestHelm checks the chart with helm (LLMCLOUD_HELM): one test, so a machine without helm
// reports one skip for all of it. With LLMCLOUD_DEPLOY_UPDATE=deploy/k8s it first rewrites the
// plain manifests from the chart (scripts/deploy-check.sh --update).
func TestHelm(t *testing.T) {
	helmCommand(t)
	if dir := os.Getenv("LLMCLOUD_DEPLOY_UPDATE"); dir != "" {
		t.Run("WritePlainManifests", func(t *testing.T) { writePlainManifests(t, dir) })
	}
	t.Run("Lint", testHelmLint)
	t.Run("DefaultRenderIsPlainManifests", testHelmDefaultRenderIsPlainManifests)
	t.Run("Variants", testHelmVariants)
	t.Run("ParallelGroups", testHelmParallel)
}

// testHelmLint: helm lint --strict passes on the default values and with the optional parts on.
func testHelmLint(t *testing.T) {
	for _, sets := range [][]string{nil, {"autoscaling.hpa.enabled=true"}, {"autoscaling.keda.enabled=true", "model.volume.create=true"}} {
		args := []string{"lint", "--strict", chartDir, "--namespace", "llmcloud"}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		out, err := helm(t, args...)
		if err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
		t.Logf("helm %s\n%s", strings.Join(args, " "), out)
	}
}

// testHelmDefaultRenderIsPlainManifests: deploy/k8s/ is the chart's default render (plus the
// Namespace): the same objects, field for field.
func testHelmDefaultRenderIsPlainManifests(t *testing.T) {
	out, err := render(t)
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := decodeStream(out, "helm template")
	if err != nil {
		t.Fatal(err)
	}
	plain := readManifests(t, "k8s")
	key := func(o object) string { return o.Kind + "/" + o.Name }
	byKey := map[string]object{}
	for _, o := range rendered {
		byKey[key(o)] = o
	}
	matched := 0
	for _, p := range plain {
		if p.Kind == "Namespace" {
			continue
		}
		r, ok := byKey[key(p)]
		if !ok {
			t.Errorf("%s is in deploy/k8s but not in the chart's render", key(p))
			continue
		}
		matched++
		if !reflect.DeepEqual(p.Generic, r.Generic) {
			pj, _ := yaml.Marshal(p.Generic)
			rj, _ := yaml.Marshal(r.Generic)
			t.Errorf("%s differs between deploy/k8s and the chart (run scripts/deploy-check.sh --update):\n--- k8s\n%s\n--- chart\n%s", key(p), pj, rj)
		}
	}
	if matched != len(rendered) {
		t.Errorf("the chart renders %d objects, deploy/k8s has %d of them", len(rendered), matched)
	}
}

// testHelmVariants: every optional part renders to objects that decode strictly and hang
// together; contradictory values fail with a message.
func testHelmVariants(t *testing.T) {
	variants := []struct {
		name  string
		sets  []string
		kinds map[string]int
		check func(t *testing.T, objs []object)
	}{
		{"hpa", []string{"autoscaling.hpa.enabled=true"}, map[string]int{"HorizontalPodAutoscaler": 1}, nil},
		{"keda", []string{"autoscaling.keda.enabled=true"}, map[string]int{"ScaledObject": 1}, nil},
		{"pvc-created", []string{"model.volume.create=true", "model.volume.storageClassName=standard"}, map[string]int{"PersistentVolumeClaim": 1}, nil},
		{"hostPath", []string{"model.volume.type=hostPath", "model.servedModelName=llama", "replica.extraArgs={--kv-cache-memory,2GiB}"}, nil,
			func(t *testing.T, objs []object) {
				wantArgs(t, objs, "llama", "--kv-cache-memory", "2GiB", "/models/model.gguf")
			}},
		{"embedded-model", []string{"model.volume.type=none", "model.path="}, nil,
			func(t *testing.T, objs []object) {
				for _, a := range replicaArgs(t, objs) {
					if strings.HasPrefix(a, "/models") {
						t.Errorf("no model path given, but args have %q", a)
					}
				}
			}},
		{"no-rbac", []string{"rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=default"}, nil, nil},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out, err := render(t, v.sets...)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := decodeStream(out, v.name)
			if err != nil {
				t.Fatal(err)
			}
			for k, n := range v.kinds {
				if got := len(find(objs, k, "")); got != n {
					t.Errorf("%d %s, want %d", got, k, n)
				}
			}
			if v.name == "no-rbac" {
				return // the router's account is the cluster's: nothing to check it against
			}
			checkObjects(t, objs, "llmcloud")
			if v.check != nil {
				v.check(t, objs)
			}
		})
	}
	for _, bad := range [][]string{
		{"autoscaling.hpa.enabled=true", "autoscaling.keda.enabled=true"},
		{"model.volume.type=nfs"},
	} {
		if _, err := render(t, bad...); err == nil {
			t.Errorf("helm template %v succeeded, want an error", bad)
		} else {
			t.Logf("%v: %v", bad, err)
		}
	}
}

func replicaArgs(t *testing.T, objs []object) []string {
	t.Helper()
	for _, o := range find(objs, "Deployment", "") {
		if args := o.Generic["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["args"].([]any); args[0] == "serve" {
			var s []string
			for _, a := range args {
				s = append(s, a.(string))
			}
			return s
		}
	}
	t.Fatal("no serve Deployment")
	return nil
}

func wantArgs(t *testing.T, objs []object, want ...string) {
	t.Helper()
	args := " " + strings.Join(replicaArgs(t, objs), " ") + " "
	for _, w := range want {
		if !strings.Contains(args, " "+w+" ") {
			t.Errorf("serve args %q lack %q", args, w)
		}
	}
}

// writePlainManifests rewrites dir/llmcloud.yaml (dir is relative to the repository root)
// from the chart's default render (scripts/deploy-check.sh --update).
func writePlainManifests(t *testing.T, dir string) {
	out, err := render(t)
	if err != nil {
		t.Fatal(err)
	}
	head := "# llmcloud in namespace llmcloud: `helm template llmcloud deploy/helm/llmcloud --namespace llmcloud`\n" +
		"# with the default values (written by scripts/deploy-check.sh --update; deploy/helm_test.go checks\n" +
		"# they agree). Apply after 00-namespace.yaml: kubectl apply -f deploy/k8s/\n"
	if err := os.WriteFile(filepath.Join("..", dir, "llmcloud.yaml"), append([]byte(head), out...), 0o644); err != nil {
		t.Fatal(err)
	}
}
