package deploy_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// dashboard is the part of Grafana's dashboard JSON model the tests read.
type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	data, err := os.ReadFile("grafana/llmcloud-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	return d
}

// TestGrafanaDashboard: the dashboard parses; every panel but rows queries Prometheus with at
// least one expression; every metric it names is exported by the server or the router; and it
// covers the families it is for.
func TestGrafanaDashboard(t *testing.T) {
	d := readDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard without title, uid or panels")
	}
	exported := exportedMetrics(t)
	used := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" {
			t.Errorf("panel %q: no prometheus datasource", p.Title)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no target", p.Title)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: grid position %+v", p.Title, p.GridPos)
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %s has no expression", p.Title, tg.RefID)
				continue
			}
			if err := balanced(tg.Expr); err != "" {
				t.Errorf("panel %q: %s in %s", p.Title, err, tg.Expr)
			}
			for _, m := range checkMetricNames(t, "panel "+p.Title, tg.Expr, exported) {
				used[m] = true
			}
		}
	}
	for _, m := range []string{"vllm:request_success_total", "vllm:time_to_first_token_seconds",
		"vllm:inter_token_latency_seconds", "vllm:generation_tokens_total", "vllm:prompt_tokens_total",
		"vllm:kv_cache_usage_perc", "vllm:num_requests_waiting", "vllm:num_requests_running",
		"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
		"llmcloud_router_requests_total", "llmcloud_router_retries_total",
		"llmcloud_router_upstream_latency_seconds", "llmcloud_router_prefix_hits_total",
		"llmcloud_router_prefix_lookups_total"} {
		if !used[m] {
			t.Errorf("no panel shows %s", m)
		}
	}
}

