package request

import "k8s.io/apimachinery/pkg/runtime/schema"

// ClusterScoped reports whether a kind lives in no namespace: the built-in
// kinds (and the Gateway API's and tenantguard's own neighbours') that do.
func ClusterScoped(gk schema.GroupKind) bool { return clusterScoped[gk.String()] }

// clusterScoped are the cluster-scoped kinds by group/Kind as
// schema.GroupKind prints it (Kind.group).
var clusterScoped = map[string]bool{
	"Namespace": true, "Node": true, "PersistentVolume": true, "ComponentStatus": true,
	"ClusterRole.rbac.authorization.k8s.io": true, "ClusterRoleBinding.rbac.authorization.k8s.io": true,
	"PriorityClass.scheduling.k8s.io": true, "StorageClass.storage.k8s.io": true,
	"CSIDriver.storage.k8s.io": true, "CSINode.storage.k8s.io": true, "VolumeAttachment.storage.k8s.io": true,
	"VolumeAttributesClass.storage.k8s.io": true, "RuntimeClass.node.k8s.io": true,
	"IngressClass.networking.k8s.io": true, "IPAddress.networking.k8s.io": true, "ServiceCIDR.networking.k8s.io": true,
	"GatewayClass.gateway.networking.k8s.io":                        true,
	"CustomResourceDefinition.apiextensions.k8s.io":                 true,
	"APIService.apiregistration.k8s.io":                             true,
	"CertificateSigningRequest.certificates.k8s.io":                 true,
	"ValidatingWebhookConfiguration.admissionregistration.k8s.io":   true,
	"MutatingWebhookConfiguration.admissionregistration.k8s.io":     true,
	"ValidatingAdmissionPolicy.admissionregistration.k8s.io":        true,
	"ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io": true,
	"MutatingAdmissionPolicy.admissionregistration.k8s.io":          true,
	"MutatingAdmissionPolicyBinding.admissionregistration.k8s.io":   true,
	"FlowSchema.flowcontrol.apiserver.k8s.io":                       true,
	"PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io":       true,
	"DeviceClass.resource.k8s.io":                                   true,
	"ResourceSlice.resource.k8s.io":                                 true,
	"ClusterTrustBundle.certificates.k8s.io":                        true,
	"TokenReview.authentication.k8s.io":                             true,
	"SelfSubjectReview.authentication.k8s.io":                       true,
	"SubjectAccessReview.authorization.k8s.io":                      true,
	"SelfSubjectAccessReview.authorization.k8s.io":                  true,
	"SelfSubjectRulesReview.authorization.k8s.io":                   true,
	"StorageVersion.internal.apiserver.k8s.io":                      true,
	"StorageVersionMigration.storagemigration.k8s.io":               true,
}
