package deploy_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// leaderWorkerSet is the LeaderWorkerSet (leaderworkerset.x-k8s.io/v1) of the LWS controller,
// written out here so manifests decode strictly without importing it: the spec fields the API
// has, the pod templates as core/v1 types, so an unknown or misspelled field fails.
type leaderWorkerSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              lwsSpec `json:"spec"`
}

type lwsSpec struct {
	Replicas             *int32         `json:"replicas,omitempty"`
	LeaderWorkerTemplate lwsTemplate    `json:"leaderWorkerTemplate"`
	RolloutStrategy      map[string]any `json:"rolloutStrategy,omitempty"`
	StartupPolicy        string         `json:"startupPolicy,omitempty"` // LeaderCreated or LeaderReady
	NetworkConfig        *struct {
		SubdomainPolicy *string `json:"subdomainPolicy,omitempty"`
	} `json:"networkConfig,omitempty"`
}

type lwsTemplate struct {
	LeaderTemplate *corev1.PodTemplateSpec `json:"leaderTemplate,omitempty"`
	WorkerTemplate corev1.PodTemplateSpec  `json:"workerTemplate"`
	Size           *int32                  `json:"size,omitempty"`
	RestartPolicy  string                  `json:"restartPolicy,omitempty"` // RecreateGroupOnPodRestart or None
	SubGroupPolicy map[string]any          `json:"subGroupPolicy,omitempty"`
}

// lwsEnv are the variables the LWS controller sets in every container of a group's pods.
var lwsEnv = map[string]bool{"LWS_LEADER_ADDRESS": true, "LWS_GROUP_SIZE": true, "LWS_WORKER_INDEX": true}
