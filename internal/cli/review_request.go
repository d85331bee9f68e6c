package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// requestOptions are review's flags that build the AdmissionReviews from a
// manifest (SPEC 8.3) instead of reading one.
type requestOptions struct {
	manifest  string
	old       string
	user      string
	groups    []string
	operation string
	namespace string
}

func (r *requestOptions) register(f *pflag.FlagSet) {
	f.StringVarP(&r.manifest, "filename", "f", "", "decide the objects of this manifest (YAML or JSON, Lists, kubectl get -o yaml output; - is stdin) instead of an AdmissionReview")
	f.StringVar(&r.user, "as", "", "with -f: the user making the request (required with -f)")
	f.StringSliceVar(&r.groups, "groups", nil, "with -f: the user's groups (system:authenticated is added, as the API server adds it)")
	f.StringVar(&r.operation, "operation", "CREATE", "with -f: CREATE, UPDATE or DELETE")
	f.StringVar(&r.old, "old", "", "with -f and --operation UPDATE: the objects as they are in the cluster, matched by kind, namespace and name")
	f.StringVarP(&r.namespace, "namespace", "n", "", `with -f: the namespace of objects that name none (default "default")`)
}

// given reports the -f flags set without -f, by name.
func (r *requestOptions) given(f *pflag.FlagSet) []string {
	var set []string
	for _, name := range []string{"as", "groups", "operation", "old", "namespace"} {
		if f.Changed(name) {
			set = append(set, "--"+name)
		}
	}
	return set
}

// check refuses flag combinations before anything is read.
func (r *requestOptions) check() error {
	r.operation = strings.ToUpper(r.operation)
	switch {
	case r.user == "":
		return usageErrorf("-f needs --as USER: the user whose request is decided")
	case !slices.Contains([]string{"CREATE", "UPDATE", "DELETE"}, r.operation):
		return usageErrorf("--operation must be CREATE, UPDATE or DELETE, not %q", r.operation)
	case r.operation == "UPDATE" && r.old == "":
		return usageErrorf("--operation UPDATE needs --old FILE: the objects as they are in the cluster, which the update changes")
	case r.operation != "UPDATE" && r.old != "":
		return usageErrorf("--old is only for --operation UPDATE (a DELETE's old object is the -f object itself)")
	case r.manifest == "-" && r.old == "-":
		return usageErrorf("-f and --old cannot both read stdin")
	}
	return nil
}

// builtRequest is the AdmissionReview built for one manifest object.
type builtRequest struct {
	object manifestObject
	review []byte
}

// requests reads the manifest (and --old) and builds the AdmissionReview
// the API server would send for each object, in manifest order.
func (r *requestOptions) requests(stdin io.Reader) ([]builtRequest, error) {
	objects, err := r.read(stdin, r.manifest)
	if err != nil {
		return nil, err
	}
	if len(objects) == 0 {
		return nil, usageErrorf("%s: no objects", fileName(r.manifest))
	}
	olds := map[string]manifestObject{}
	if r.old != "" {
		oldObjects, err := r.read(stdin, r.old)
		if err != nil {
			return nil, err
		}
		for _, o := range oldObjects {
			olds[r.identity(&o)] = o
		}
	}
	out := make([]builtRequest, 0, len(objects))
	for _, o := range objects {
		var old *manifestObject
		if r.operation == "UPDATE" {
			found, ok := olds[r.identity(&o)]
			if !ok {
				return nil, usageErrorf("%s: %s%s is not in --old %s: an UPDATE needs the object as it is in the cluster", o.at, o.describe(), inNamespace(r.namespaceOf(&o)), fileName(r.old))
			}
			old = &found
		}
		review, err := r.review(&o, old)
		if err != nil {
			return nil, usageErrorf("%s: %v", o.at, err)
		}
		out = append(out, builtRequest{object: o, review: review})
	}
	return out, nil
}

func (r *requestOptions) read(stdin io.Reader, file string) ([]manifestObject, error) {
	data, err := readInput(stdin, file)
	if err != nil {
		return nil, usageErrorf("reading the manifest: %v", err)
	}
	objects, err := readManifest(file, data)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return objects, nil
}

