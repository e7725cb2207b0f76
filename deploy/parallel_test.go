package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The tensor/pipeline-parallel serving groups: deploy/k8s/parallel/ (a LeaderWorkerSet, or two
// StatefulSets) and the chart with parallel.* set. A group is T·P pods started with
// `llmcloud serve --distributed-init HOST:PORT --rank R --world-size N`; rank 0 serves HTTP
// and the rendezvous store on HOST:PORT (cmd/llmcloud/serve_parallel.go).

// rankPod is one pod template of a group.
type rankPod struct {
	where    string
	tmpl     corev1.PodTemplateSpec
	leader   bool
	wantRank string          // the --rank value: "0" or a $(VAR) the controller fills in
	injected map[string]bool // variables the controller sets (LWS_*)
}

// TestParallelManifests: both forms of deploy/k8s/parallel/ decode strictly and are one
// working group of 2x2 ranks each.
func TestParallelManifests(t *testing.T) {
	for _, f := range []string{"llmcloud-tp-lws.yaml", "llmcloud-tp-statefulset.yaml"} {
		t.Run(f, func(t *testing.T) {
			objs := readParallel(t, f, nil)
			world, probs := groupProblems(t, objs, "llmcloud")
			for _, p := range probs {
				t.Error(p)
			}
			if world != 4 {
				t.Errorf("world size %d, want 4 (T=2 x P=2)", world)
			}
		})
	}
}

// TestParallelChecksCatchMistakes: a group that would not form, or would serve from the
// wrong pod, is reported.
func TestParallelChecksCatchMistakes(t *testing.T) {
	for _, c := range []struct{ file, from, to, want string }{
		{"lws", `--rank, "$(LWS_WORKER_INDEX)"`, `--rank, "0"`, `--rank "0", want "$(LWS_WORKER_INDEX)"`},
		{"lws", "size: 4", "size: 3", "--world-size 4 but the group has 3"},
		{"lws", "restartPolicy: RecreateGroupOnPodRestart", "restartPolicy: None", "RecreateGroupOnPodRestart"},
		{"lws", "startupPolicy: LeaderCreated", "startupPolicy: LeaderReady", "LeaderReady"},
		{"lws", `"$(LWS_LEADER_ADDRESS):29500"`, `"$(LWS_LEADER_ADDRESS):29501"`, "--distributed-init"},
		{"lws", `--pipeline-parallel-size, "2"`, `--pipeline-parallel-size, "1"`, "x --pipeline-parallel-size"},
		{"lws", "--shutdown-timeout, \"30\",\n              --tensor", "--shutdown-timeout, \"31\",\n              --tensor", "differ"},
		{"lws", "    app.kubernetes.io/component: leader\n  ports", "    app.kubernetes.io/component: worker\n  ports", "no Service selects the leader"},
		{"lws", "--port, \"8000\"", "--port, \"8001\"", "not the leader's http port"},
		{"statefulset", "replicas: 3 # world size - 1", "replicas: 2", "want 3 (the world size - 1)"},
		{"statefulset", "publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "publishNotReadyAddresses"},
		{"statefulset", "ordinals: {start: 1}", "ordinals: {start: 0}", "ordinals.start"},
		{"statefulset", `"llmcloud-tp-leader-0.llmcloud-tp-ranks`, `"llmcloud-tp-leader-1.llmcloud-tp-ranks`, "--distributed-init"},
		{"statefulset", "metadata.labels['apps.kubernetes.io/pod-index']", "metadata.name", "pod-index"},
	} {
		f := "llmcloud-tp-" + c.file + ".yaml"
		objs := readParallel(t, f, func(data []byte) []byte {
			if !bytes.Contains(data, []byte(c.from)) {
				t.Fatalf("%s no longer contains %q: update this test", f, c.from)
			}
			return bytes.Replace(data, []byte(c.from), []byte(c.to), 1)
		})
		world, probs := groupProblems(t, objs, "llmcloud")
		if world == 0 || !strings.Contains(strings.Join(probs, "\n"), c.want) {
			t.Errorf("%s: %q -> %q: world %d, problems %q, want one with %q", f, c.from, c.to, world, probs, c.want)
		}
	}
}

// readParallel decodes deploy/k8s/parallel/NAME, changed by mutate when it is not nil.
func readParallel(t *testing.T, name string, mutate func([]byte) []byte) []object {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("k8s", "parallel", name))
	if err != nil {
		t.Fatal(err)
	}
	if mutate != nil {
		data = mutate(data)
	}
	objs, err := decodeStream(data, name)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// testHelmParallel (TestHelm): parallel.* renders a group per replica, LWS or StatefulSets,
// that passes the checks above; T=P=1 renders the plain Deployment; contradictory values fail.
func testHelmParallel(t *testing.T) {
	for _, v := range []struct {
		name  string
		sets  []string
		world int
		kinds map[string]int
	}{
		{"lws-2x2", []string{"parallel.tensorParallelSize=2", "parallel.pipelineParallelSize=2"}, 4,
			map[string]int{"LeaderWorkerSet": 1, "StatefulSet": 0, "Deployment": 1}},
		{"lws-4x1-worldSize", []string{"parallel.tensorParallelSize=4", "parallel.worldSize=4", "replica.extraArgs={--kv-cache-memory,1GiB}"}, 4,
			map[string]int{"LeaderWorkerSet": 1, "Deployment": 1}},
		{"lws-2x2-experts-micro", []string{"parallel.tensorParallelSize=2", "parallel.pipelineParallelSize=2",
			"parallel.enableExpertParallel=true", "parallel.pipelineMicroBatches=4", "parallel.pipelineLayerPartition=3\\,1"}, 4,
			map[string]int{"LeaderWorkerSet": 1, "Deployment": 1}},
		{"statefulset-2x2", []string{"parallel.tensorParallelSize=2", "parallel.pipelineParallelSize=2", "parallel.kind=statefulset", "replica.replicas=1"}, 4,
			map[string]int{"LeaderWorkerSet": 0, "StatefulSet": 2, "Deployment": 1}},
		{"statefulset-1x3-hostPath", []string{"parallel.pipelineParallelSize=3", "parallel.kind=statefulset", "replica.replicas=1", "model.volume.type=hostPath"}, 3,
			map[string]int{"StatefulSet": 2, "Deployment": 1}},
		{"plain-1x1", []string{"parallel.tensorParallelSize=1", "parallel.pipelineParallelSize=1", "parallel.kind=statefulset"}, 0,
			map[string]int{"LeaderWorkerSet": 0, "StatefulSet": 0, "Deployment": 2}},
	} {
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
			if v.world == 0 {
				checkObjects(t, objs, "llmcloud")
				return
			}
			world, probs := groupProblems(t, objs, "llmcloud")
			for _, p := range probs {
				t.Error(p)
			}
			if world != v.world {
				t.Errorf("world size %d, want %d", world, v.world)
			}
			for _, o := range objs {
				if o.Namespace != "llmcloud" {
					t.Errorf("%s %s: namespace %q", o.Kind, o.Name, o.Namespace)
				}
			}
			// The router discovers the leaders (only they serve HTTP) through its Service.
			for _, o := range find(objs, "Deployment", "") {
				c := o.Typed.(*appsv1.Deployment).Spec.Template.Spec.Containers[0]
				flags, _ := parseArgs(c.Args[1:])
				if c.Args[0] != "router" {
					t.Errorf("Deployment %s runs %q: the replicas are the group", o.Name, c.Args[0])
					continue
				}
				svcName := strings.TrimPrefix(flags["k8s-selector"], "kubernetes.io/service-name=")
				svcs := find(objs, "Service", svcName)
				if len(svcs) != 1 {
					t.Fatalf("router --k8s-selector %q names no Service", flags["k8s-selector"])
				}
				sel := labels.SelectorFromSet(svcs[0].Typed.(*corev1.Service).Spec.Selector)
				leader, worker := groupTemplates(objs)
				if !sel.Matches(labels.Set(leader)) || sel.Matches(labels.Set(worker)) {
					t.Errorf("the router's Service %s selects %v: want the leaders %v, not the workers %v", svcName, sel, leader, worker)
				}
			}
		})
	}
	for _, bad := range [][]string{
		{"parallel.tensorParallelSize=2", "parallel.pipelineParallelSize=2", "parallel.worldSize=3"},
		{"parallel.tensorParallelSize=0"},
		{"parallel.tensorParallelSize=2", "parallel.kind=deployment"},
		{"parallel.tensorParallelSize=2", "parallel.kind=statefulset"}, // replica.replicas 2
		{"parallel.tensorParallelSize=2", "autoscaling.hpa.enabled=true"},
	} {
		if _, err := render(t, bad...); err == nil {
			t.Errorf("helm template %v succeeded, want an error", bad)
		} else {
			t.Logf("%v: %v", bad, err)
		}
	}
	args := []string{"lint", "--strict", chartDir, "--namespace", "llmcloud", "--set", "parallel.tensorParallelSize=2"}
	if out, err := helm(t, args...); err != nil {
		t.Errorf("helm %v: %v\n%s", args, err, out)
	}
}

// groupTemplates returns the leader's and the workers' pod labels of the group in objs.
func groupTemplates(objs []object) (leader, worker map[string]string) {
	for _, o := range find(objs, "LeaderWorkerSet", "") {
		lt := o.Typed.(*leaderWorkerSet).Spec.LeaderWorkerTemplate
		return lt.LeaderTemplate.Labels, lt.WorkerTemplate.Labels
	}
	for _, o := range find(objs, "StatefulSet", "") {
		s := o.Typed.(*appsv1.StatefulSet)
		if strings.HasSuffix(s.Name, "-leader") {
			leader = s.Spec.Template.Labels
		} else {
			worker = s.Spec.Template.Labels
		}
	}
	return leader, worker
}
