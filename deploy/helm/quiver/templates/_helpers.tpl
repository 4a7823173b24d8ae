{{/* Names, labels and the parts every Quiver pod shares. */}}

{{- define "quiver.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "quiver.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "quiver.labels" -}}
{{ include "quiver.selectorLabels" . }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "quiver.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "quiver.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "quiver.image" -}}
{{ printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end -}}

{{/* A secret from the Secret's key; optional ones are simply unset when absent. */}}
{{- define "quiver.secretEnv" -}}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ .secret }}
      key: {{ .key }}
      {{- if .optional }}
      optional: true
      {{- end }}
{{- end -}}

{{/*
The environment of every Quiver container: settings from values, secrets from
the Secret (the audit keys as files, read again when the Secret changes).
Called with (dict "root" $ "databaseKey" KEY): the migrations connect as the
tables' owner (owner-database-url), everything else as the app (database-url).
*/}}
{{- define "quiver.env" -}}
{{- $root := .root -}}
{{- $secret := $root.Values.secrets.name -}}
- name: DEBUG
  value: "false"
- name: ALLOWED_HOSTS
  value: {{ join "," (append $root.Values.config.allowedHosts "localhost") | quote }}
- name: CSRF_TRUSTED_ORIGINS
  value: {{ join "," $root.Values.config.csrfTrustedOrigins | quote }}
- name: QUIVER_HTTPS
  value: {{ $root.Values.config.https | toString | quote }}
- name: QUIVER_TRUSTED_PROXIES
  value: {{ join "," $root.Values.config.trustedProxies | quote }}
- name: QUIVER_PUBLIC_URL
  value: {{ $root.Values.config.publicUrl | quote }}
- name: LOG_LEVEL
  value: {{ $root.Values.config.logLevel | quote }}
- name: QUIVER_STATE_DIR
  value: /data
- name: QUIVER_AUDIT_CHECKPOINT_STORE
  value: {{ $root.Values.audit.checkpointStore | quote }}
- name: QUIVER_AUDIT_KEY_FILE
  value: /run/secrets/quiver/audit-key
- name: QUIVER_AUDIT_OLD_KEYS_FILE
  value: /run/secrets/quiver-old-keys/audit-old-keys
- name: QUIVER_AUDIT_SEAL_INTERVAL_S
  value: {{ $root.Values.audit.sealIntervalSeconds | quote }}
- name: QUIVER_AUDIT_SEALER_IN_WORKERS
  value: {{ not $root.Values.sealer.enabled | toString | quote }}
{{- with $root.Values.audit.sinks }}
{{- if .s3 }}
- name: QUIVER_AUDIT_CHECKPOINT_S3
  value: {{ .s3 | quote }}
- name: QUIVER_AUDIT_CHECKPOINT_S3_LOCK_DAYS
  value: {{ .s3LockDays | quote }}
{{- if .s3Endpoint }}
- name: QUIVER_AUDIT_CHECKPOINT_S3_ENDPOINT
  value: {{ .s3Endpoint | quote }}
{{- end }}
{{- if .s3Region }}
- name: QUIVER_AUDIT_CHECKPOINT_S3_REGION
  value: {{ .s3Region | quote }}
{{- end }}
{{- end }}
{{- if .syslog }}
- name: QUIVER_AUDIT_CHECKPOINT_SYSLOG
  value: {{ .syslog | quote }}
- name: QUIVER_AUDIT_CHECKPOINT_SYSLOG_FACILITY
  value: {{ .syslogFacility | quote }}
{{- end }}
{{- end }}
- name: QUIVER_STATIC_SENTENCES
  value: {{ $root.Values.embeddings.staticSentences | toString | quote }}
- name: QUIVER_QUERY_ENCODER_AUTO
  value: {{ $root.Values.embeddings.autoBuild | toString | quote }}
