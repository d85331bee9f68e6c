package export

import (
	"slices"
	"strings"
)

// celRule is one rule id written in the CEL of ValidatingAdmissionPolicy,
// which Kyverno's ValidatingPolicy shares: the requests it matches, the
// variables it reads (from celVariables, by name) and its validations.
type celRule struct {
	id string
	// resources are matched as {group: [resource...]}; nil for every resource.
	resources  map[string][]string
	operations []string
	// tenantOnly matches only namespaces carrying the tenant label.
	tenantOnly bool
	variables  []string
	// validation must hold; message is a CEL expression for the denial.
	validation, message string
}

// celVariable is a named CEL expression, read as variables.<name>.
type celVariable struct{ name, expression string }

// celVariables are every variable the rules read, each after those it
// uses. "registry" and "managers" are prepended by each engine: from the
// parameter object for VAP, as literals for Kyverno.
var celVariables = []celVariable{
	// maps of the registry, read through orValue: the registry's empty maps
	// are left out (celRegistry), since a parameter object's empty map does
	// not evaluate as a map in the API server
	{"tenants", `variables.registry.?tenants.orValue({})`},
	{"adminUsers", `variables.registry.?administrators.?users.orValue({})`},
	{"adminGroups", `variables.registry.?administrators.?groups.orValue({})`},
	{"ownerUsers", `variables.registry.?owners.?users.orValue({})`},
	{"ownerGroups", `variables.registry.?owners.?groups.orValue({})`},
	{"label", `string(variables.registry.settings.tenantLabel)`},
	{"user", `request.userInfo.username`},
	{"groups", `request.userInfo.?groups.orValue([])`},
	{"isAdmin", `variables.user in variables.adminUsers || variables.groups.exists(g, g in variables.adminGroups)`},
	{"owned", `variables.tenants.filter(t, (variables.user in variables.ownerUsers && t in variables.ownerUsers[variables.user]) || variables.groups.exists(g, g in variables.ownerGroups && t in variables.ownerGroups[g]))`},
	// namespaces
	{"newLabels", `object == null ? {} : object.metadata.?labels.orValue({})`},
	{"oldLabels", `oldObject == null ? {} : oldObject.metadata.?labels.orValue({})`},
	{"newAnnotations", `object == null ? {} : object.metadata.?annotations.orValue({})`},
	{"oldAnnotations", `oldObject == null ? {} : oldObject.metadata.?annotations.orValue({})`},
	{"hasNewLabel", `variables.label in variables.newLabels`},
	{"creating", `request.operation == "CREATE"`},
	{"prefixCandidates", `variables.tenants.filter(t, request.name.startsWith(t + "-"))`},
	{"prefixTenant", `variables.prefixCandidates.filter(t, variables.prefixCandidates.all(u, size(u) <= size(t)))`},
	{"wanted", `variables.hasNewLabel ? [variables.newLabels[variables.label]] : (size(variables.owned) == 1 ? variables.owned : variables.prefixTenant)`},
	{"target", `!variables.creating ? [] : (!variables.isAdmin ? variables.wanted : (variables.hasNewLabel ? [variables.newLabels[variables.label]] : []))`},
	{"ownedText", `size(variables.owned) == 0 ? "none" : variables.owned.join(", ")`},
	{"saTenants", `variables.registry.?serviceAccountNamespaces.orValue({})[?request.name].orValue([])`},
	{"metaTenant", `variables.creating ? variables.target : (request.operation != "UPDATE" ? [] : (variables.label in variables.oldLabels ? [variables.oldLabels[variables.label]] : (variables.hasNewLabel ? [variables.newLabels[variables.label]] : [])))`},
	{"metaConfig", `size(variables.metaTenant) > 0 && variables.metaTenant[0] in variables.tenants ? variables.tenants[variables.metaTenant[0]] : variables.registry.defaultTenant`},
	// workloads
	{"tenant", `namespaceObject == null ? "" : namespaceObject.metadata.?labels.orValue({})[?variables.label].orValue("")`},
	{"config", `variables.tenant in variables.tenants ? variables.tenants[variables.tenant] : variables.registry.defaultTenant`},
	{"spec", specOf("object")},
	{"oldSpec", specOf("oldObject")},
	{"podApplies", `variables.tenant != "" && (request.operation == "CREATE" || variables.spec != variables.oldSpec)`},
	{"containers", `variables.spec.?initContainers.orValue([]) + variables.spec.?containers.orValue([]) + variables.spec.?ephemeralContainers.orValue([])`},
}

