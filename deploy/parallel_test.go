package deploy_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// groupProblems checks the serving group of objs (a LeaderWorkerSet, or a leader and a worker
// StatefulSet) and returns its world size (0: no group found).
func groupProblems(t *testing.T, objs []object, namespace string) (int, problems) {
	t.Helper()
	var p problems
	var pods []rankPod
	var world int
	var wantHost, wantPort string // rank 0's rendezvous (a host ending in "." is a prefix)
	lws := find(objs, "LeaderWorkerSet", "")
	sts := find(objs, "StatefulSet", "")
	switch {
	case len(lws) == 1 && len(sts) == 0:
		l := lws[0].Typed.(*leaderWorkerSet)
		lt := l.Spec.LeaderWorkerTemplate
		if lt.Size == nil || lt.LeaderTemplate == nil {
			p.add("LeaderWorkerSet %s: size and leaderTemplate are required", l.Name)
			return 0, p
		}
		world = int(*lt.Size)
		if lt.RestartPolicy != "RecreateGroupOnPodRestart" {
			p.add("LeaderWorkerSet %s: restartPolicy %q, want RecreateGroupOnPodRestart (a dead rank fails the group)", l.Name, lt.RestartPolicy)
		}
		if l.Spec.StartupPolicy == "LeaderReady" {
			p.add("LeaderWorkerSet %s: startupPolicy LeaderReady never starts the workers (the leader is ready only once they joined)", l.Name)
		}
		pods = []rankPod{
			{"LeaderWorkerSet " + l.Name + " leader", *lt.LeaderTemplate, true, "0", lwsEnv},
			{"LeaderWorkerSet " + l.Name + " worker", lt.WorkerTemplate, false, "$(LWS_WORKER_INDEX)", lwsEnv},
		}
		wantHost, wantPort = "$(LWS_LEADER_ADDRESS)", distPort(&p, pods[0])
	case len(sts) == 2 && len(lws) == 0:
		var leader, worker *appsv1.StatefulSet
		for _, o := range sts {
			s := o.Typed.(*appsv1.StatefulSet)
			if len(s.Spec.Template.Spec.Containers) > 0 && slices.Contains(s.Spec.Template.Spec.Containers[0].Args, "0") {
				leader = s
			} else {
				worker = s
			}
		}
		if leader == nil || worker == nil {
			p.add("StatefulSets: want one running --rank 0 and one running the other ranks")
			return 0, p
		}
		world = statefulSetProblems(&p, leader, worker, objs)
		pods = []rankPod{
			{"StatefulSet " + leader.Name, leader.Spec.Template, true, "0", nil},
			{"StatefulSet " + worker.Name, worker.Spec.Template, false, podIndexVar(&p, worker), nil},
		}
		wantHost = leader.Name + "-0." + leader.Spec.ServiceName + "." + namespace + ".svc." // + the cluster domain
		wantPort = distPort(&p, pods[0])
	default:
		p.add("%d LeaderWorkerSets and %d StatefulSets: want one LeaderWorkerSet or two StatefulSets", len(lws), len(sts))
		return 0, p
	}
	serveFlags := flagNames(t, "cmd/llmcloud/serve.go", "cmd/llmcloud/modelflags.go", "cmd/llmcloud/serve_parallel.go")
	configKeys := map[string]map[string]string{}
	for _, o := range find(objs, "ConfigMap", "") {
		configKeys[o.Name] = o.Typed.(*corev1.ConfigMap).Data
	}
	var base []string // the leader's args without the rank: every rank runs the same
	for _, rp := range pods {
		args := rankProblems(&p, rp, world, wantHost, wantPort, serveFlags, configKeys)
		if base == nil {
			base = args
		} else if !slices.Equal(base, args) {
			p.add("%s: args %q differ from the leader's %q beyond --rank", rp.where, args, base)
		}
	}
	leaderServiceProblems(&p, objs, pods[0].tmpl.Labels, pods[1].tmpl.Labels)
	return world, p
}