- name: QUIVER_QUERY_ENCODER_STORE
  value: postgres
{{- range $name, $value := $root.Values.config.extraEnv }}
- name: {{ $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{ include "quiver.secretEnv" (dict "env" "SECRET_KEY" "secret" $secret "key" "secret-key") }}
{{ include "quiver.secretEnv" (dict "env" "DATABASE_URL" "secret" $secret "key" (default "database-url" .databaseKey)) }}
{{ include "quiver.secretEnv" (dict "env" "CELERY_BROKER_URL" "secret" $secret "key" "broker-url") }}
{{- range $env, $key := dict "QUIVER_SOURCE_KEY" "source-key" "QUIVER_SOURCE_OLD_KEYS" "source-old-keys" "QUIVER_METRICS_TOKEN" "metrics-token" "QUIVER_AUDIT_CHECKPOINT_URL" "checkpoint-url" "QUIVER_AUDIT_CHECKPOINT_S3_ACCESS_KEY" "s3-access-key" "QUIVER_AUDIT_CHECKPOINT_S3_SECRET_KEY" "s3-secret-key" "EMAIL_HOST_PASSWORD" "email-password" "QUIVER_LLM_API_KEY" "llm-api-key" "QUIVER_EMBEDDING_API_KEY" "embedding-api-key" }}
{{ include "quiver.secretEnv" (dict "env" $env "secret" $secret "key" $key "optional" true) }}
{{- end }}
{{- end -}}

{{/* The audit keys (files, so a changed Secret reaches running sealers) and the
per-pod scratch space; nothing here is shared between pods. */}}
{{- define "quiver.volumes" -}}
- name: audit-key
  secret:
    secretName: {{ .Values.secrets.name }}
    defaultMode: 0440
    items:
      - key: audit-key
        path: audit-key
- name: audit-old-keys
  secret:
    secretName: {{ .Values.secrets.name }}
    defaultMode: 0440
    optional: true
    items:
      - key: audit-old-keys
        path: audit-old-keys
- name: state
  emptyDir:
    sizeLimit: {{ .Values.scratch.sizeLimit }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.scratch.sizeLimit }}
{{- end -}}

{{- define "quiver.volumeMounts" -}}
- name: audit-key
  mountPath: /run/secrets/quiver
  readOnly: true
- name: audit-old-keys
  mountPath: /run/secrets/quiver-old-keys
  readOnly: true
- name: state
  mountPath: /data
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* What every Quiver pod's spec starts with (the migrations' Job runs before the
release's ServiceAccount exists, so it runs as the namespace's default one). */}}
{{- define "quiver.podSpec" -}}
{{- if not .hook -}}
serviceAccountName: {{ include "quiver.serviceAccountName" .root }}
{{ end -}}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .root.Values.podSecurityContext | nindent 2 }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  {{- include "quiver.volumes" .root | nindent 2 }}
{{- end -}}

{{/* A pod template's metadata for one component. */}}
{{- define "quiver.podMetadata" -}}
labels:
  {{- include "quiver.selectorLabels" .root | nindent 2 }}
  app.kubernetes.io/component: {{ .component }}
  {{- with .root.Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- with .root.Values.podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A Celery worker's liveness: its node answers a ping, as docker compose asks. */}}
{{- define "quiver.workerProbe" -}}
livenessProbe:
  exec:
    command:
      - sh
      - -c
      - celery -A config inspect ping -d "celery@$HOSTNAME" --timeout 10
  initialDelaySeconds: 60
  periodSeconds: 60
  timeoutSeconds: 30
  failureThreshold: 3
{{- end -}}

{{/* An HPA on CPU for one Deployment. */}}
{{- define "quiver.hpa" -}}
{{- if .values.autoscaling.enabled }}
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: {{ include "quiver.fullname" .root }}-{{ .component }}
  labels:
    {{- include "quiver.labels" .root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: {{ include "quiver.fullname" .root }}-{{ .component }}
  minReplicas: {{ .values.autoscaling.minReplicas }}
  maxReplicas: {{ .values.autoscaling.maxReplicas }}
  metrics:
    - type: Resource
      resource:
        name: cpu
        target:
          type: Utilization
          averageUtilization: {{ .values.autoscaling.targetCPUUtilizationPercentage }}
{{- end }}
{{- end -}}