// specOf is the pod spec of a pod carrier, by kind.
func specOf(obj string) string {
	return strings.NewReplacer("OBJ", obj).Replace(`OBJ == null ? {} : (request.kind.kind == "Pod" ? OBJ.?spec.orValue({}) : (request.kind.kind == "CronJob" ? OBJ.?spec.?jobTemplate.?spec.?template.?spec.orValue({}) : (request.kind.kind == "PodTemplate" ? OBJ.?template.?spec.orValue({}) : OBJ.?spec.?template.?spec.orValue({}))))`)
}

// storageClassOf is a claim's StorageClass (the beta annotation first), or null.
func storageClassOf(claim string) string {
	return strings.NewReplacer("CLAIM", claim).Replace(`(CLAIM.?metadata.?annotations[?"volume.beta.kubernetes.io/storage-class"].hasValue() ? CLAIM.metadata.annotations["volume.beta.kubernetes.io/storage-class"] : CLAIM.?spec.?storageClassName.orValue(null))`)
}

// claimRefused holds when a claim (before: the same claim before the
// update) names a StorageClass the tenant does not allow, or names none for a
// tenant without a default while it named one before or did not exist.
func claimRefused(claim, before string) string {
	return strings.NewReplacer("CLASS", storageClassOf(claim), "BEFORE", storageClassOf(before), "OLDCLAIM", before).Replace(
		`((CLASS != null && !(request.operation == "UPDATE" && BEFORE == CLASS) && !(CLASS in variables.config.storageClasses.?allowed.orValue([]) || (variables.config.storageClasses.?allowedRegex.orValue("") != "" && string(CLASS).matches(variables.config.storageClasses.allowedRegex)))) || (CLASS == null && (request.operation == "CREATE" || size(OLDCLAIM) == 0 || BEFORE != null) && variables.config.storageClasses.?default.orValue("") == ""))`)
}

var (
	createUpdateDelete = []string{"CREATE", "UPDATE", "DELETE"}
	createUpdate       = []string{"CREATE", "UPDATE"}
	namespaceResources = map[string][]string{"": {"namespaces", "namespaces/status", "namespaces/finalize"}}
	// podCarrierResources are the resources with a pod spec (the webhook's routing)
	podCarrierResources = map[string][]string{
		"":      {"pods", "pods/ephemeralcontainers", "podtemplates", "replicationcontrollers"},
		"apps":  {"deployments", "replicasets", "statefulsets", "daemonsets"},
		"batch": {"jobs", "cronjobs"},
	}
	base          = []string{"tenants", "adminUsers", "adminGroups", "ownerUsers", "ownerGroups", "label", "user", "groups", "isAdmin", "owned"}
	namespaceVars = append(slices.Clone(base), "newLabels", "oldLabels", "newAnnotations", "oldAnnotations", "hasNewLabel", "creating", "prefixCandidates", "prefixTenant", "wanted", "target", "ownedText", "saTenants", "metaTenant", "metaConfig")
	workloadVars  = append(slices.Clone(base), "tenant", "config")
	podVars       = append(slices.Clone(workloadVars), "spec", "oldSpec", "podApplies", "containers")
)

func withPVCs(m map[string][]string) map[string][]string {
	out := map[string][]string{}
	for g, rs := range m {
		out[g] = append([]string{}, rs...)
	}
	out[""] = append(out[""], "persistentvolumeclaims")
	return out
}

const notAdmin = `!variables.isAdmin`

// unlabelledRefused holds unless an owner creates a tenant namespace without
// the tenant label. tenantguard's mutating webhook adds the label; without
// it the namespace would be outside every workload rule, so the exports,
// which cannot mutate, ask for it instead.
const unlabelledRefused = `!(variables.creating && ` + notAdmin + ` && !variables.hasNewLabel && size(variables.target) > 0 && variables.target[0] in variables.owned)`

