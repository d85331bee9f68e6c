package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/request"
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
	// defaults, when set, changes a created object as the API server does
	// before admission (limitRangeDefaults), given its namespace.
	defaults func(namespace string, obj map[string]any)
	// clusterScoped, when set, reports the kinds of other APIs that live in
	// no namespace (the library's: catalog.Catalog.ClusterScoped).
	clusterScoped func(schema.GroupKind) bool
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
		if o.name == "" && r.operation != "CREATE" {
			return nil, usageErrorf("%s: %s has a generateName and no name, which only a CREATE takes: %s names an existing object", o.at, o.describe(), map[string]string{"UPDATE": "an UPDATE", "DELETE": "a DELETE"}[r.operation])
		}
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
	case request.ClusterScoped(o.gvk.GroupKind()), r.clusterScoped != nil && r.clusterScoped(o.gvk.GroupKind()):
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
	if r.defaults != nil && r.operation == "CREATE" {
		r.defaults(r.namespaceOf(o), o.object)
	}
	namespace := r.namespaceOf(o)
	if namespace != "" {
		// The API server sets the request's namespace on an object that
		// names none before admission.
		metadata, _ := o.object["metadata"].(map[string]any)
		metadata["namespace"] = namespace
	}
	raw, err := json.Marshal(o.object)
	if err != nil {
		return nil, err
	}
	spec := request.Spec{GVK: o.gvk, Name: o.name, Namespace: namespace, Operation: r.operation, User: r.user, Groups: request.Groups(r.user, r.groups), Object: raw}
	if r.operation == request.Update {
		if namespace != "" {
			metadata, _ := old.object["metadata"].(map[string]any)
			metadata["namespace"] = namespace
		}
		if spec.Old, err = json.Marshal(old.object); err != nil {
			return nil, err
		}
	}
	return request.Review(spec)
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
