{{/*
The pod template of one rank of a tensor/pipeline-parallel group (replica-group.yaml): the
replica's serve args plus the group flags. dict: root, leader (rank 0: HTTP port, probes,
metrics annotations), init (rank 0's host), rank (the --rank value), rankFromPodIndex (set
LLMCLOUD_RANK from the StatefulSet's pod-index label).
*/}}
{{- define "llmcloud.rankPod" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $vol := $v.model.volume -}}
metadata:
  labels:
    {{- include "llmcloud.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ if .leader }}replica{{ else }}replica-worker{{ end }}
    llmcloud/group: {{ include "llmcloud.replica" $root }}
  annotations:
    checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
    {{- if .leader }}
    prometheus.io/scrape: "true"
    prometheus.io/port: {{ $v.replica.port | quote }}
    prometheus.io/path: /metrics
    {{- end }}
    {{- with $v.replica.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  automountServiceAccountToken: false
  {{- with $v.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  terminationGracePeriodSeconds: {{ add $v.replica.shutdownTimeoutSeconds 10 }}
  securityContext:
    runAsNonRoot: true
    fsGroup: 65532
  containers:
    - name: serve
      image: {{ include "llmcloud.image" $root }}
      imagePullPolicy: {{ $v.image.pullPolicy }}
      {{- if .rankFromPodIndex }}
      env:
        - name: LLMCLOUD_RANK
          valueFrom:
            fieldRef:
              fieldPath: metadata.labels['apps.kubernetes.io/pod-index']
      {{- end }}
      args:
        {{- include "llmcloud.serveArgs" $root | nindent 8 }}
        - --tensor-parallel-size
        - {{ $v.parallel.tensorParallelSize | quote }}
        - --pipeline-parallel-size
        - {{ $v.parallel.pipelineParallelSize | quote }}
        {{- if $v.parallel.enableExpertParallel }}
        - --enable-expert-parallel=true
        {{- end }}
        {{- if $v.parallel.pipelineLayerPartition }}
        - --pipeline-layer-partition
        - {{ $v.parallel.pipelineLayerPartition | quote }}
        {{- end }}
        {{- if $v.parallel.pipelineMicroBatches }}
        - --pipeline-micro-batches
        - {{ $v.parallel.pipelineMicroBatches | quote }}
        {{- end }}
        - --world-size
        - {{ include "llmcloud.worldSize" $root | quote }}
        - --distributed-init
        - {{ printf "%s:%v" .init $v.parallel.port | quote }}
        - --rank
        - {{ .rank | quote }}
      envFrom:
        - configMapRef:
            name: {{ include "llmcloud.config" $root }}
      {{- if .leader }}
      ports:
        - name: http
          containerPort: {{ $v.replica.port }}
          protocol: TCP
        - name: dist
          containerPort: {{ $v.parallel.port }}
          protocol: TCP
      # /health answers once every rank has joined and the engine runs.
      startupProbe:
        httpGet:
          path: /health
          port: http
        periodSeconds: 5
        failureThreshold: {{ $v.replica.startupFailureThreshold }}
      readinessProbe:
        httpGet:
          path: /health
          port: http
        periodSeconds: 5
        failureThreshold: 2
      livenessProbe:
        httpGet:
          path: /health
          port: http
        periodSeconds: 10
        timeoutSeconds: 5
        failureThreshold: 6
      {{- end }}
      resources:
        {{- toYaml $v.replica.resources | nindent 8 }}
      securityContext:
        {{- include "llmcloud.securityContext" $root | nindent 8 }}
      volumeMounts:
        - name: tmp
          mountPath: /tmp
        {{- if ne $vol.type "none" }}
        - name: models
          mountPath: {{ $vol.mountPath }}
          readOnly: true
        {{- end }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- if eq $vol.type "pvc" }}
    - name: models
      persistentVolumeClaim:
        claimName: {{ $vol.claimName }}
        readOnly: true
    {{- else if eq $vol.type "hostPath" }}
    - name: models
      hostPath:
        path: {{ $vol.hostPath }}
        type: Directory
    {{- end }}
  {{- with $v.replica.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.replica.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with $v.replica.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
