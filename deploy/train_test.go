package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// trainFlags are the flags `llmcloud train` has (parsed from its source).
func trainFlags(t *testing.T) map[string]bool {
	return flagNames(t, "cmd/llmcloud/train.go", "train/configfile.go")
}

// TestTrainJobManifest: deploy/train/ decodes strictly and is one working Indexed Job.
func TestTrainJobManifest(t *testing.T) {
	objs := readManifests(t, "train")
	for _, e := range trainJobProblems(t, objs) {
		t.Error(e)
	}
}

// trainJobProblems checks what makes the training Job work: the index is the rank, rank 0's pod
// is MASTER_ADDR through a headless Service, the world size matches the Job and the grid, the
// flags exist, and the data and run volumes are mounted where the flags point.
func trainJobProblems(t *testing.T, objs []object) problems {
	t.Helper()
	var p problems
	for _, o := range objs {
		if o.Namespace != "llmcloud" {
			p.add("%s %s: namespace %q, want llmcloud", o.Kind, o.Name, o.Namespace)
		}
	}
	jobs := find(objs, "Job", "")
	if len(jobs) != 1 {
		p.add("%d Jobs, want 1", len(jobs))
		return p
	}
	j := jobs[0].Typed.(*batchv1.Job)
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		p.add("Job %s: completionMode is not Indexed", j.Name)
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		p.add("Job %s: completions and parallelism must both be set and equal (all ranks run at once)", j.Name)
		return p
	}
	world := *s.Completions
	if s.BackoffLimit == nil || *s.BackoffLimit < world {
		p.add("Job %s: backoffLimit below %d: one fault fails every rank", j.Name, world)
	}
	pod := s.Template.Spec
	if pod.RestartPolicy != corev1.RestartPolicyOnFailure && pod.RestartPolicy != corev1.RestartPolicyNever {
		p.add("Job %s: restartPolicy %q", j.Name, pod.RestartPolicy)
	}
	if len(pod.Containers) != 1 {
		p.add("Job %s: %d containers, want 1", j.Name, len(pod.Containers))
		return p
	}
	c := pod.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "train" {
		p.add("Job %s: container runs %q, want llmcloud train", j.Name, c.Args)
		return p
	}
	flags, pos := parseArgs(c.Args[1:])
	known := trainFlags(t)
	for f := range flags {
		if !known[f] {
			p.add("Job %s: llmcloud train has no flag --%s", j.Name, f)
		}
	}
	if len(pos) > 0 {
		p.add("Job %s: stray arguments %q", j.Name, pos)
	}
	if flags["resume"] != "auto" {
		p.add("Job %s: --resume %q, want auto (a restarted pod continues the run)", j.Name, flags["resume"])
	}
	grid := int32(1)
	for _, f := range []string{"dp", "tp", "pp"} {
		if v, ok := flags[f]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				p.add("Job %s: --%s %q", j.Name, f, v)
				continue
			}
			grid *= int32(n)
		}
	}
	if _, ok := flags["dp"]; ok && grid != world {
		p.add("Job %s: dp·tp·pp = %d, but %d ranks", j.Name, grid, world)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["RANK"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		p.add("Job %s: RANK is not the completion index", j.Name)
	}
	if v := env["WORLD_SIZE"].Value; v != itoa(world) {
		p.add("Job %s: WORLD_SIZE %q, want %d (completions)", j.Name, v, world)
	}
	svcs := find(objs, "Service", pod.Subdomain)
	if pod.Subdomain == "" || len(svcs) != 1 {
		p.add("Job %s: subdomain %q names no Service of the install", j.Name, pod.Subdomain)
		return p
	}
	svc := svcs[0].Typed.(*corev1.Service)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !svc.Spec.PublishNotReadyAddresses {
		p.add("Service %s: must be headless and publish not-ready addresses (pods' DNS names)", svc.Name)
	}
	if sel := labels.SelectorFromSet(svc.Spec.Selector); len(svc.Spec.Selector) == 0 || !sel.Matches(labels.Set(s.Template.Labels)) {
		p.add("Service %s: selector %v selects no pods of Job %s", svc.Name, svc.Spec.Selector, j.Name)
	}
	if want := j.Name + "-0." + pod.Subdomain; env["MASTER_ADDR"].Value != want {
		p.add("Job %s: MASTER_ADDR %q, want rank 0's pod %q", j.Name, env["MASTER_ADDR"].Value, want)
	}
	portOK := false
	for _, sp := range svc.Spec.Ports {
		for _, cp := range c.Ports {
			if itoa(sp.Port) == env["MASTER_PORT"].Value && sp.TargetPort.IntValue() == int(cp.ContainerPort) {
				portOK = true
			}
		}
	}
	if !portOK {
		p.add("Job %s: MASTER_PORT %q is not a port of Service %s and the container", j.Name, env["MASTER_PORT"].Value, svc.Name)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		if pvc := v.PersistentVolumeClaim; pvc != nil && len(find(objs, "PersistentVolumeClaim", pvc.ClaimName)) != 1 {
			p.add("Job %s: volume %s claims %q, which is not in the install", j.Name, v.Name, pvc.ClaimName)
		}
	}
	mountOf := func(path string) *corev1.VolumeMount {
		var best *corev1.VolumeMount
		for i, m := range c.VolumeMounts {
			if (path == m.MountPath || strings.HasPrefix(path, m.MountPath+"/")) && (best == nil || len(m.MountPath) > len(best.MountPath)) {
				best = &c.VolumeMounts[i]
			}
		}
		return best
	}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok {
			p.add("Job %s: mount %q has no volume", j.Name, m.Name)
		}
	}
	if m := mountOf(flags["data"]); m == nil {
		p.add("Job %s: --data %q is on no mounted volume", j.Name, flags["data"])
	}
	if m := mountOf(flags["out"]); m == nil || m.ReadOnly || volumes[m.Name].PersistentVolumeClaim == nil {
		p.add("Job %s: --out %q is not on a writable persistent volume (checkpoints must outlive the pods)", j.Name, flags["out"])
	}
	if v, ok := flags["threads"]; ok {
		n, _ := strconv.Atoi(v)
		if cpu := c.Resources.Requests.Cpu(); cpu == nil || int64(n) > cpu.Value() {
			p.add("Job %s: --threads %s above the CPU request %v", j.Name, v, cpu)
		}
	}
	return p
}