// distPort is the leader container's port named dist (the rendezvous store).
func distPort(p *problems, leader rankPod) string {
	for _, cp := range leader.tmpl.Spec.Containers[0].Ports {
		if cp.Name == "dist" {
			return itoa(cp.ContainerPort)
		}
	}
	p.add("%s: no container port named dist for the rendezvous store", leader.where)
	return "?"
}

// statefulSetProblems: the leader StatefulSet is one pod, the workers world-1 pods with
// ordinals from 1 (the pod index is the rank), both under one headless Service that
// publishes not-ready pods (rank 0 is not ready before the others reach it by name).
func statefulSetProblems(p *problems, leader, worker *appsv1.StatefulSet, objs []object) int {
	flags, _ := parseArgs(leader.Spec.Template.Spec.Containers[0].Args[1:])
	world, _ := strconv.Atoi(flags["world-size"])
	if leader.Spec.Replicas == nil || *leader.Spec.Replicas != 1 {
		p.add("StatefulSet %s: replicas %v, want 1 (rank 0)", leader.Name, leader.Spec.Replicas)
	}
	if worker.Spec.Replicas == nil || int(*worker.Spec.Replicas) != world-1 {
		p.add("StatefulSet %s: replicas %v, want %d (the world size - 1)", worker.Name, worker.Spec.Replicas, world-1)
	}
	if worker.Spec.Ordinals == nil || worker.Spec.Ordinals.Start != 1 {
		p.add("StatefulSet %s: ordinals.start must be 1 so that the pod index is the rank", worker.Name)
	}
	if worker.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		p.add("StatefulSet %s: podManagementPolicy %q, want Parallel (the ranks start together)", worker.Name, worker.Spec.PodManagementPolicy)
	}
	if leader.Spec.ServiceName == "" || leader.Spec.ServiceName != worker.Spec.ServiceName {
		p.add("StatefulSets %s and %s: serviceName %q and %q, want one headless Service", leader.Name, worker.Name, leader.Spec.ServiceName, worker.Spec.ServiceName)
	}
	for _, s := range []*appsv1.StatefulSet{leader, worker} {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil {
			p.add("StatefulSet %s: %v", s.Name, err)
		} else if !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
			p.add("StatefulSet %s: selector does not select its pod template", s.Name)
		}
	}
	svcs := find(objs, "Service", leader.Spec.ServiceName)
	if len(svcs) != 1 {
		p.add("StatefulSet %s: serviceName %q is not a Service of the install", leader.Name, leader.Spec.ServiceName)
		return world
	}
	svc := svcs[0].Typed.(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		p.add("Service %s: the ranks' Service must be headless with publishNotReadyAddresses", svc.Name)
	}
	for _, s := range []*appsv1.StatefulSet{leader, worker} {
		if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(s.Spec.Template.Labels)) {
			p.add("Service %s does not select the pods of StatefulSet %s", svc.Name, s.Name)
		}
	}
	return world
}

// podIndexVar is the $(VAR) of the worker container's variable set from the pod-index label.
func podIndexVar(p *problems, worker *appsv1.StatefulSet) string {
	for _, e := range worker.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.labels['apps.kubernetes.io/pod-index']" {
			return "$(" + e.Name + ")"
		}
	}
	p.add("StatefulSet %s: no variable from the pod-index label for --rank", worker.Name)
	return "?"
}