// reservedRefused holds when a non-administrator creates the namespace of a
// ServiceAccount administrator, or of a ServiceAccount owner other than as
// an owner of its only tenant.
const reservedRefused = `variables.creating && ` + notAdmin + ` && (` + adminNamespace + ` || (size(variables.saTenants) > 0 && !(size(variables.saTenants) == 1 && size(variables.target) > 0 && variables.target[0] == variables.saTenants[0] && variables.target[0] in variables.owned)))`

// adminNamespace holds for the namespace of a ServiceAccount administrator.
const adminNamespace = `request.name in variables.registry.?administratorNamespaces.orValue({})`

// celRules are the rules CEL can express; the others are listed in
// celNotExpressible.
var celRules = []celRule{
	{
		id: "namespace-ownership", resources: namespaceResources, operations: createUpdateDelete, variables: namespaceVars,
		validation: `!(variables.creating && ` + notAdmin + ` && (size(variables.target) > 0 || size(variables.owned) > 0) && !(size(variables.target) > 0 && variables.target[0] in variables.owned)) && !(request.operation == "DELETE" && ` + notAdmin + ` && variables.label in variables.oldLabels && !(variables.oldLabels[variables.label] in variables.owned)) && ` + unlabelledRefused + ` && !(` + reservedRefused + `)`,
		message: `(` + reservedRefused + `) ? (` + adminNamespace + ` ? "[namespace-ownership] namespace \"" + request.name + "\" holds ServiceAccount administrators of tenantguard, so only administrators may create it" : size(variables.saTenants) == 1 ? "[namespace-ownership] namespace \"" + request.name + "\" holds ServiceAccount owners of tenant \"" + string(variables.saTenants[0]) + "\", so only that tenant's owners may create it, in that tenant" : "[namespace-ownership] namespace \"" + request.name + "\" holds ServiceAccount owners of tenants " + variables.saTenants.join(", ") + ", so only administrators may create it") : !(` + unlabelledRefused + `) ? "[namespace-ownership] namespace \"" + request.name + "\" is for tenant \"" + string(variables.target[0]) + "\" and must say so: set the label \"" + variables.label + ": " + string(variables.target[0]) + "\" (no tenantguard webhook adds it here)" : request.operation == "DELETE" ? "[namespace-ownership] only owners of tenant \"" + string(variables.oldLabels[variables.label]) + "\" and administrators may delete namespace \"" + request.name + "\"; \"" + variables.user + "\" is neither" : ` +
			`(size(variables.target) == 0 ? "[namespace-ownership] \"" + variables.user + "\" owns several tenants (" + variables.ownedText + ") and cannot tell which one namespace \"" + request.name + "\" is for; set the label \"" + variables.label + "\" or start the name with \"<tenant>-\"" : ` +
			`(size(variables.owned) == 0 ? "[namespace-ownership] \"" + variables.user + "\" owns no tenant, so cannot create namespace \"" + request.name + "\" in tenant \"" + string(variables.target[0]) + "\"; ask a platform administrator to add you as an owner" : ` +
			`(!(variables.target[0] in variables.tenants) ? "[namespace-ownership] tenant \"" + string(variables.target[0]) + "\" does not exist; label \"" + variables.label + "\" must name a tenant you own: " + variables.ownedText : ` +
			`"[namespace-ownership] \"" + variables.user + "\" is not an owner of tenant \"" + string(variables.target[0]) + "\"; allowed: tenants " + variables.ownedText)))`,
	},
	{
		id: "namespace-prefix", resources: namespaceResources, operations: createUpdate, variables: namespaceVars,
		validation: `!(variables.creating && ` + notAdmin + ` && variables.registry.settings.?forceTenantPrefix.orValue(false) == true && size(variables.target) > 0 && !request.name.startsWith(string(variables.target[0]) + "-"))`,
		message:    `"[namespace-prefix] namespace \"" + request.name + "\" must be named \"" + string(variables.target[0]) + "-\" followed by a name, because tenant names are enforced as prefixes; e.g. \"" + string(variables.target[0]) + "-" + request.name + "\""`,
	},
	{
		id: "protected-namespace", resources: namespaceResources, operations: createUpdateDelete, variables: namespaceVars,
		validation: `!(` + notAdmin + ` && (size(variables.target) > 0 || (request.operation == "UPDATE" && variables.hasNewLabel)) && variables.registry.settings.?protectedNamespaces.orValue([]).exists(p, request.name.matches(p)))`,
		message:    `"[protected-namespace] namespace \"" + request.name + "\" is protected (matches " + variables.registry.settings.protectedNamespaces.filter(p, request.name.matches(p))[0] + ") and cannot be created or claimed by a tenant; choose another name"`,
	},
	{
		id: "tenant-label-immutable", resources: namespaceResources, operations: createUpdate, variables: namespaceVars,
		validation: `!(request.operation == "UPDATE" && ` + notAdmin + ` && ((variables.label in variables.oldLabels) != variables.hasNewLabel || (variables.hasNewLabel && variables.oldLabels[variables.label] != variables.newLabels[variables.label])))`,
		message:    `"[tenant-label-immutable] the label \"" + variables.label + "\" of namespace \"" + request.name + "\" cannot be " + (!(variables.label in variables.oldLabels) ? "added" : (!variables.hasNewLabel ? "removed" : "changed from \"" + variables.oldLabels[variables.label] + "\" to \"" + variables.newLabels[variables.label] + "\"")) + " by \"" + variables.user + "\"; only administrators move namespaces between tenants"`,
	},
	{
		id: "protected-metadata", resources: namespaceResources, operations: createUpdate, variables: namespaceVars,
		validation: `!(` + notAdmin + ` && size(variables.metaTenant) > 0 && (` + metadataChanged("Labels") + ` || ` + metadataChanged("Annotations") + `))`,
		message:    `"[protected-metadata] protected labels and annotations of namespace \"" + request.name + "\" (" + (variables.metaConfig.?protectedLabels.orValue([]) + variables.metaConfig.?protectedAnnotations.orValue([])).join(", ") + ") cannot be added, changed or removed by \"" + variables.user + "\"; only administrators set them"`,
	},
	{
		id: "host-path", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && variables.config.pods.?allowHostPath.orValue(false) != true && variables.spec.?volumes.orValue([]).exists(v, has(v.hostPath) && ` + hostPathRefused + `))`,
		message:    `"[host-path] hostPath volumes are not allowed for tenant \"" + variables.tenant + "\" except read-only or granted prefixes: " + (size(variables.config.pods.?allowedHostPaths.orValue([])) == 0 ? "no hostPath volumes; use emptyDir or a PersistentVolumeClaim" : variables.config.pods.allowedHostPaths.map(g, g.pathPrefix + (g.?readOnly.orValue(false) == true ? " (read-only)" : "")).join(", "))`,
	},
	{
		id: "host-network", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && variables.spec.?hostNetwork.orValue(false) == true && variables.config.pods.?allowHostNetwork.orValue(false) != true)`,
		message:    `"[host-network] hostNetwork is not allowed for pods of tenant \"" + variables.tenant + "\"; use the pod network and expose ports through a Service"`,
	},
	{
		id: "host-namespaces", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && ((variables.spec.?hostPID.orValue(false) == true && variables.config.pods.?allowHostPID.orValue(false) != true) || (variables.spec.?hostIPC.orValue(false) == true && variables.config.pods.?allowHostIPC.orValue(false) != true)))`,
		message:    `"[host-namespaces] hostPID and hostIPC are not allowed for pods of tenant \"" + variables.tenant + "\"; remove them so the pod keeps its own namespaces"`,
	},
	{
		id: "host-ports", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && variables.config.pods.?allowHostPorts.orValue(false) != true && variables.containers.exists(c, c.?ports.orValue([]).exists(p, p.?hostPort.orValue(0) != 0)))`,
		message:    `"[host-ports] hostPort is not allowed for tenant \"" + variables.tenant + "\"; expose the port through a Service instead"`,
	},
	{
		id: "privileged", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && variables.config.pods.?allowPrivileged.orValue(false) != true && (variables.containers.exists(c, c.?securityContext.?privileged.orValue(false) == true || c.?securityContext.?windowsOptions.?hostProcess.orValue(false) == true) || variables.spec.?securityContext.?windowsOptions.?hostProcess.orValue(false) == true))`,
		message:    `"[privileged] privileged containers and Windows hostProcess pods are not allowed for tenant \"" + variables.tenant + "\"; remove securityContext.privileged and windowsOptions.hostProcess"`,
	},
	{
		id: "priority-class", resources: podCarrierResources, operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.podApplies && has(variables.config.priorityClasses) && variables.spec.?priorityClassName.orValue("") != "" && !(variables.spec.priorityClassName in variables.config.priorityClasses.?allowed.orValue([]) || (variables.config.priorityClasses.?allowedRegex.orValue("") != "" && variables.spec.priorityClassName.matches(variables.config.priorityClasses.allowedRegex))))`,
		message:    `"[priority-class] PriorityClass \"" + variables.spec.priorityClassName + "\" is not allowed for tenant \"" + variables.tenant + "\"; allowed: " + ` + allowedText("priorityClasses"),
	},
	{
		id: "storage-class", resources: withPVCs(podCarrierResources), operations: createUpdate, tenantOnly: true, variables: podVars,
		validation: `!(variables.tenant != "" && has(variables.config.storageClasses) && (` +
			`(request.kind.kind == "PersistentVolumeClaim" && ` + claimRefused("object", "(oldObject == null ? {} : oldObject)") + `) || ` +
			`(request.kind.kind == "StatefulSet" && object.?spec.?volumeClaimTemplates.orValue([]).exists(i, c, ` + claimRefused("c", "(oldObject == null ? {} : oldObject.?spec.?volumeClaimTemplates.orValue([])[?i].orValue({}))") + `)) || ` +
			`(request.kind.kind != "PersistentVolumeClaim" && variables.spec.?volumes.orValue([]).exists(i, v, has(v.ephemeral) && has(v.ephemeral.volumeClaimTemplate) && ` + claimRefused("v.ephemeral.volumeClaimTemplate", "variables.oldSpec.?volumes.orValue([]).filter(o, o.name == v.name)[?0].?ephemeral.?volumeClaimTemplate.orValue({})") + `))))`,
		message: `"[storage-class] a claim of this " + request.kind.kind + " names a StorageClass tenant \"" + variables.tenant + "\" may not use, or names none and the tenant has no default; allowed: " + ` + allowedText("storageClasses"),
	},
	{
		id: "service-type", resources: map[string][]string{"": {"services"}}, operations: createUpdate, tenantOnly: true, variables: workloadVars,
		validation: `!(variables.tenant != "" && [object.?spec.?type.orValue("ClusterIP")].all(type, type in ` + serviceFlags + ` && variables.config.services[?` + serviceFlags + `[type]].orValue(false) != true && !(request.operation == "UPDATE" && oldObject.?spec.?type.orValue("ClusterIP") == type))) && !(` + nodePortsRefused + `)`,
		message:    `(` + nodePortsRefused + `) ? "[service-type] LoadBalancer Service \"" + request.name + "\" would open node ports, which tenant \"" + variables.tenant + "\" may not use; set spec.allocateLoadBalancerNodePorts: false and name no nodePort" : "[service-type] Service type \"" + object.?spec.?type.orValue("ClusterIP") + "\" is not allowed for tenant \"" + variables.tenant + "\"; allowed: " + (["ClusterIP"] + ["NodePort", "LoadBalancer", "ExternalName"].filter(t, variables.config.services[?` + serviceFlags + `[t]].orValue(false) == true)).join(", ")`,
	},
	{
		id: "external-ips", resources: map[string][]string{"": {"services"}}, operations: createUpdate, tenantOnly: true, variables: workloadVars,
		validation: `!(variables.tenant != "" && variables.config.services.?allowExternalIPs.orValue(false) != true && size(object.?spec.?externalIPs.orValue([])) > 0 && !(request.operation == "UPDATE" && object.?spec.?externalIPs.orValue([]) == oldObject.?spec.?externalIPs.orValue([])))`,
		message:    `"[external-ips] spec.externalIPs (" + object.spec.externalIPs.join(", ") + ") is not allowed for tenant \"" + variables.tenant + "\"; remove it and expose the Service through an allowed type"`,
	},
	{
		id: "managed-resource", resources: nil, operations: createUpdateDelete, tenantOnly: true, variables: workloadVars,
		validation: `!(variables.tenant != "" && (` + managedBy("object") + ` || ` + managedBy("oldObject") + `) && !(variables.isAdmin || variables.user in variables.managers || variables.user in ["system:apiserver", "system:kube-controller-manager", "system:kube-scheduler"] || variables.user.startsWith("system:serviceaccount:kube-system:")))`,
		message:    `"[managed-resource] " + request.kind.kind + " \"" + request.name + "\" is managed by tenantguard and cannot be " + {"CREATE": "created", "UPDATE": "changed", "DELETE": "deleted"}[request.operation] + " by \"" + variables.user + "\"; change the tenant registry instead"`,
	},
}

