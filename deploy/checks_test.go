package deploy_test

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// routerFlags are the flags the chart gives `llmcloud router` (the router's interface as agreed).
var routerFlags = []string{"host", "port", "policy", "discovery", "k8s-namespace", "k8s-selector",
	"k8s-port", "health-interval", "request-timeout", "max-retries"}

var envRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// checkObjects checks what the API server cannot: that the objects of one install refer to
// each other correctly and run llmcloud with flags it has.
func checkObjects(t *testing.T, objs []object, namespace string) {
	t.Helper()
	for _, e := range objectProblems(t, objs, namespace) {
		t.Error(e)
	}
}

// problems collects what is wrong with an install.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

// envDefined is the set of variables container c of where sees: its env, the keys of the
// ConfigMaps it takes with envFrom (one not in the install is a problem) and injected ones.
func envDefined(p *problems, where string, c corev1.Container, configKeys map[string]map[string]string, injected map[string]bool) map[string]bool {
	defined := map[string]bool{}
	for k := range injected {
		defined[k] = true
	}
	for _, e := range c.Env {
		defined[e.Name] = true
	}
	for _, ef := range c.EnvFrom {
		if ef.ConfigMapRef == nil {
			continue
		}
		keys, ok := configKeys[ef.ConfigMapRef.Name]
		if !ok {
			p.add("%s: ConfigMap %q is not in the install", where, ef.ConfigMapRef.Name)
		}
		for k := range keys {
			defined[ef.Prefix+k] = true
		}
	}
	return defined
}

// objectProblems lists what is wrong with the objects of one install (none: nil).
func objectProblems(t *testing.T, objs []object, namespace string) problems {
	t.Helper()
	var p problems
	exported := exportedMetrics(t)
	serveFlags := flagNames(t, "cmd/llmcloud/serve.go", "cmd/llmcloud/modelflags.go")
	rtFlags := flagNames(t, "cmd/llmcloud/router.go")
	configKeys := map[string]map[string]string{}
	for _, o := range find(objs, "ConfigMap", "") {
		configKeys[o.Name] = o.Typed.(*corev1.ConfigMap).Data
	}
	for _, o := range objs {
		if o.Kind != "Namespace" && o.Namespace != namespace {
			p.add("%s %s: namespace %q, want %q", o.Kind, o.Name, o.Namespace, namespace)
		}
	}
	deployments := map[string]*appsv1.Deployment{}
	for _, o := range find(objs, "Deployment", "") {
		d := o.Typed.(*appsv1.Deployment)
		deployments[d.Name] = d
		checkDeployment(&p, d, objs, configKeys, serveFlags, rtFlags)
	}
	if len(deployments) != 2 {
		p.add("%d Deployments, want 2 (router and replica)", len(deployments))
	}
	for _, o := range find(objs, "Service", "") {
		checkService(&p, o.Typed.(*corev1.Service), deployments)
	}
	checkRBAC(&p, objs)
	for _, o := range find(objs, "HorizontalPodAutoscaler", "") {
		h := o.Typed.(*autoscalingv2.HorizontalPodAutoscaler)
		if h.Spec.ScaleTargetRef.Kind != "Deployment" || deployments[h.Spec.ScaleTargetRef.Name] == nil {
			p.add("HPA %s scales %s %q, not a Deployment of this install", h.Name, h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name)
		}
		for _, m := range h.Spec.Metrics {
			if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods == nil {
				p.add("HPA %s: metric of type %s, want Pods", h.Name, m.Type)
				continue
			}
			// prometheus-adapter serves vllm:NAME as vllm_NAME (deploy/prometheus-adapter-values.yaml).
			name, ok := strings.CutPrefix(m.Pods.Metric.Name, "vllm_")
			if !ok || !exported["vllm:"+name] {
				p.add("HPA %s: metric %q is not an exported vllm: metric as prometheus-adapter names it", h.Name, m.Pods.Metric.Name)
			}
		}
	}
	for _, o := range find(objs, "ScaledObject", "") {
		s := o.Typed.(*scaledObject)
		if deployments[s.Spec.ScaleTargetRef.Name] == nil {
			p.add("ScaledObject %s scales %q, not a Deployment of this install", s.Name, s.Spec.ScaleTargetRef.Name)
		}
		if len(s.Spec.Triggers) == 0 {
			p.add("ScaledObject %s has no trigger", s.Name)
		}
		for _, tr := range s.Spec.Triggers {
			if tr.Type != "prometheus" {
				p.add("ScaledObject %s: trigger %q, want prometheus", s.Name, tr.Type)
			}
			for k := range tr.Metadata {
				if !prometheusTriggerKeys[k] {
					p.add("ScaledObject %s: unknown prometheus trigger key %q", s.Name, k)
				}
			}
			for _, k := range []string{"serverAddress", "query", "threshold"} {
				if tr.Metadata[k] == "" {
					p.add("ScaledObject %s: prometheus trigger without %s", s.Name, k)
				}
			}
			for _, m := range metricName.FindAllString(tr.Metadata["query"], -1) {
				if !exported[m] {
					p.add("ScaledObject %s: query uses %s, which nobody exports", s.Name, m)
				}
			}
		}
	}
	return p
}

