package request

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// The operations a request is built for.
const (
	Create = "CREATE"
	Update = "UPDATE"
	Delete = "DELETE"
)

// Spec is what a request is built from.
type Spec struct {
	// GVK is the object's group, version and kind; Resource its resource,
	// "" for the one the kind's name gives (clusterview.Resource).
	GVK      schema.GroupVersionKind
	Resource string
	// Name and Namespace are the object's; Namespace is "" for a
	// cluster-scoped kind.
	Name, Namespace string
	// Operation is Create, Update or Delete.
	Operation string
	// User and Groups are the requester as the API server authenticated
	// it: Groups as they are sent (see Groups).
	User   string
	Groups []string
	// Object is the object's JSON: the new object of a CREATE or UPDATE,
	// the old object of a DELETE. Old is an UPDATE's old object.
	Object, Old []byte
}

// Review is the AdmissionReview v1 the API server would send, as JSON.
// The objects are sent as given: a caller sets metadata.namespace on an
// object that names none, as the API server does before admission.
func Review(s Spec) ([]byte, error) {
	requestNamespace := s.requestNamespace()
	gvk := metav1.GroupVersionKind(s.GVK)
	resource := s.Resource
	if resource == "" {
		resource = clusterview.Resource(s.GVK)
	}
	gvr := metav1.GroupVersionResource{Group: s.GVK.Group, Version: s.GVK.Version, Resource: resource}
	dryRun := false
	req := &admissionv1.AdmissionRequest{
		UID:             uuid.NewUUID(),
		Kind:            gvk,
		Resource:        gvr,
		RequestKind:     &gvk,
		RequestResource: &gvr,
		Name:            s.Name,
		Namespace:       requestNamespace,
		Operation:       admissionv1.Operation(s.Operation),
		UserInfo:        authenticationv1.UserInfo{Username: s.User, Groups: s.Groups},
		DryRun:          &dryRun,
	}
	options, ok := map[string]string{Create: "CreateOptions", Update: "UpdateOptions", Delete: "DeleteOptions"}[s.Operation]
	if !ok {
		return nil, fmt.Errorf("operation %q is not CREATE, UPDATE or DELETE", s.Operation)
	}
	req.Options = runtime.RawExtension{Raw: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"` + options + `"}`)}
	switch s.Operation {
	case Delete:
		req.OldObject = runtime.RawExtension{Raw: s.Object}
	case Update:
		req.Object = runtime.RawExtension{Raw: s.Object}
		req.OldObject = runtime.RawExtension{Raw: s.Old}
	default:
		req.Object = runtime.RawExtension{Raw: s.Object}
	}
	return json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admission.Version, Kind: admission.Kind},
		Request:  req,
	})
}

// requestNamespace is the namespace the request names: the object's, and
// a Namespace's own name, as its URL (/api/v1/namespaces/NAME) names it and
// the API server's create handler does for a create.
func (s Spec) requestNamespace() string {
	if s.GVK.Group == "" && s.GVK.Kind == "Namespace" {
		return s.Name
	}
	return s.Namespace
}

// Decode builds the request and decodes it as the admission server does.
func Decode(s Spec) (*admission.Request, error) {
	review, err := Review(s)
	if err != nil {
		return nil, err
	}
	return admission.Decode(review)
}

// Groups are the groups the API server gives an authenticated user: the
// ones given, system:authenticated, and a service account's own.
func Groups(user string, given []string) []string {
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
