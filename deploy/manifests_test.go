package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlainManifests: deploy/k8s/ decodes strictly into the Kubernetes types and forms one
// consistent install in namespace llmcloud.
func TestPlainManifests(t *testing.T) {
	objs := readManifests(t, "k8s")
	want := map[string]int{"Namespace": 1, "ConfigMap": 1, "ServiceAccount": 1, "Role": 1, "RoleBinding": 1,
		"Deployment": 2, "Service": 2}
	got := map[string]int{}
	for _, o := range objs {
		got[o.Kind]++
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%d %s objects, want %d", got[k], k, n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	if len(find(objs, "Namespace", "llmcloud")) != 1 {
		t.Errorf("no Namespace llmcloud")
	}
	checkObjects(t, objs, "llmcloud")
}

// TestChecksCatchMistakes: mistakes that decode fine but break the install are each reported.
func TestChecksCatchMistakes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("k8s", "llmcloud.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"- --policy\n", "- --polcy\n", "no flag --polcy"},
		{"- --max-num-seqs\n", "- --max-seqs\n", "no flag --max-seqs"},
		{"kubernetes.io/service-name=llmcloud-replicas", "kubernetes.io/service-name=llmcloud-replica", "names no Service"},
		{"$(ROUTER_POLICY)", "$(ROUTER_POLICIES)", "undefined variable ROUTER_POLICIES"},
		{"resources: [endpointslices]", "resources: [endpoints]", "may not discovery.k8s.io|endpointslices|list"},
		{"app.kubernetes.io/component: router\n  ports:", "app.kubernetes.io/component: routr\n  ports:", "selects no pods"},
		{"targetPort: http", "targetPort: metrics", "targetPort metrics is not a port"},
		{"name: llmcloud-config\n          ports:", "name: llmcloud-conf\n          ports:", `ConfigMap "llmcloud-conf" is not in the install`},
		{"            - name: tmp\n", "            - name: scratch\n", `mount "scratch" has no volume`},
	} {
		if !bytes.Contains(data, []byte(c.from)) {
			t.Fatalf("the manifests no longer contain %q: update this test", c.from)
		}
		objs, err := decodeStream(bytes.Replace(data, []byte(c.from), []byte(c.to), 1), "mutated")
		if err != nil {
			t.Fatalf("%q -> %q: %v", c.from, c.to, err)
		}
		objs = append(objs, readManifests(t, "k8s")[0]) // the Namespace
		probs := objectProblems(t, objs, "llmcloud")
		if !strings.Contains(strings.Join(probs, "\n"), c.want) {
			t.Errorf("%q -> %q: problems %q, want one with %q", c.from, c.to, probs, c.want)
		}
	}
}
