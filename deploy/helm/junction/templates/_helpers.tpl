{{/* The name of every object: the release name, with "-junction" unless it already says junction. */}}
{{- define "junction.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "junction.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: hub
{{- end -}}

{{- define "junction.labels" -}}
{{ include "junction.selectorLabels" . }}
app.kubernetes.io/version: {{ (.Values.image.tag | default .Chart.AppVersion) | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret holding the API token, and its key. */}}
{{- define "junction.tokenSecret" -}}
{{- if .Values.token.existingSecret -}}
{{- .Values.token.existingSecret -}}
{{- else if .Values.token.value -}}
{{- printf "%s-token" (include "junction.fullname" .) -}}
{{- else -}}
{{- fail "token: set token.existingSecret to the name of a Secret holding the API token, or token.value (docs/kubernetes.md)" -}}
{{- end -}}
{{- end -}}

{{/* junction.yaml: .Values.config, with the store from the environment when store.existingSecret is set. */}}
{{- define "junction.config" -}}
{{- $config := deepCopy .Values.config -}}
{{- if .Values.store.existingSecret -}}
{{- $_ := set $config "store" "${JUNCTION_STORE_URL}" -}}
{{- end -}}
{{- if .Values.allowedHosts -}}
{{- $http := get $config "http" | default dict -}}
{{- $_ := set $http "allowed_hosts" (concat (get $http "allowed_hosts" | default list) .Values.allowedHosts) -}}
{{- $_ := set $config "http" $http -}}
{{- end -}}
{{- toYaml $config -}}
{{- end -}}