// balanced reports unbalanced brackets or quotes in a PromQL expression ("" when fine).
func balanced(expr string) string {
	var stack []rune
	inQuote := false
	for _, r := range expr {
		if inQuote {
			inQuote = r != '"'
			continue
		}
		switch r {
		case '"':
			inQuote = true
		case '(', '[', '{':
			stack = append(stack, r)
		case ')', ']', '}':
			open := map[rune]rune{')': '(', ']': '[', '}': '{'}[r]
			if len(stack) == 0 || stack[len(stack)-1] != open {
				return "unbalanced " + string(r)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if inQuote || len(stack) > 0 {
		return "unclosed bracket or quote"
	}
	return ""
}

// Prometheus configuration: the fields our files use, decoded strictly.
type promConfig struct {
	Global struct {
		ScrapeInterval     string `json:"scrape_interval"`
		EvaluationInterval string `json:"evaluation_interval"`
		ScrapeTimeout      string `json:"scrape_timeout,omitempty"`
	} `json:"global"`
	ScrapeConfigs []struct {
		JobName       string `json:"job_name"`
		MetricsPath   string `json:"metrics_path,omitempty"`
		Scheme        string `json:"scheme,omitempty"`
		StaticConfigs []struct {
			Targets []string          `json:"targets"`
			Labels  map[string]string `json:"labels,omitempty"`
		} `json:"static_configs,omitempty"`
		KubernetesSDConfigs []struct {
			Role       string `json:"role"`
			Namespaces *struct {
				Names        []string `json:"names,omitempty"`
				OwnNamespace bool     `json:"own_namespace,omitempty"`
			} `json:"namespaces,omitempty"`
		} `json:"kubernetes_sd_configs,omitempty"`
		RelabelConfigs []struct {
			SourceLabels []string `json:"source_labels,omitempty"`
			Separator    string   `json:"separator,omitempty"`
			Regex        string   `json:"regex,omitempty"`
			TargetLabel  string   `json:"target_label,omitempty"`
			Replacement  string   `json:"replacement,omitempty"`
			Action       string   `json:"action,omitempty"`
		} `json:"relabel_configs,omitempty"`
	} `json:"scrape_configs"`
}

var durationRe = regexp.MustCompile(`^[0-9]+(ms|s|m|h)$`)

// TestPrometheusConfigs: both scrape configurations decode strictly, with durations, relabel
// regexes (RE2, as Prometheus) and actions valid; the static one scrapes a replica and the
// router, the Kubernetes one finds both by their component label. promtool checks the static
// one too when it is installed.
func TestPrometheusConfigs(t *testing.T) {
	for _, c := range []struct {
		file string
		jobs []string
	}{{"prometheus.yml", []string{"llmcloud", "llmcloud-router"}}, {"prometheus-kubernetes.yml", []string{"llmcloud", "llmcloud-router"}}} {
		data, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		var cfg promConfig
		if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		for _, d := range []string{cfg.Global.ScrapeInterval, cfg.Global.EvaluationInterval} {
			if !durationRe.MatchString(d) {
				t.Errorf("%s: duration %q", c.file, d)
			}
		}
		var jobs []string
		kube := strings.Contains(c.file, "kubernetes")
		for _, sc := range cfg.ScrapeConfigs {
			jobs = append(jobs, sc.JobName)
			if kube != (len(sc.KubernetesSDConfigs) > 0) || kube == (len(sc.StaticConfigs) > 0) {
				t.Errorf("%s job %s: want %s discovery only", c.file, sc.JobName, map[bool]string{true: "kubernetes", false: "static"}[kube])
			}
			for _, k := range sc.KubernetesSDConfigs {
				if k.Role != "pod" && k.Role != "endpoints" && k.Role != "endpointslice" && k.Role != "service" {
					t.Errorf("%s job %s: role %q", c.file, sc.JobName, k.Role)
				}
			}
			for _, st := range sc.StaticConfigs {
				for _, tg := range st.Targets {
					if !regexp.MustCompile(`^[a-zA-Z0-9.\-]+:[0-9]+$`).MatchString(tg) {
						t.Errorf("%s job %s: target %q is not host:port", c.file, sc.JobName, tg)
					}
				}
			}
			components := ""
			for _, r := range sc.RelabelConfigs {
				if _, err := regexp.Compile("^(?:" + r.Regex + ")$"); err != nil {
					t.Errorf("%s job %s: regex %q: %v", c.file, sc.JobName, r.Regex, err)
				}
				switch r.Action {
				case "", "replace", "keep", "drop", "labelmap", "labeldrop", "labelkeep", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal":
				default:
					t.Errorf("%s job %s: action %q", c.file, sc.JobName, r.Action)
				}
				if (r.Action == "" || r.Action == "replace") && r.TargetLabel == "" {
					t.Errorf("%s job %s: replace without target_label", c.file, sc.JobName)
				}
				if len(r.SourceLabels) == 1 && r.SourceLabels[0] == "__meta_kubernetes_pod_label_app_kubernetes_io_component" {
					components = r.Regex
				}
			}
			if kube && components != map[string]string{"llmcloud": "replica", "llmcloud-router": "router"}[sc.JobName] {
				t.Errorf("%s job %s keeps component %q", c.file, sc.JobName, components)
			}
		}
		if strings.Join(jobs, ",") != strings.Join(c.jobs, ",") {
			t.Errorf("%s: jobs %v, want %v", c.file, jobs, c.jobs)
		}
	}
	if promtool, err := exec.LookPath("promtool"); err == nil {
		out, err := exec.Command(promtool, "check", "config", "prometheus.yml").CombinedOutput()
		if err != nil {
			t.Errorf("promtool check config prometheus.yml: %v\n%s", err, out)
		}
		t.Logf("promtool: %s", bytes.TrimSpace(out))
	}
}

// TestPrometheusAdapterValues: the adapter rule serves an exported metric under the name the
// chart's HPA asks for.
func TestPrometheusAdapterValues(t *testing.T) {
	data, err := os.ReadFile("prometheus-adapter-values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Prometheus struct {
			URL  string `json:"url"`
			Port int    `json:"port"`
		} `json:"prometheus"`
		Rules struct {
			Default bool `json:"default"`
			Custom  []struct {
				SeriesQuery string `json:"seriesQuery"`
				Resources   struct {
					Overrides map[string]struct {
						Resource string `json:"resource"`
					} `json:"overrides"`
				} `json:"resources"`
				Name struct {
					Matches string `json:"matches"`
					As      string `json:"as"`
				} `json:"name"`
				MetricsQuery string `json:"metricsQuery"`
			} `json:"custom"`
		} `json:"rules"`
	}
	if err := yaml.UnmarshalStrict(data, &v); err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile("helm/llmcloud/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		Autoscaling struct {
			HPA struct {
				MetricName string `json:"metricName"`
			} `json:"hpa"`
		} `json:"autoscaling"`
	}
	if err := yaml.Unmarshal(values, &chart); err != nil {
		t.Fatal(err)
	}
	exported := exportedMetrics(t)
	served := map[string]bool{}
	for _, r := range v.Rules.Custom {
		for _, m := range checkMetricNames(t, "adapter rule", r.SeriesQuery, exported) {
			re, err := regexp.Compile(r.Name.Matches)
			if err != nil {
				t.Fatalf("matches %q: %v", r.Name.Matches, err)
			}
			// The adapter's "as" uses ${1} like Go's regexp.Expand.
			served[re.ReplaceAllString(m, r.Name.As)] = true
		}
		if r.Resources.Overrides["pod"].Resource != "pod" || r.Resources.Overrides["namespace"].Resource != "namespace" {
			t.Errorf("rule %q does not map the pod and namespace labels", r.SeriesQuery)
		}
	}
	if !served[chart.Autoscaling.HPA.MetricName] {
		t.Errorf("the HPA asks for %q; the adapter serves %v", chart.Autoscaling.HPA.MetricName, served)
	}
}
