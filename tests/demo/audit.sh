#!/usr/bin/env bash
# The audit on `make run`'s cluster (docs/cli.md, "Audit a registry change"):
# run `go run ./tests/demo -hold` in one terminal, export the KUBECONFIG it
# prints, then run this from the repository's root. It
#   1. gives gas a second namespace (gas-api), as carol of gas-team;
#   2. writes a proposed registry that tightens the one in force: oil no
#      longer pulls from registry.example, gas keeps one namespace and no
#      Service;
#   3. audits the cluster's objects (kubectl get ... -o yaml) against the
#      registry in force (nothing) and the proposed one (its rows);
#   4. puts the proposed registry in force and waits for the background
#      audit's reports (kubectl get reports / clusterreports, or
#      policyreports / clusterpolicyreports when the demo runs with
#      -audit-report-format wgpolicyk8s);
#   5. restores the registry and waits until the reports are pruned.
# TENANTGUARD is the binary (default bin/tenantguard: `make build`).
set -euo pipefail

TENANTGUARD=${TENANTGUARD:-bin/tenantguard}
NS=tenantguard-system
CM=tenantguard-registry
# what the audit checks (docs/cli.md, "Recipes"); the demo cluster serves the Gateway API,
# its experimental XListenerSet included
KINDS=namespaces,pods,podtemplates,replicationcontrollers,deployments,statefulsets,daemonsets,replicasets,jobs,cronjobs,services,persistentvolumeclaims,ingresses,gateways.gateway.networking.k8s.io,listenersets.gateway.networking.k8s.io,httproutes.gateway.networking.k8s.io,grpcroutes.gateway.networking.k8s.io,tlsroutes.gateway.networking.k8s.io,xlistenersets.gateway.networking.x-k8s.io
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say() { printf '\n$ %s\n' "$*"; }
run() { say "$*"; "$@"; }

# The report kinds of the reports the server wrote (it writes one format:
# --audit-report-format), empty while there is none.
OPENREPORTS="reports.openreports.io clusterreports.openreports.io"
WGPOLICY="policyreports.wgpolicyk8s.io clusterpolicyreports.wgpolicyk8s.io"
report_kinds() {
  local kinds
  for kinds in "$OPENREPORTS" "$WGPOLICY"; do
    if [ -n "$(kubectl get "${kinds/ /,}" -A -o name 2>/dev/null)" ]; then
      echo "$kinds"
      return
    fi
  done
}

has_reports() { [ -n "$(report_kinds)" ]; }
no_reports() { [ -z "$(report_kinds)" ]; }

# wait_for DESCRIPTION COMMAND...: until COMMAND succeeds, at most 2 minutes.
wait_for() {
  local what=$1
  shift
  for _ in $(seq 120); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 1
  done
  echo "gave up waiting for $what" >&2
  return 1
}

# put_registry FILE puts the registry of $work/FILE in force: the ConfigMap's
# tenants.yaml, applied server-side (its other fields kept).
put_registry() {
  say "kubectl create configmap -n $NS $CM --from-file=tenants.yaml=$1 --dry-run=client -o yaml | kubectl apply --server-side --force-conflicts --field-manager=audit-demo -f -"
  kubectl create configmap -n "$NS" "$CM" --from-file=tenants.yaml="$work/$1" --dry-run=client -o yaml |
    kubectl apply --server-side --force-conflicts --field-manager=audit-demo -f -
}

if ! kubectl get namespace gas-api >/dev/null 2>&1; then
  run kubectl --as carol --as-group gas-team --as-group tenants create namespace gas-api
fi

kubectl get configmap -n "$NS" "$CM" -o jsonpath='{.data.tenants\.yaml}' >"$work/current.yaml"
sed -e 's|allowedRegistries: \[registry.example, ghcr.io/oil\]|allowedRegistries: [ghcr.io/oil]|' \
  -e '/- name: gas/,$ s|namespaceQuota: 2|namespaceQuota: 1|' \
  -e '/- name: gas/,$ s|services: 4|services: 0|' "$work/current.yaml" >"$work/proposed.yaml"
if [ "$(diff "$work/current.yaml" "$work/proposed.yaml" | grep -c '^>')" != 3 ]; then
  echo "examples/registry.yaml changed: the three lines this script tightens are not where it expects them" >&2
  exit 2
fi
say "diff current.yaml proposed.yaml"
diff "$work/current.yaml" "$work/proposed.yaml" || true

say "$TENANTGUARD audit --registry current.yaml --objects <(kubectl get $KINDS -A -o yaml)"
"$TENANTGUARD" audit --registry "$work/current.yaml" --objects <(kubectl get "$KINDS" -A -o yaml)
say "$TENANTGUARD audit --registry proposed.yaml --objects <(kubectl get $KINDS -A -o yaml) --fail-on deny"
status=0
"$TENANTGUARD" audit --registry "$work/proposed.yaml" --objects <(kubectl get "$KINDS" -A -o yaml) --fail-on deny || status=$?
echo "(exit $status: 1 means the proposed registry would refuse what runs)"

put_registry proposed.yaml
echo "(the background audit runs 10 s after the last registry change)"
wait_for "the reports" has_reports
sleep 2 # the namespaces' reports and the cluster's are written one after the other
read -r namespaced cluster <<<"$(report_kinds)"
run kubectl get "$namespaced" -A
run kubectl get "$cluster"
run kubectl get "$namespaced" -n oil-dev tenantguard -o yaml

put_registry current.yaml
wait_for "the reports to be pruned" no_reports
run kubectl get "$namespaced" -A
run kubectl get "$cluster"
