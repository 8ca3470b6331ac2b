{{/* The release's name, cut to what a DNS label allows. */}}
{{- define "bgbench.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "bgbench.agentName" -}}{{ include "bgbench.fullname" . }}-agent{{- end -}}

{{/* The headless Service's fully qualified name: one DNS name resolving to every agent. */}}
{{- define "bgbench.agentHost" -}}
{{ include "bgbench.agentName" . }}.{{ .Release.Namespace }}.svc.{{ .Values.clusterDomain }}
{{- end -}}

{{- define "bgbench.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "bgbench.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "bgbench.agentSelector" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: agent
{{- end -}}

{{- define "bgbench.tokenSecret" -}}
{{ .Values.auth.existingSecret | default (printf "%s-token" (include "bgbench.fullname" .)) }}
{{- end -}}

{{- define "bgbench.tlsSecret" -}}
{{ .Values.tls.existingSecret | default (printf "%s-tls" (include "bgbench.fullname" .)) }}
{{- end -}}

{{/* A read-only root: Python, matplotlib and the agent write under /tmp and HOME. */}}
{{/* The shared results store's URL, or /results. Refusals name the value, never repeat
it: a URL may hold a password. */}}
{{- define "bgbench.results" -}}
{{- $url := .Values.coordinator.results.url -}}
{{- if not $url -}}
/results
{{- else if not (regexMatch "^postgres(ql)?://[^/@]+@[^/@]+/[^/?#@]+$" $url) -}}
{{- fail "coordinator.results.url: not a postgresql://USER@HOST:PORT/DB URL" -}}
{{- else if regexMatch "^postgres(ql)?://[^/@]*:[^/@]*@" $url -}}
{{- fail "coordinator.results.url holds a password: give it in coordinator.results.passwordSecret (PGPASSWORD), never in the URL" -}}
{{- else -}}
{{ $url }}
{{- end -}}
{{- end -}}

{{- define "bgbench.writableEnv" -}}
- name: HOME
  value: /tmp
- name: MPLCONFIGDIR
  value: /tmp/matplotlib
{{- end -}}
