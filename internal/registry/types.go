package registry

// APIVersion and Kind identify a TenantRegistry document.
const (
	APIVersion = "tenantguard.io/v1"
	Kind       = "TenantRegistry"
	// DataKey is the ConfigMap key that holds the document.
	DataKey = "tenants.yaml"
	// DefaultTenantLabel names a namespace's tenant unless settings say otherwise.
	DefaultTenantLabel = "tenantguard.io/tenant"
)

// Registry is the TenantRegistry document as written by platform teams.
type Registry struct {
	APIVersion string   `yaml:"apiVersion" json:"apiVersion"`
	Kind       string   `yaml:"kind" json:"kind"`
	Settings   Settings `yaml:"settings" json:"settings"`
	Tenants    []Tenant `yaml:"tenants" json:"tenants"`
}

// Settings apply to every tenant.
type Settings struct {
	TenantLabel         string    `yaml:"tenantLabel" json:"tenantLabel"`
	ForceTenantPrefix   bool      `yaml:"forceTenantPrefix" json:"forceTenantPrefix"`
	ProtectedNamespaces []string  `yaml:"protectedNamespaces" json:"protectedNamespaces"`
	Administrators      []Subject `yaml:"administrators" json:"administrators"`
	// CordonExempt are requesters a tenant's cordon lets through, and no
	// other rule: cluster add-ons that keep a frozen tenant's running
	// workloads working (cert-manager renewing certificates, say).
	CordonExempt         []Subject         `yaml:"cordonExempt" json:"cordonExempt"`
	ProtectedLabels      []string          `yaml:"protectedLabels" json:"protectedLabels"`
	ProtectedAnnotations []string          `yaml:"protectedAnnotations" json:"protectedAnnotations"`
	Enforcement          map[string]string `yaml:"enforcement" json:"enforcement"`
}

// Subject is a User, Group or ServiceAccount. A ServiceAccount is named by its
// full user name, system:serviceaccount:NAMESPACE:NAME.
type Subject struct {
	Kind string `yaml:"kind" json:"kind"`
	Name string `yaml:"name" json:"name"`
}

// Tenant is one tenant of the cluster.
type Tenant struct {
	Name                 string         `yaml:"name" json:"name"`
	Owners               []Subject      `yaml:"owners" json:"owners"`
	NamespaceQuota       *int64         `yaml:"namespaceQuota" json:"namespaceQuota,omitempty"`
	ProtectedLabels      []string       `yaml:"protectedLabels" json:"protectedLabels"`
	ProtectedAnnotations []string       `yaml:"protectedAnnotations" json:"protectedAnnotations"`
	Pods                 PodPolicy      `yaml:"pods" json:"pods"`
	PriorityClasses      *ClassPolicy   `yaml:"priorityClasses" json:"priorityClasses,omitempty"`
	StorageClasses       *ClassPolicy   `yaml:"storageClasses" json:"storageClasses,omitempty"`
	Images               *ImagePolicy   `yaml:"images" json:"images,omitempty"`
	RuntimeClasses       *ClassPolicy   `yaml:"runtimeClasses" json:"runtimeClasses,omitempty"`
	NodePlacement        *NodePlacement `yaml:"nodePlacement" json:"nodePlacement,omitempty"`
	Ingress              *IngressPolicy `yaml:"ingress" json:"ingress,omitempty"`
	// Cordoned refuses creates and updates in the tenant's namespaces
	// (deletes pass); administrators and settings.cordonExempt are exempt.
	Cordoned bool `yaml:"cordoned" json:"cordoned"`
	// PreventNamespaceDeletion leaves deleting the tenant's namespaces to
	// administrators.
	PreventNamespaceDeletion bool             `yaml:"preventNamespaceDeletion" json:"preventNamespaceDeletion"`
	Services                 ServicePolicy    `yaml:"services" json:"services"`
	Quotas                   map[string]int64 `yaml:"quotas" json:"quotas"`
	// ResourceQuota sums resources over all of the tenant's namespaces.
	ResourceQuota *TenantResourceQuota `yaml:"resourceQuota" json:"resourceQuota,omitempty"`
	Companions    Companions           `yaml:"companions" json:"companions"`
	// Extensions are the tenant's settings for rule families of one's own
	// (a --policy-overlay), which tenantguard itself does not read: any
	// value under each key, as the family's rules read it
	// (tenancy.tenant.extensions.KEY).
	Extensions map[string]any `yaml:"extensions" json:"extensions,omitempty"`
}

