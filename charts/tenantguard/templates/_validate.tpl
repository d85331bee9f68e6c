{{/* Combinations the schema cannot see, refused with one line each: what
   the server would refuse at start, and what would render an unsafe
   install. Included by deployment.yaml, so every render runs it. */}}
{{- define "tenantguard.validate" -}}
{{- $v := .Values -}}
{{- $seconds := dict -}}
{{- range $name, $d := dict "quota.reservationTTL" $v.quota.reservationTTL "tls.builtin.caValidity" $v.tls.builtin.caValidity "tls.builtin.certValidity" $v.tls.builtin.certValidity "tls.builtin.checkInterval" $v.tls.builtin.checkInterval "tls.certManager.duration" $v.tls.certManager.duration "tls.certManager.renewBefore" $v.tls.certManager.renewBefore -}}
{{- $_ := set $seconds $name (include "tenantguard.seconds" $d | float64) -}}
{{- end -}}
{{- if and $v.rbac.extraClusterRules (not $v.rbac.create) -}}
{{- fail "rbac.extraClusterRules needs rbac.create=true: with rbac.create=false the chart renders no ClusterRole to add them to (add them to the one you bring)" -}}
{{- end -}}
{{- if lt (get $seconds "quota.reservationTTL") 30.0 -}}
{{- fail (printf "quota.reservationTTL=%s: must be at least 30s, the longest a decision can take (the server refuses less)" $v.quota.reservationTTL) -}}
{{- end -}}
{{- if eq $v.tls.mode "builtin" -}}
{{- $ca := get $seconds "tls.builtin.caValidity" -}}
{{- $cert := get $seconds "tls.builtin.certValidity" -}}
{{- if or (le $ca 0.0) (le $cert 0.0) -}}
{{- fail "tls.builtin.caValidity and certValidity must be positive (the server refuses 0)" -}}
{{- end -}}
{{- if lt $ca (mulf 3 $cert) -}}
{{- fail (printf "tls.builtin.caValidity=%s must be at least three times certValidity=%s (the server refuses less)" $v.tls.builtin.caValidity $v.tls.builtin.certValidity) -}}
{{- end -}}
{{- if gt (get $seconds "tls.builtin.checkInterval") (divf $cert 6) -}}
{{- fail (printf "tls.builtin.checkInterval=%s must be at most a sixth of certValidity=%s, so that no renewal is missed (the server refuses more)" $v.tls.builtin.checkInterval $v.tls.builtin.certValidity) -}}
{{- end -}}
{{- end -}}
{{- if and (eq $v.tls.mode "cert-manager") (ge (get $seconds "tls.certManager.renewBefore") (get $seconds "tls.certManager.duration")) -}}
{{- fail (printf "tls.certManager.renewBefore=%s must be shorter than duration=%s (cert-manager would renew without end)" $v.tls.certManager.renewBefore $v.tls.certManager.duration) -}}
{{- end -}}
{{- if and (eq $v.tls.mode "secret") (not $v.tls.caBundle) -}}
{{- fail "tls.mode=secret needs tls.caBundle (base64 PEM of the CA that signed the Secret's certificate): without it the API server trusts no certificate and every tenant request fails" -}}
{{- end -}}
{{- $min := $v.podDisruptionBudget.minAvailable -}}
{{- /* a number: float64 from a values file, int64 from --set */ -}}
{{- if and $v.podDisruptionBudget.enabled (or (kindIs "float64" $min) (kindIs "int64" $min) (kindIs "int" $min)) (ge (int $min) (int $v.replicaCount)) -}}
{{- fail (printf "podDisruptionBudget.minAvailable=%v with replicaCount=%v would block every node drain: raise replicaCount or lower minAvailable (or podDisruptionBudget.enabled=false)" $v.podDisruptionBudget.minAvailable $v.replicaCount) -}}
{{- end -}}
{{- /* a percentage: Kubernetes rounds the pods it keeps up */ -}}
{{- if and $v.podDisruptionBudget.enabled (kindIs "string" $min) (hasSuffix "%" $min) -}}
{{- $kept := div (add (mul (int (trimSuffix "%" $min)) (int $v.replicaCount)) 99) 100 -}}
{{- if ge (int $kept) (int $v.replicaCount) -}}
{{- fail (printf "podDisruptionBudget.minAvailable=%s of replicaCount=%v keeps %v pods, all of them (rounded up), which would block every node drain: raise replicaCount or lower minAvailable (or podDisruptionBudget.enabled=false)" $min $v.replicaCount $kept) -}}
{{- end -}}
{{- end -}}
{{- $memoryLimit := toString $v.memoryLimit -}}
{{- $containerLimit := dig "limits" "memory" "" ($v.resources | default dict) -}}
{{- $noLimit := regexMatch "^0+(\\.0+)?([eE][0-9]+|Ki|Mi|Gi|Ti|k|M|G|T)?$" $memoryLimit -}}
{{- if and (eq (int $v.gcPercent) -1) (or $noLimit (and (eq $memoryLimit "auto") (not $containerLimit))) -}}
{{- fail (printf "gcPercent=-1 turns the garbage collector off, which needs a memory limit, and memoryLimit=%s sets none%s: the server would refuse to start" $memoryLimit (ternary " (auto without resources.limits.memory)" "" (eq $memoryLimit "auto"))) -}}
{{- end -}}
{{- $registry := include "tenantguard.registryValue" . | fromJson -}}
{{- if and (not $registry.create) $registry.document -}}
{{- fail "registry.document is set but registry.create=false: the chart would not write it; drop one of the two" -}}
{{- end -}}
{{- if and (not $v.serviceAccount.create) (not $v.serviceAccount.name) -}}
{{- fail "serviceAccount.create=false needs serviceAccount.name, the existing ServiceAccount the server runs as" -}}
{{- end -}}
{{- if and $v.metrics.port (eq (int $v.metrics.port) (int $v.webhook.port)) -}}
{{- fail (printf "metrics.port and webhook.port are both %v; use metrics.port=0 to serve /metrics on the webhook port" $v.webhook.port) -}}
{{- end -}}
{{- if and $v.serviceMonitor.enabled (not $v.metrics.port) (eq $v.tls.mode "secret") -}}
{{- fail "serviceMonitor with metrics.port=0 and tls.mode=secret: the scraper would need the CA, which the Secret may not hold; set metrics.port" -}}
{{- end -}}
{{- end -}}
