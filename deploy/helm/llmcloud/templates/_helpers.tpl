{{/* Names and labels shared by the templates. */}}

{{/* fullname: the release name, or release-chart when they differ. */}}
{{- define "llmcloud.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "llmcloud.router" -}}{{ include "llmcloud.fullname" . }}-router{{- end -}}
{{- define "llmcloud.replica" -}}{{ include "llmcloud.fullname" . }}-replica{{- end -}}
{{/* The headless Service of the replicas; its EndpointSlices are what the router watches. */}}
{{- define "llmcloud.replicas" -}}{{ include "llmcloud.fullname" . }}-replicas{{- end -}}
{{- define "llmcloud.config" -}}{{ include "llmcloud.fullname" . }}-config{{- end -}}

{{- define "llmcloud.serviceAccount" -}}
{{- default (include "llmcloud.router" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "llmcloud.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Labels on every object; selectors use only name, instance and component. */}}
{{- define "llmcloud.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: llmcloud
{{- end -}}

{{- define "llmcloud.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* A hardened container: no root, no privilege escalation, read-only root filesystem. */}}
{{- define "llmcloud.securityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
runAsUser: 65532
runAsGroup: 65532
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* The args of `llmcloud serve` every replica (and every rank of a group) runs. */}}
{{- define "llmcloud.serveArgs" -}}
- serve
{{- with .Values.model.path }}
- {{ . | quote }}
{{- end }}
- --host
- 0.0.0.0
- --port
- {{ .Values.replica.port | quote }}
- --threads
- $(REPLICA_THREADS)
- --max-num-seqs
- $(REPLICA_MAX_NUM_SEQS)
- --max-model-len
- $(REPLICA_MAX_MODEL_LEN)
- --shutdown-timeout
- {{ .Values.replica.shutdownTimeoutSeconds | quote }}
{{- with .Values.model.servedModelName }}
- --served-model-name
- {{ . | quote }}
{{- end }}
{{- range .Values.replica.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end -}}

{{/* Ranks of one replica: tensor x pipeline parallel (1: a plain Deployment). */}}
{{- define "llmcloud.worldSize" -}}
{{- mul (int .Values.parallel.tensorParallelSize) (int .Values.parallel.pipelineParallelSize) -}}
{{- end -}}
