package deploy_test

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The checks of a tensor/pipeline-parallel serving group (parallel_test.go runs them on
// deploy/k8s/parallel/ and on the chart): one leader and its workers, each rank's pod told the
// same world size, the rendezvous address and its own rank, the leader's Service selecting
// rank 0 (its HTTP) and none the workers.

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