// rankProblems checks one rank's pod template and returns its args with the --rank value
// blanked.
func rankProblems(p *problems, rp rankPod, world int, wantHost, wantPort string, serveFlags map[string]bool, configKeys map[string]map[string]string) []string {
	pod := rp.tmpl.Spec
	if len(pod.Containers) != 1 || len(pod.Containers[0].Args) == 0 || pod.Containers[0].Args[0] != "serve" {
		p.add("%s: want one container running llmcloud serve", rp.where)
		return nil
	}
	c := pod.Containers[0]
	flags, pos := parseArgs(c.Args[1:])
	for f := range flags {
		if !serveFlags[f] {
			p.add("%s: llmcloud serve has no flag --%s", rp.where, f)
		}
	}
	if len(pos) > 1 {
		p.add("%s: serve takes one model, got %q", rp.where, pos)
	}
	tp, _ := strconv.Atoi(flags["tensor-parallel-size"])
	pp, _ := strconv.Atoi(flags["pipeline-parallel-size"])
	if flags["world-size"] != strconv.Itoa(world) {
		p.add("%s: --world-size %s but the group has %d pods", rp.where, flags["world-size"], world)
	}
	if tp*pp != world {
		p.add("%s: --tensor-parallel-size %d x --pipeline-parallel-size %d is not the group's %d pods", rp.where, tp, pp, world)
	}
	if world < 2 {
		p.add("%s: a group of %d", rp.where, world)
	}
	host, port, err := net.SplitHostPort(flags["distributed-init"])
	hostOK := host == wantHost || strings.HasSuffix(wantHost, ".") && strings.HasPrefix(host, wantHost) && len(host) > len(wantHost)
	if err != nil || !hostOK || port != wantPort {
		p.add("%s: --distributed-init %q, want %s%s:%s (rank 0's address and rendezvous port)", rp.where, flags["distributed-init"], wantHost,
			map[bool]string{true: "<cluster domain>"}[strings.HasSuffix(wantHost, ".")], wantPort)
	}
	if flags["rank"] != rp.wantRank {
		p.add("%s: --rank %q, want %q", rp.where, flags["rank"], rp.wantRank)
	}
	// Probes: the leader's /health is the group's (it answers once every rank has joined);
	// a worker serves no HTTP.
	ports := map[string]int32{}
	for _, cp := range c.Ports {
		ports[cp.Name] = cp.ContainerPort
	}
	probes := []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe}
	if rp.leader {
		r := c.ReadinessProbe
		if r == nil || r.HTTPGet == nil || r.HTTPGet.Path != "/health" || r.HTTPGet.Port.String() != "http" {
			p.add("%s: readiness must be GET /health on port http", rp.where)
		}
		if itoa(ports["http"]) != flags["port"] {
			p.add("%s: --port %s is not the leader's http port %d", rp.where, flags["port"], ports["http"])
		}
		for _, pr := range probes {
			if pr != nil && pr.HTTPGet != nil && ports[pr.HTTPGet.Port.String()] == 0 {
				p.add("%s: probe port %q is not a container port", rp.where, pr.HTTPGet.Port.String())
			}
		}
	} else if slices.ContainsFunc(probes, func(pr *corev1.Probe) bool { return pr != nil }) {
		p.add("%s: a worker rank serves no HTTP: no probes", rp.where)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		p.add("%s: CPU and memory requests and a memory limit are required", rp.where)
	}
	volumes := map[string]bool{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = true
	}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			p.add("%s: mount %q has no volume", rp.where, m.Name)
		}
	}
	defined := envDefined(p, rp.where, c, configKeys, rp.injected)
	out := slices.Clone(c.Args)
	for i, a := range out {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				p.add("%s: arg %q refers to undefined variable %s", rp.where, a, m[1])
			}
		}
		if i > 0 && (out[i-1] == "--rank" || out[i-1] == "-rank") {
			out[i] = "R"
		}
	}
	return out
}

// leaderServiceProblems: some Service sends HTTP to the leaders, and none to the workers.
func leaderServiceProblems(p *problems, objs []object, leader, worker map[string]string) {
	toLeader := false
	for _, o := range find(objs, "Service", "") {
		s := o.Typed.(*corev1.Service)
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		http := slices.ContainsFunc(s.Spec.Ports, func(sp corev1.ServicePort) bool { return sp.TargetPort.String() == "http" })
		if !http {
			continue
		}
		if sel.Matches(labels.Set(worker)) {
			p.add("Service %s sends HTTP to the worker ranks, which serve none", s.Name)
		}
		toLeader = toLeader || sel.Matches(labels.Set(leader))
	}
	if !toLeader {
		p.add("no Service selects the leader pods' http port")
	}
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