func checkDeployment(p *problems, d *appsv1.Deployment, objs []object, configKeys map[string]map[string]string, serveFlags, rtFlags map[string]bool) {
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(d.Spec.Template.Labels)) {
		p.add("Deployment %s: selector %v does not select its pod template %v (%v)", d.Name, d.Spec.Selector, d.Spec.Template.Labels, err)
	}
	pod := d.Spec.Template.Spec
	if sa := pod.ServiceAccountName; sa != "" && len(find(objs, "ServiceAccount", sa)) == 0 {
		p.add("Deployment %s: service account %q is not in the install", d.Name, sa)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	if len(pod.Containers) != 1 {
		p.add("Deployment %s: %d containers, want 1", d.Name, len(pod.Containers))
		return
	}
	c := pod.Containers[0]
	if c.Image == "" || len(c.Args) == 0 {
		p.add("Deployment %s: no image or args", d.Name)
		return
	}
	ports := map[string]int32{}
	for _, cp := range c.Ports {
		ports[cp.Name] = cp.ContainerPort
	}
	for name, pr := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if pr == nil {
			if name != "startup" {
				p.add("Deployment %s: no %s probe", d.Name, name)
			}
			continue
		}
		var port string
		switch {
		case pr.HTTPGet != nil:
			port = pr.HTTPGet.Port.String()
			if pr.HTTPGet.Path != "/health" {
				p.add("Deployment %s: %s probe on %s, want /health", d.Name, name, pr.HTTPGet.Path)
			}
		case pr.TCPSocket != nil:
			port = pr.TCPSocket.Port.String()
		default:
			p.add("Deployment %s: %s probe neither HTTP nor TCP", d.Name, name)
		}
		if _, ok := ports[port]; !ok {
			p.add("Deployment %s: %s probe port %q is not a container port", d.Name, name, port)
		}
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil {
		p.add("Deployment %s: readiness must be GET /health", d.Name)
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		p.add("Deployment %s: CPU and memory requests and a memory limit are required", d.Name)
	}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			p.add("Deployment %s: mount %q has no volume", d.Name, m.Name)
		}
	}
	// Every $(VAR) in the args is defined, by env or by a ConfigMap of the install.
	defined := envDefined(p, "Deployment "+d.Name, c, configKeys, nil)
	for _, a := range c.Args {
		for _, m := range envRef.FindAllStringSubmatch(a, -1) {
			if !defined[m[1]] {
				p.add("Deployment %s: arg %q refers to undefined variable %s", d.Name, a, m[1])
			}
		}
	}
	// The subcommand's flags exist, and the ports agree.
	flags, pos := parseArgs(c.Args[1:])
	known := serveFlags
	switch c.Args[0] {
	case "serve":
		if len(pos) > 1 {
			p.add("Deployment %s: serve takes one model, got %q", d.Name, pos)
		}
		if flags["port"] != "" && flags["port"] != itoa(ports["http"]) {
			p.add("Deployment %s: --port %s but container port %d", d.Name, flags["port"], ports["http"])
		}
	case "router":
		known = rtFlags
		var got []string
		for f := range flags {
			got = append(got, f)
		}
		slices.Sort(got)
		want := slices.Clone(routerFlags)
		slices.Sort(want)
		if !slices.Equal(got, want) || len(pos) != 0 {
			p.add("Deployment %s: router flags %v (args %q), want exactly %v", d.Name, got, pos, want)
		}
		if flags["port"] != itoa(ports["http"]) {
			p.add("Deployment %s: --port %s but container port %d", d.Name, flags["port"], ports["http"])
		}
		checkDiscovery(p, d.Name, flags, objs)
	default:
		p.add("Deployment %s: runs %q, want serve or router", d.Name, c.Args[0])
	}
	for f := range flags {
		if !known[f] {
			p.add("Deployment %s: llmcloud %s has no flag --%s", d.Name, c.Args[0], f)
		}
	}
}