// identity is how an object of --old is matched: group/Kind, namespace, name.
func (r *requestOptions) identity(o *manifestObject) string {
	return o.gvk.Group + "/" + o.gvk.Kind + "\x00" + r.namespaceOf(o) + "\x00" + o.name
}

// namespaceOf is the namespace the object is created in: its own, else
// --namespace, else default; "" for a cluster-scoped kind.
func (r *requestOptions) namespaceOf(o *manifestObject) string {
	switch {
	case clusterScoped[o.gvk.GroupKind().String()]:
		return ""
	case o.namespace != "":
		return o.namespace
	case r.namespace != "":
		return r.namespace
	}
	return "default"
}

// review is the AdmissionReview v1 the API server would send.
func (r *requestOptions) review(o, old *manifestObject) ([]byte, error) {
	namespace := r.namespaceOf(o)
	if namespace != "" {
		// The API server sets the request's namespace on an object that
		// names none before admission.
		metadata, _ := o.object["metadata"].(map[string]any)
		metadata["namespace"] = namespace
	}
	requestNamespace := namespace
	if o.gvk.Group == "" && o.gvk.Kind == "Namespace" && r.operation != "CREATE" {
		// A namespace's own URL (/api/v1/namespaces/NAME) names it as the
		// request's namespace.
		requestNamespace = o.name
	}
	gvk := metav1.GroupVersionKind(o.gvk)
	gvr := metav1.GroupVersionResource{Group: o.gvk.Group, Version: o.gvk.Version, Resource: clusterview.Resource(o.gvk)}
	dryRun := false
	req := &admissionv1.AdmissionRequest{
		UID:             uuid.NewUUID(),
		Kind:            gvk,
		Resource:        gvr,
		RequestKind:     &gvk,
		RequestResource: &gvr,
		Name:            o.name,
		Namespace:       requestNamespace,
		Operation:       admissionv1.Operation(r.operation),
		UserInfo:        authenticationv1.UserInfo{Username: r.user, Groups: groupsOf(r.user, r.groups)},
		DryRun:          &dryRun,
	}
	raw, err := json.Marshal(o.object)
	if err != nil {
		return nil, err
	}
	options := map[string]string{"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[r.operation]
	req.Options = runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"` + options + `"}`)}
	switch r.operation {
	case "DELETE":
		req.OldObject = runtime.RawExtension{Raw: raw}
	case "UPDATE":
		req.Object = runtime.RawExtension{Raw: raw}
		if namespace != "" {
			metadata, _ := old.object["metadata"].(map[string]any)
			metadata["namespace"] = namespace
		}
		oldRaw, err := json.Marshal(old.object)
		if err != nil {
			return nil, err
		}
		req.OldObject = runtime.RawExtension{Raw: oldRaw}
	default:
		req.Object = runtime.RawExtension{Raw: raw}
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admission.Version, Kind: admission.Kind},
		Request:  req,
	})
}

// groupsOf are the groups the API server gives an authenticated user:
// the ones given, system:authenticated, and a service account's own.
func groupsOf(user string, given []string) []string {
	groups := slices.Clone(given)
	add := func(g string) {
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	if rest, ok := strings.CutPrefix(user, "system:serviceaccount:"); ok {
		if namespace, _, ok := strings.Cut(rest, ":"); ok {
			add("system:serviceaccounts")
			add("system:serviceaccounts:" + namespace)
		}
	}
	add("system:authenticated")
	return groups
}

// clusterScoped are the built-in kinds (and the Gateway API's and
// tenantguard's own neighbours') that live in no namespace, by group/Kind
// as schema.GroupKind prints it (Kind.group).
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

// fileName is the file as errors name it.
func fileName(file string) string {
	if file == "-" {
		return "<stdin>"
	}
	return file
}

// inNamespace is ` in namespace "NS"`, or nothing for "".
func inNamespace(namespace string) string {
	if namespace == "" {
		return ""
	}
	return fmt.Sprintf(" in namespace %q", namespace)
}