// TestTrainJobChecksCatchMistakes: each mistake that decodes fine but breaks the Job is reported.
func TestTrainJobChecksCatchMistakes(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("train", "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ from, to, want string }{
		{"completionMode: Indexed", "completionMode: NonIndexed", "not Indexed"},
		{"parallelism: 4", "parallelism: 2", "completions and parallelism"},
		{"value: llmcloud-train-0.llmcloud-train", "value: llmcloud-train-1.llmcloud-train", "want rank 0's pod"},
		{"name: WORLD_SIZE\n              value: \"4\"", "name: WORLD_SIZE\n              value: \"3\"", "WORLD_SIZE \"3\""},
		{"- --dp\n            - \"4\"", "- --dp\n            - \"2\"", "dp·tp·pp = 2"},
		{"- --resume\n            - auto", "- --resume\n            - latest", "want auto"},
		{"- --ckpt-every", "- --checkpoint-every", "no flag --checkpoint-every"},
		{"subdomain: llmcloud-train", "subdomain: llmcloud-trainer", "names no Service"},
		{"publishNotReadyAddresses: true", "publishNotReadyAddresses: false", "headless"},
		{"  backoffLimit: 12", "  backoffLimit: 1", "backoffLimit below 4"},
		{"mountPath: /runs", "mountPath: /run", "--out \"/runs/llmcloud-train\""},
		{"claimName: llmcloud-train-runs", "claimName: llmcloud-runs", "not in the install"},
		{"- name: MASTER_PORT\n              value: \"29500\"", "- name: MASTER_PORT\n              value: \"29400\"", "MASTER_PORT \"29400\""},
		{"job-completion-index", "job-index", "RANK is not the completion index"},
	} {
		if !bytes.Contains(data, []byte(c.from)) {
			t.Fatalf("the manifest no longer contains %q: update this test", c.from)
		}
		objs, err := decodeStream(bytes.Replace(data, []byte(c.from), []byte(c.to), 1), "mutated")
		if err != nil {
			t.Fatalf("%q -> %q: %v", c.from, c.to, err)
		}
		probs := trainJobProblems(t, objs)
		if !strings.Contains(strings.Join(probs, "\n"), c.want) {
			t.Errorf("%q -> %q: problems %q, want one with %q", c.from, c.to, probs, c.want)
		}
	}
}

var sbatchTrain = regexp.MustCompile(`(?s)"\$LLMCLOUD" train (.*?)"\$@"`)

// TestSlurmScript: the sbatch script is valid bash and runs llmcloud train with flags it has,
// resuming automatically.
func TestSlurmScript(t *testing.T) {
	path := filepath.Join("train", "train.sbatch")
	if out, err := exec.Command("bash", "-n", path).CombinedOutput(); err != nil {
		t.Fatalf("bash -n %s: %v\n%s", path, err, out)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := sbatchTrain.FindSubmatch(data)
	if m == nil {
		t.Fatal("no `\"$LLMCLOUD\" train ... \"$@\"` command in the script")
	}
	args := strings.Fields(strings.ReplaceAll(string(m[1]), "\\\n", " "))
	flags, pos := parseArgs(args)
	known := trainFlags(t)
	for f := range flags {
		if !known[f] {
			t.Errorf("llmcloud train has no flag --%s", f)
		}
	}
	if len(pos) > 0 {
		t.Errorf("stray arguments %q", pos)
	}
	if flags["resume"] != "auto" {
		t.Errorf("--resume %q, want auto (a requeued job continues)", flags["resume"])
	}
	for _, v := range []string{"MASTER_ADDR", "MASTER_PORT"} {
		if !bytes.Contains(data, []byte("export "+v)) && !regexp.MustCompile(`export [A-Z_ ]*\b`+v+`\b`).Match(data) {
			t.Errorf("the script does not export %s", v)
		}
	}
}
