{{/* Name of every object: the release name, with -tenantguard unless it says so already. */}}
{{- define "tenantguard.fullname" -}}
{{- if contains "tenantguard" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-tenantguard" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tenantguard.selectorLabels" -}}
app.kubernetes.io/name: tenantguard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tenantguard.labels" -}}
{{ include "tenantguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tenantguard.registryConfigMap" -}}
{{- default (printf "%s-registry" (include "tenantguard.fullname" .)) .Values.existingRegistryConfigMap -}}
{{- end -}}

{{- define "tenantguard.tlsSecret" -}}
{{- default (printf "%s-tls" (include "tenantguard.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{- define "tenantguard.serviceAccount" -}}
{{- include "tenantguard.fullname" . -}}
{{- end -}}

{{/* The user name the server runs as, which the rules let change companions. */}}
{{- define "tenantguard.manager" -}}
{{- printf "system:serviceaccount:%s:%s" .Release.Namespace (include "tenantguard.serviceAccount" .) -}}
{{- end -}}

{{/* Counted resources split into {group: [resources]}. */}}
{{- define "tenantguard.countedByGroup" -}}
{{- $groups := dict -}}
{{- range .Values.countedResources -}}
{{- $parts := splitn "." 2 . -}}
{{- $group := default "" $parts._1 -}}
{{- $_ := set $groups $group (append (get $groups $group | default list) $parts._0) -}}
{{- end -}}
{{- toJson $groups -}}
{{- end -}}
