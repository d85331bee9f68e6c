{{/* The chart's name, or nameOverride. */}}
{{- define "tenantguard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Name of every object: fullnameOverride, else the release name, with
   -<name> unless it holds the name already. Cluster-scoped objects use it
   too. */}}
{{- define "tenantguard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "tenantguard.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The server's --instance: every name it writes (companions, the owners'
   ClusterRoles and ClusterRoleBinding, its field manager and Lease) derives
   from it, as generator.Instance derives them. */}}
{{- define "tenantguard.instance" -}}
{{- default (include "tenantguard.fullname" .) .Values.instance -}}
{{- end -}}

{{/* The labels the server puts on what it writes (generator.Instance.Labels):
   the managed-by label, and the instance's unless it is the default. */}}
{{- define "tenantguard.instanceLabels" -}}
app.kubernetes.io/managed-by: tenantguard
{{- $instance := include "tenantguard.instance" . }}
{{- if ne $instance "tenantguard" }}
tenantguard.io/instance: {{ $instance }}
{{- end }}
{{- end -}}

{{- define "tenantguard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tenantguard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tenantguard.labels" -}}
{{ include "tenantguard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tenantguard.registryConfigMap" -}}
{{- $r := include "tenantguard.registryValue" . | fromJson -}}
{{- default (printf "%s-registry" (include "tenantguard.fullname" .)) $r.name -}}
{{- end -}}

{{/* The registry value as an object: a string is its document (the
   --set-file registry=FILE of earlier versions). */}}
{{- define "tenantguard.registryValue" -}}
{{- if kindIs "string" .Values.registry -}}
{{- dict "create" true "name" "" "document" .Values.registry | toJson -}}
{{- else -}}
{{- .Values.registry | toJson -}}
{{- end -}}
{{- end -}}

{{/* The registry document the ConfigMap holds under tenants.yaml: the
   TenantRegistry document given, or the one a ConfigMap manifest given
   holds, so that the ConfigMap in the cluster never holds a ConfigMap
   (`kubectl get configmap -o yaml` is then a registry the CLI reads). */}}
{{- define "tenantguard.registryDocument" -}}
{{- $r := include "tenantguard.registryValue" . | fromJson -}}
{{- $doc := $r.document | fromYaml -}}
{{- if and (kindIs "map" $doc) (eq (toString (get $doc "kind")) "ConfigMap") -}}
{{- $data := get $doc "data" -}}
{{- $held := and (kindIs "map" $data) (hasKey $data "tenants.yaml") | ternary (get $data "tenants.yaml") nil -}}
{{- if not (kindIs "string" $held) -}}
{{- fail "registry.document is a ConfigMap without data.tenants.yaml as a string (tenants.yaml: | followed by the TenantRegistry document)" -}}
{{- end -}}
{{- $held -}}
{{- else -}}
{{- $r.document -}}
{{- end -}}
{{- end -}}

{{- define "tenantguard.tlsSecret" -}}
{{- default (printf "%s-tls" (include "tenantguard.fullname" .)) .Values.tls.secretName -}}
{{- end -}}

{{- define "tenantguard.serviceAccount" -}}
{{- default (include "tenantguard.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{/* The image: repository@digest when a digest is given, else :tag. */}}
{{- define "tenantguard.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
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

{{/* A Go duration (such as 1h30m or 2160h) in seconds, as the server parses
   it: the sum of its number-unit parts. */}}
{{- define "tenantguard.seconds" -}}
{{- $units := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 -}}
{{- $total := 0.0 -}}
{{- range regexFindAll "[0-9.]+[a-zµ]+" (toString .) -1 -}}
{{- $number := regexFind "^[0-9.]+" . -}}
{{- $unit := trimPrefix $number . -}}
{{- $total = addf $total (mulf (float64 $number) (get $units $unit)) -}}
{{- end -}}
{{- $total -}}
{{- end -}}
