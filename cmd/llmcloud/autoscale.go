// The autoscale command: the autoscaler on its own, for Kubernetes. It reads the replicas' load
// from a router's GET /router/status and sets the replica count of a Deployment through its
// scale subresource (package autoscale/kube). `up` runs the same autoscaler in-process over
// local replicas; both share the flags defined here. See docs/cloud.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/llmcloud/llmcloud/autoscale"
	"github.com/llmcloud/llmcloud/autoscale/kube"
)

func init() {
	register("autoscale", "scale a Kubernetes Deployment of replicas on the load a router reports", runAutoscale)
}

// autoscaleFlags are the autoscaler's policy flags, shared by up and autoscale.
type autoscaleFlags struct {
	bounds, metric        string
	targetWaiting, target float64
	upCool, downCool      time.Duration
	interval              time.Duration
}

func (a *autoscaleFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.bounds, "autoscale", "", "MIN:MAX replicas: turn the autoscaler on")
	fs.StringVar(&a.metric, "autoscale-metric", string(autoscale.MetricWaiting), "per-replica metric the autoscaler targets: waiting, running or kv-usage")
	fs.Float64Var(&a.targetWaiting, "target-waiting", 2, "target requests waiting per replica (metric waiting)")
	fs.Float64Var(&a.target, "target", 0, "target value of --autoscale-metric per replica (overrides --target-waiting)")
	fs.DurationVar(&a.upCool, "scale-up-cooldown", 10*time.Second, "no scale-up sooner than this after a change")
	fs.DurationVar(&a.downCool, "scale-down-cooldown", 60*time.Second, "scale-down stabilization window")
	fs.DurationVar(&a.interval, "autoscale-interval", time.Second, "time between autoscaler evaluations")
}

// config builds the autoscaler's config from the flags.
func (a *autoscaleFlags) config() (autoscale.Config, error) {
	lo, hi, ok := strings.Cut(a.bounds, ":")
	minR, err1 := strconv.Atoi(lo)
	maxR, err2 := strconv.Atoi(hi)
	if !ok || err1 != nil || err2 != nil {
		return autoscale.Config{}, fmt.Errorf("--autoscale %q: want MIN:MAX, e.g. 1:4", a.bounds)
	}
	c := autoscale.Config{Metric: autoscale.Metric(a.metric), Target: a.targetWaiting, MinReplicas: minR,
		MaxReplicas: maxR, ScaleUpCooldown: a.upCool, ScaleDownCooldown: a.downCool}
	if a.target != 0 {
		c.Target = a.target
	}
	return c, c.Validate()
}

func runAutoscale(args []string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	return autoscaleMain(ctx, args, stderr, nil, nil)
}

// podNamespaceFile holds the namespace of the pod a process runs in.
const podNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// autoscaleMain runs the autoscaler until ctx ends. scaler, if set, replaces the Kubernetes
// client (tests); ready, if set, gets the metrics address.
func autoscaleMain(ctx context.Context, args []string, stderr io.Writer, scaler autoscale.Scaler, ready func(addr string)) error {
	fs := newFlags("autoscale", stderr)
	var as autoscaleFlags
	as.register(fs)
	routerURL := fs.String("router", "", "the router whose GET /router/status reports the replicas' load, e.g. http://llmcloud-router:8080")
	deployment := fs.String("deployment", "", "the Deployment of replicas to scale")
	namespace := fs.String("namespace", "", "its namespace (default: the pod's own, else default)")
	kubeconfig := fs.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig file (default: in-cluster service account)")
	host := fs.String("host", "0.0.0.0", "address of the /metrics and /health endpoint")
	port := fs.Int("port", 9091, "its port (0 = any free port, -1 = none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("unexpected arguments %q", fs.Args())
	case *routerURL == "":
		return usagef("give the router: --router URL")
	case *deployment == "" && scaler == nil:
		return usagef("give the Deployment: --deployment NAME")
	case as.bounds == "":
		return usagef("give the bounds: --autoscale MIN:MAX")
	}
	cfg, err := as.config()
	if err != nil {
		return usagef("%v", err)
	}
	if *namespace == "" {
		*namespace = "default"
		if b, err := os.ReadFile(podNamespaceFile); err == nil && strings.TrimSpace(string(b)) != "" {
			*namespace = strings.TrimSpace(string(b))
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if scaler == nil {
		client, err := kube.NewClient(*kubeconfig)
		if err != nil {
			return err
		}
		if scaler, err = kube.New(client, *namespace, *deployment); err != nil {
			return err
		}
	}
	reg := prometheus.NewRegistry()
	ctl, err := autoscale.NewController(autoscale.ControllerOptions{Config: cfg, Scaler: scaler,
		Observe:  autoscale.ObserveRouter(&http.Client{Timeout: 5 * time.Second}, *routerURL),
		Interval: as.interval, Logger: log, Registerer: reg}, time.Now())
	if err != nil {
		return err
	}
	if *port >= 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go hs.Serve(ln)
		defer hs.Close()
		if ready != nil {
			ready(ln.Addr().String())
		}
	}
	log.Info("autoscaler running", "router", *routerURL, "deployment", *namespace+"/"+*deployment,
		"metric", string(cfg.Metric), "target", cfg.Target, "min", cfg.MinReplicas, "max", cfg.MaxReplicas)
	err = ctl.Run(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