// celNotExpressible says why the rules left out of celRules cannot be
// written in CEL: an admission policy sees one object, never the others.
var celNotExpressible = map[string]string{
	"namespace-quota": "not expressible: counting a tenant's namespaces needs the other namespaces, and a policy sees only the request's object",
	"tenant-quota":    "not expressible: counting a tenant's objects across its namespaces needs the other objects, and a policy sees only the request's object",
}

// nodePortsRefused holds for a LoadBalancer Service that opens node ports
// (allocated by default, or named) in a tenant allowed LoadBalancer but not
// NodePort, unless an update keeps the node ports it had.
var nodePortsRefused = strings.NewReplacer("OPENS(object)", opensNodePorts("object"), "OPENS(oldObject)", opensNodePorts("oldObject")).Replace(
	`variables.tenant != "" && object.?spec.?type.orValue("ClusterIP") == "LoadBalancer" && variables.config.services.?allowLoadBalancer.orValue(false) == true && variables.config.services.?allowNodePort.orValue(false) != true && OPENS(object) && !(request.operation == "UPDATE" && oldObject.?spec.?type.orValue("ClusterIP") == "LoadBalancer" && OPENS(oldObject))`)

func opensNodePorts(obj string) string {
	return `(` + obj + `.?spec.?allocateLoadBalancerNodePorts.orValue(true) != false || ` + obj + `.?spec.?ports.orValue([]).exists(p, p.?nodePort.orValue(0) != 0))`
}