// PodPolicy says which kinds of host access a tenant's pods may have.
type PodPolicy struct {
	AllowHostPath    bool            `yaml:"allowHostPath" json:"allowHostPath"`
	AllowedHostPaths []HostPathGrant `yaml:"allowedHostPaths" json:"allowedHostPaths"`
	AllowHostNetwork bool            `yaml:"allowHostNetwork" json:"allowHostNetwork"`
	AllowHostPID     bool            `yaml:"allowHostPID" json:"allowHostPID"`
	AllowHostIPC     bool            `yaml:"allowHostIPC" json:"allowHostIPC"`
	AllowHostPorts   bool            `yaml:"allowHostPorts" json:"allowHostPorts"`
	AllowPrivileged  bool            `yaml:"allowPrivileged" json:"allowPrivileged"`
}

// HostPathGrant allows hostPath volumes under a path even when AllowHostPath is false.
type HostPathGrant struct {
	PathPrefix string `yaml:"pathPrefix" json:"pathPrefix"`
	ReadOnly   bool   `yaml:"readOnly" json:"readOnly"`
}

// ClassPolicy restricts PriorityClass or StorageClass names and names the default.
type ClassPolicy struct {
	Allowed      []string `yaml:"allowed" json:"allowed"`
	AllowedRegex string   `yaml:"allowedRegex" json:"allowedRegex"`
	Default      string   `yaml:"default" json:"default"`
}

// ImagePolicy says where a tenant's containers may pull their images from
// and with which pull policies.
type ImagePolicy struct {
	// AllowedRegistries are reference prefixes (registry.example.com,
	// ghcr.io/oil), matched at a path boundary on the normalized reference.
	AllowedRegistries []string `yaml:"allowedRegistries" json:"allowedRegistries"`
	// AllowedRegex admits normalized references it matches.
	AllowedRegex string `yaml:"allowedRegex" json:"allowedRegex"`
	// AllowedPullPolicies are the effective pull policies allowed (Always,
	// IfNotPresent, Never); empty allows every one.
	AllowedPullPolicies []string `yaml:"allowedPullPolicies" json:"allowedPullPolicies"`
}

// NodePlacement keeps a tenant's pods on its own nodes.
type NodePlacement struct {
	// NodeSelector is merged into every pod; a pod naming another value
	// for one of its keys is refused.
	NodeSelector map[string]string `yaml:"nodeSelector" json:"nodeSelector"`
	// Tolerations are added to every pod.
	Tolerations []Toleration `yaml:"tolerations" json:"tolerations"`
	// AllowNodeName admits pods that set spec.nodeName.
	AllowNodeName bool `yaml:"allowNodeName" json:"allowNodeName"`
}

// Toleration mirrors a core/v1 Toleration.
type Toleration struct {
	Key               string `yaml:"key" json:"key,omitempty"`
	Operator          string `yaml:"operator" json:"operator,omitempty"`
	Value             string `yaml:"value" json:"value,omitempty"`
	Effect            string `yaml:"effect" json:"effect,omitempty"`
	TolerationSeconds *int64 `yaml:"tolerationSeconds" json:"tolerationSeconds,omitempty"`
}

// TenantResourceQuota is ResourceQuota's hard limits, summed over all of a
// tenant's namespaces (package usage says what each object adds).
type TenantResourceQuota struct {
	// Hard maps a quota resource name (requests.cpu, limits.memory,
	// requests.storage, requests.nvidia.com/gpu ...) to its limit.
	Hard map[string]string `yaml:"hard" json:"hard"`
	// limits are Hard's entries, sorted by key, as the server sums them:
	// set when the registry is compiled, so that requests parse nothing.
	limits []ResourceLimit
}

// ResourceLimit is one entry of a resource quota's hard limits as the
// server sums it.
type ResourceLimit struct {
	// Key is the key as the registry gives it (cpu); Canonical the name
	// usage is counted under (requests.cpu, usage.Canonical).
	Key, Canonical string
	// Amount is the limit in its resource's scale (thousandths of a CPU,
	// bytes, objects: usage.Amount).
	Amount int64
}

// Limits are the quota's hard limits, sorted by key.
func (q *TenantResourceQuota) Limits() []ResourceLimit { return q.limits }

// Limited reports whether the quota limits the resource counted under
// canonical, by any of its names.
func (q *TenantResourceQuota) Limited(canonical string) bool {
	for _, l := range q.limits {
		if l.Canonical == canonical {
			return true
		}
	}
	return false
}