// checkDiscovery: the router watches the EndpointSlices of a headless Service of the install,
// on the port its replicas listen on.
func checkDiscovery(p *problems, name string, flags map[string]string, objs []object) {
	if flags["discovery"] != "kubernetes" {
		return
	}
	svcName, ok := strings.CutPrefix(flags["k8s-selector"], "kubernetes.io/service-name=")
	svcs := find(objs, "Service", svcName)
	if !ok || len(svcs) != 1 {
		p.add("Deployment %s: --k8s-selector %q names no Service of the install", name, flags["k8s-selector"])
		return
	}
	svc := svcs[0].Typed.(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		p.add("Service %s: the replicas' Service should be headless", svc.Name)
	}
	if len(svc.Spec.Ports) == 0 || itoa(svc.Spec.Ports[0].Port) != flags["k8s-port"] {
		p.add("Deployment %s: --k8s-port %s but Service %s ports %v", name, flags["k8s-port"], svc.Name, svc.Spec.Ports)
	}
}

func checkService(p *problems, s *corev1.Service, deployments map[string]*appsv1.Deployment) {
	var target *appsv1.Deployment
	for _, d := range deployments {
		if len(s.Spec.Selector) > 0 && labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
			if target != nil {
				p.add("Service %s selects the pods of two Deployments", s.Name)
			}
			target = d
		}
	}
	if target == nil {
		p.add("Service %s selects no pods of the install (%v)", s.Name, s.Spec.Selector)
		return
	}
	ports := map[string]bool{}
	for _, cp := range target.Spec.Template.Spec.Containers[0].Ports {
		ports[cp.Name] = true
		ports[itoa(cp.ContainerPort)] = true
	}
	for _, sp := range s.Spec.Ports {
		if !ports[sp.TargetPort.String()] {
			p.add("Service %s: targetPort %s is not a port of Deployment %s", s.Name, sp.TargetPort.String(), target.Name)
		}
	}
}

// checkRBAC: the router's service account may list and watch EndpointSlices and get and patch
// the replicas' scale.
func checkRBAC(p *problems, objs []object) {
	allowed := map[string]bool{} // "sa|group|resource|verb"
	for _, o := range find(objs, "RoleBinding", "") {
		rb := o.Typed.(*rbacv1.RoleBinding)
		roles := find(objs, "Role", rb.RoleRef.Name)
		if rb.RoleRef.Kind != "Role" || len(roles) != 1 {
			p.add("RoleBinding %s: role %s %q is not in the install", rb.Name, rb.RoleRef.Kind, rb.RoleRef.Name)
			continue
		}
		for _, s := range rb.Subjects {
			if s.Kind == "ServiceAccount" && len(find(objs, "ServiceAccount", s.Name)) == 0 {
				p.add("RoleBinding %s: service account %q is not in the install", rb.Name, s.Name)
			}
			for _, r := range roles[0].Typed.(*rbacv1.Role).Rules {
				for _, g := range r.APIGroups {
					for _, res := range r.Resources {
						for _, v := range r.Verbs {
							allowed[s.Name+"|"+g+"|"+res+"|"+v] = true
						}
					}
				}
			}
		}
	}
	for _, o := range find(objs, "Deployment", "") {
		d := o.Typed.(*appsv1.Deployment)
		if d.Spec.Template.Spec.Containers[0].Args[0] != "router" {
			continue
		}
		sa := d.Spec.Template.Spec.ServiceAccountName
		for _, need := range []string{"discovery.k8s.io|endpointslices|list", "discovery.k8s.io|endpointslices|watch",
			"apps|deployments/scale|get", "apps|deployments/scale|patch"} {
			if !allowed[sa+"|"+need] {
				p.add("router service account %q may not %s", sa, need)
			}
		}
	}
}

// parseArgs splits command-line args into --flag values and positional arguments (every flag
// the chart uses takes a value).
func parseArgs(args []string) (map[string]string, []string) {
	flags := map[string]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name := strings.TrimLeft(a, "-")
		if k, v, ok := strings.Cut(name, "="); ok {
			flags[k] = v
			continue
		}
		if i+1 < len(args) {
			flags[name] = args[i+1]
			i++
		} else {
			flags[name] = ""
		}
	}
	return flags, pos
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