const serviceFlags = `{"NodePort": "allowNodePort", "LoadBalancer": "allowLoadBalancer", "ExternalName": "allowExternalName"}`

// hostPathRefused holds for a hostPath volume v no grant allows, or one only
// read-only grants allow that some container mounts writable.
const hostPathRefused = `[v.hostPath.?path.orValue("")].all(path, [path.split("/").filter(s, s != "" && s != ".")].all(segs, ` +
	`[(path.startsWith("/") && !(".." in segs)) ? variables.config.pods.?allowedHostPaths.orValue([]).filter(g, [g.pathPrefix.split("/").filter(s, s != "" && s != ".")].all(gs, size(gs) == 0 || ("/" + segs.join("/") + "/").startsWith("/" + gs.join("/") + "/"))) : []].all(grants, ` +
	`size(grants) == 0 || (grants.all(g, g.?readOnly.orValue(false) == true) && variables.containers.exists(c, c.?volumeMounts.orValue([]).exists(m, m.name == v.name && m.?readOnly.orValue(false) != true))))))`

// metadataChanged holds when a protected label (or annotation) other than
// the tenant label is added, changed or removed.
func metadataChanged(field string) string {
	return strings.NewReplacer("OLD", "variables.old"+field, "NEW", "variables.new"+field, "LIST", "protected"+field).Replace(
		`(OLD.map(k, k) + NEW.map(k, k)).exists(k, k != variables.label && ((k in OLD) != (k in NEW) || (k in OLD && OLD[k] != NEW[k])) && variables.metaConfig.?LIST.orValue([]).exists(p, p == k || (p.endsWith("/") && k.startsWith(p))))`)
}

// managedBy holds when the object carries tenantguard's managed-by label.
func managedBy(obj string) string {
	return obj + ` != null && ` + obj + `.metadata.?labels.orValue({})[?"app.kubernetes.io/managed-by"].orValue("") == "tenantguard"`
}

// allowedText lists a class policy's allowed names, as the Rego rules do.
func allowedText(policy string) string {
	return strings.NewReplacer("P", "variables.config."+policy).Replace(
		`(size(P.?allowed.orValue([])) == 0 && P.?allowedRegex.orValue("") == "" ? "none" : (P.?allowed.orValue([]).join(", ") + (size(P.?allowed.orValue([])) > 0 && P.?allowedRegex.orValue("") != "" ? ", or " : "") + (P.?allowedRegex.orValue("") != "" ? "names matching " + P.allowedRegex : "")))`)
}
