package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// object is one decoded manifest document: its typed value and its generic form (for
// comparing renders).
type object struct {
	Kind, Name, Namespace string
	Source                string // file (and document number)
	Typed                 any    // *appsv1.Deployment, *corev1.Service, ...
	Generic               map[string]any
}

// kinds maps apiVersion/kind to a fresh typed value to decode into.
var kinds = map[string]func() any{
	"v1/Namespace":             func() any { return &corev1.Namespace{} },
	"v1/ConfigMap":             func() any { return &corev1.ConfigMap{} },
	"v1/Service":               func() any { return &corev1.Service{} },
	"v1/ServiceAccount":        func() any { return &corev1.ServiceAccount{} },
	"v1/PersistentVolumeClaim": func() any { return &corev1.PersistentVolumeClaim{} },
	"apps/v1/Deployment":       func() any { return &appsv1.Deployment{} },
	"apps/v1/StatefulSet":      func() any { return &appsv1.StatefulSet{} },
	"leaderworkerset.x-k8s.io/v1/LeaderWorkerSet": func() any { return &leaderWorkerSet{} },
	"batch/v1/Job":                             func() any { return &batchv1.Job{} },
	"rbac.authorization.k8s.io/v1/Role":        func() any { return &rbacv1.Role{} },
	"rbac.authorization.k8s.io/v1/RoleBinding": func() any { return &rbacv1.RoleBinding{} },
	"autoscaling/v2/HorizontalPodAutoscaler":   func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"keda.sh/v1alpha1/ScaledObject":            func() any { return &scaledObject{} },
}

var docSep = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocs splits a YAML stream into documents, dropping those with only comments.
func splitDocs(data []byte) [][]byte {
	var out [][]byte
	for _, d := range docSep.Split(string(data), -1) {
		for _, line := range strings.Split(d, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				out = append(out, []byte(d))
				break
			}
		}
	}
	return out
}

// decodeStream strictly decodes every document of a YAML stream: an unknown apiVersion/kind,
// an unknown or duplicated field, or a value of the wrong type is an error.
func decodeStream(data []byte, source string) ([]object, error) {
	var objs []object
	for i, doc := range splitDocs(data) {
		src := fmt.Sprintf("%s#%d", source, i)
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &head); err != nil {
			return nil, fmt.Errorf("%s: %v", src, err)
		}
		mk, ok := kinds[head.APIVersion+"/"+head.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: unknown apiVersion/kind %q", src, head.APIVersion+"/"+head.Kind)
		}
		typed := mk()
		if err := yaml.UnmarshalStrict(doc, typed); err != nil {
			return nil, fmt.Errorf("%s (%s %s): %v", src, head.Kind, head.Metadata.Name, err)
		}
		var generic map[string]any
		if err := yaml.Unmarshal(doc, &generic); err != nil {
			return nil, fmt.Errorf("%s: %v", src, err)
		}
		if head.Metadata.Name == "" {
			return nil, fmt.Errorf("%s: %s without metadata.name", src, head.Kind)
		}
		objs = append(objs, object{Kind: head.Kind, Name: head.Metadata.Name, Namespace: head.Metadata.Namespace,
			Source: src, Typed: typed, Generic: generic})
	}
	return objs, nil
}

// readManifests decodes every *.yaml file of dir (in name order).
func readManifests(t *testing.T, dir string) []object {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s (%v)", dir, err)
	}
	var all []object
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decodeStream(data, f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, objs...)
	}
	return all
}

// find returns the objects of kind (optionally with name).
func find(objs []object, kind, name string) []object {
	var out []object
	for _, o := range objs {
		if o.Kind == kind && (name == "" || o.Name == name) {
			out = append(out, o)
		}
	}
	return out
}

// TestStrictDecoding: the decoder the checks rely on rejects what kubectl's schema validation
// would: a misspelled field, a field at the wrong level, a string where a number goes, an
// unknown kind.
func TestStrictDecoding(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("k8s", "llmcloud.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeStream(data, "llmcloud.yaml"); err != nil {
		t.Fatalf("the plain manifests do not decode: %v", err)
	}
	for _, c := range []struct{ from, to string }{
		{"containerPort:", "containerPrt:"},
		{"  replicas: 2", "  replica: 2"},
		{"periodSeconds: 5", `periodSeconds: "five"`},
		{"clusterIP: None", "clusterIP: None\n  replicas: 3"}, // a Deployment field in a Service
		{"kind: ConfigMap", "kind: ConfigMapp"},
	} {
		if !bytes.Contains(data, []byte(c.from)) {
			t.Fatalf("the manifests no longer contain %q: update this test", c.from)
		}
		bad := bytes.Replace(data, []byte(c.from), []byte(c.to), 1)
		if _, err := decodeStream(bad, "mutated"); err == nil {
			t.Errorf("%q -> %q decoded without error", c.from, c.to)
		} else {
			t.Logf("%q -> %q: %v", c.from, c.to, firstLine(err.Error()))
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
