package deploy_test

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// scaledObject is KEDA's ScaledObject (keda.sh/v1alpha1) as its CRD documents it, written out
// here so manifests decode strictly without importing KEDA: every spec field KEDA accepts, so an
// unknown or misspelled one fails.
type scaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              scaledObjectSpec `json:"spec"`
}

type scaledObjectSpec struct {
	ScaleTargetRef        scaleTarget     `json:"scaleTargetRef"`
	PollingInterval       *int32          `json:"pollingInterval,omitempty"`
	InitialCooldownPeriod *int32          `json:"initialCooldownPeriod,omitempty"`
	CooldownPeriod        *int32          `json:"cooldownPeriod,omitempty"`
	IdleReplicaCount      *int32          `json:"idleReplicaCount,omitempty"`
	MinReplicaCount       *int32          `json:"minReplicaCount,omitempty"`
	MaxReplicaCount       *int32          `json:"maxReplicaCount,omitempty"`
	Advanced              *kedaAdvanced   `json:"advanced,omitempty"`
	Fallback              *kedaFallback   `json:"fallback,omitempty"`
	Triggers              []scaleTriggers `json:"triggers"`
}

type scaleTarget struct {
	APIVersion             string `json:"apiVersion,omitempty"`
	Kind                   string `json:"kind,omitempty"`
	Name                   string `json:"name"`
	EnvSourceContainerName string `json:"envSourceContainerName,omitempty"`
}

type kedaAdvanced struct {
	HorizontalPodAutoscalerConfig *struct {
		Name     string                                         `json:"name,omitempty"`
		Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
	} `json:"horizontalPodAutoscalerConfig,omitempty"`
	RestoreToOriginalReplicaCount bool `json:"restoreToOriginalReplicaCount,omitempty"`
	ScalingModifiers              *struct {
		Formula          string `json:"formula,omitempty"`
		Target           string `json:"target,omitempty"`
		ActivationTarget string `json:"activationTarget,omitempty"`
		MetricType       string `json:"metricType,omitempty"`
	} `json:"scalingModifiers,omitempty"`
}

type kedaFallback struct {
	FailureThreshold int32  `json:"failureThreshold"`
	Replicas         int32  `json:"replicas"`
	Behavior         string `json:"behavior,omitempty"`
}

type scaleTriggers struct {
	Type              string            `json:"type"`
	Name              string            `json:"name,omitempty"`
	UseCachedMetrics  bool              `json:"useCachedMetrics,omitempty"`
	Metadata          map[string]string `json:"metadata"`
	AuthenticationRef *struct {
		Name string `json:"name"`
		Kind string `json:"kind,omitempty"`
	} `json:"authenticationRef,omitempty"`
	MetricType string `json:"metricType,omitempty"` // AverageValue, Value or Utilization
}

// prometheusTriggerKeys are the metadata keys of KEDA's prometheus scaler.
var prometheusTriggerKeys = map[string]bool{"serverAddress": true, "query": true, "threshold": true,
	"activationThreshold": true, "namespace": true, "customHeaders": true, "ignoreNullValues": true,
	"queryParameters": true, "unsafeSsl": true, "timeout": true}