// IngressPolicy says which classes and hostnames a tenant's Ingresses,
// Gateways and routes may use.
type IngressPolicy struct {
	// Classes restricts Ingress spec.ingressClassName (and the legacy
	// kubernetes.io/ingress.class annotation); Default is set on create.
	Classes *ClassPolicy `yaml:"classes" json:"classes,omitempty"`
	// GatewayClasses restricts Gateway spec.gatewayClassName. A Gateway
	// must name its class, so there is no default.
	GatewayClasses *ClassPolicy `yaml:"gatewayClasses" json:"gatewayClasses,omitempty"`
	// Hostnames restricts every host a tenant object publishes.
	Hostnames *HostnamePolicy `yaml:"hostnames" json:"hostnames,omitempty"`
	// HostnameCollision is the scope in which a host another object
	// already serves is refused: cluster, tenant, namespace or off (the
	// default).
	HostnameCollision string `yaml:"hostnameCollision" json:"hostnameCollision,omitempty"`
}

// Hostname collision scopes.
const (
	CollisionCluster   = "cluster"
	CollisionTenant    = "tenant"
	CollisionNamespace = "namespace"
	CollisionOff       = "off"
)

// HostnamePolicy restricts the hosts a tenant publishes.
type HostnamePolicy struct {
	// Allowed holds exact host names and "*.suffix" patterns, which admit
	// the names under the suffix (at a label boundary).
	Allowed []string `yaml:"allowed" json:"allowed"`
	// AllowedRegex admits the hosts it matches.
	AllowedRegex string `yaml:"allowedRegex" json:"allowedRegex"`
	// AllowWildcard admits wildcard hosts ("*.x") that the tenant's
	// allowed names cover.
	AllowWildcard bool `yaml:"allowWildcard" json:"allowWildcard"`
}

// ServicePolicy says which Service exposures a tenant may use.
type ServicePolicy struct {
	AllowNodePort     bool `yaml:"allowNodePort" json:"allowNodePort"`
	AllowLoadBalancer bool `yaml:"allowLoadBalancer" json:"allowLoadBalancer"`
	AllowExternalName bool `yaml:"allowExternalName" json:"allowExternalName"`
	AllowExternalIPs  bool `yaml:"allowExternalIPs" json:"allowExternalIPs"`
}

// Companions are the resources the generator creates in each tenant namespace.
type Companions struct {
	ResourceQuota          *ResourceQuotaSpec `yaml:"resourceQuota" json:"resourceQuota,omitempty"`
	LimitRange             *LimitRangeSpec    `yaml:"limitRange" json:"limitRange,omitempty"`
	NetworkIsolation       *bool              `yaml:"networkIsolation" json:"networkIsolation,omitempty"`
	OwnerClusterRoles      []string           `yaml:"ownerClusterRoles" json:"ownerClusterRoles"`
	AdditionalRoleBindings []RoleBindingSpec  `yaml:"additionalRoleBindings" json:"additionalRoleBindings"`
}

// ResourceQuotaSpec is the hard limits of a tenant namespace's ResourceQuota.
type ResourceQuotaSpec struct {
	Hard map[string]string `yaml:"hard" json:"hard"`
}

// LimitRangeSpec is the limits of a tenant namespace's LimitRange.
type LimitRangeSpec struct {
	Limits []LimitRangeItem `yaml:"limits" json:"limits"`
}

// LimitRangeItem mirrors a core/v1 LimitRangeItem with quantities as strings.
type LimitRangeItem struct {
	Type                 string            `yaml:"type" json:"type"`
	Max                  map[string]string `yaml:"max" json:"max,omitempty"`
	Min                  map[string]string `yaml:"min" json:"min,omitempty"`
	Default              map[string]string `yaml:"default" json:"default,omitempty"`
	DefaultRequest       map[string]string `yaml:"defaultRequest" json:"defaultRequest,omitempty"`
	MaxLimitRequestRatio map[string]string `yaml:"maxLimitRequestRatio" json:"maxLimitRequestRatio,omitempty"`
}

// RoleBindingSpec binds a ClusterRole to subjects in every namespace of a tenant.
type RoleBindingSpec struct {
	ClusterRole string    `yaml:"clusterRole" json:"clusterRole"`
	Subjects    []Subject `yaml:"subjects" json:"subjects"`
}

// Enforcement modes of a rule.
const (
	ModeDeny   = "deny"
	ModeWarn   = "warn"
	ModeDryRun = "dryrun"
)
