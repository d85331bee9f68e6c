package clusterview

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	yamlv3 "gopkg.in/yaml.v3"

	"github.com/tenantguard/tenantguard/internal/usage"
	"github.com/tenantguard/tenantguard/internal/yamlerr"
)

// LoadFile reads cluster objects from a file: multi-document YAML, a JSON or
// YAML List (kind: List, items: [...]), or a JSON array.
func LoadFile(file string) ([]Object, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading objects: %w", err)
	}
	objects, err := Parse(data)
	var syntax *yamlerr.Error
	switch {
	case errors.As(err, &syntax) && syntax.Line > 0:
		return nil, fmt.Errorf("%s:%d: %s", file, syntax.Line, syntax.Message)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objects, nil
}

// Parse reads cluster objects from multi-document YAML, Lists or JSON arrays.
func Parse(data []byte) ([]Object, error) {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	var out []Object
	for doc := 1; ; doc++ {
		var node yamlv3.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			if syntax, ok := yamlerr.Syntax(err, data); ok {
				return nil, syntax // its line locates it in the file
			}
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		var raw any
		if err := node.Decode(&raw); err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if raw == nil {
			continue
		}
		objects, err := fromValue(raw)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		out = append(out, objects...)
	}
}

func fromValue(raw any) ([]Object, error) {
	switch v := raw.(type) {
	case []any:
		var out []Object
		for i, item := range v {
			objects, err := fromValue(item)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, objects...)
		}
		return out, nil
	case map[string]any:
		if kind, _ := v["kind"].(string); strings.HasSuffix(kind, "List") {
			items, _ := v["items"].([]any)
			return fromValue(items)
		}
		o, err := FromManifest(v)
		if err != nil {
			return nil, err
		}
		return []Object{o}, nil
	default:
		return nil, fmt.Errorf("expected a Kubernetes object, got %T", raw)
	}
}

// manifest is the part of an object the view reads.
type manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace"`
		Labels    map[string]string `json:"labels"`
	} `json:"metadata"`
	Value            *int32 `json:"value"`
	PreemptionPolicy string `json:"preemptionPolicy"`
}

// FromManifest turns a decoded Kubernetes object into a view Object.
func FromManifest(obj map[string]any) (Object, error) {
	if err := checkManifest(obj); err != nil {
		return Object{}, err
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return Object{}, err
	}
	var m manifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return Object{}, err
	}
	if m.APIVersion == "" || m.Kind == "" || m.Metadata.Name == "" {
		return Object{}, fmt.Errorf("object needs apiVersion, kind and metadata.name")
	}
	gv, err := schema.ParseGroupVersion(m.APIVersion)
	if err != nil {
		return Object{}, err
	}
	o := Object{
		Group:     gv.Group,
		Kind:      m.Kind,
		Resource:  Resource(gv.WithKind(m.Kind)),
		Namespace: m.Metadata.Namespace,
		Name:      m.Metadata.Name,
	}
	if o.Group == "" && o.Kind == "Namespace" {
		o.Labels = m.Metadata.Labels
		if o.Labels == nil {
			o.Labels = map[string]string{}
		}
	}
	if o.Usage, o.Uncounted, err = usageOf(o.Group, o.Kind, obj); err != nil {
		return Object{}, err
	}
	if ServesHosts(o.Group, o.Kind) {
		o.Hosts = HostsOf(o.Group, o.Kind, o.Namespace, obj)
	}
	if o.Group == "scheduling.k8s.io" && o.Kind == "PriorityClass" {
		pc := PriorityClass{PreemptionPolicy: m.PreemptionPolicy}
		if m.Value != nil {
			pc.Value = *m.Value
		}
		o.PriorityClass = &pc
	}
	return o, nil
}

// Resource returns the plural resource name of a kind as the API server
// names regular plurals: Kubernetes' own guess (Pod pods, Ingress
// ingresses, NetworkPolicy networkpolicies), and a vowel before a final y
// takes an s (Gateway gateways, which the guess makes gatewaies). A kind
// named otherwise (Endpoints endpoints) needs its resource given.
func Resource(gvk schema.GroupVersionKind) string {
	lower := strings.ToLower(gvk.Kind)
	if n := len(lower); n > 1 && lower[n-1] == 'y' && strings.ContainsRune("aeiou", rune(lower[n-2])) {
		return lower + "s"
	}
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural.Resource
}

// usageOf is what a pod or claim adds to its tenant's sums of quota
// resources, nil for other kinds, and whether it is a pod ResourceQuota no
// longer counts (Object.Uncounted).
func usageOf(group, kind string, obj map[string]any) (l usage.List, uncounted bool, err error) {
	if group == usage.ResourceClaimKind.Group && kind == usage.ResourceClaimKind.Kind {
		var claim resourcev1.ResourceClaim
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v1Claim(obj), &claim); err != nil {
			return nil, false, fmt.Errorf("resource claim %q: %w", claim.Name, err)
		}
		return DeviceClaimUsage(&claim), false, nil
	}
	if group != "" {
		return nil, false, nil
	}
	switch kind {
	case "Pod":
		var pod corev1.Pod
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &pod); err != nil {
			return nil, false, fmt.Errorf("pod %q: %w", pod.Name, err)
		}
		o := PodObject(&pod)
		return o.Usage, o.Uncounted, nil
	case "PersistentVolumeClaim":
		var pvc corev1.PersistentVolumeClaim
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &pvc); err != nil {
			return nil, false, fmt.Errorf("claim %q: %w", pvc.Name, err)
		}
		return ClaimUsage(&pvc), false, nil
	}
	return nil, false, nil
}

// PodUsage is what a pod adds to its tenant's sums as the view keeps it:
// never nil, so that a pod's usage is always replaced when it is seen again
// (an empty list once it has finished).
func PodUsage(pod *corev1.Pod) usage.List {
	return usage.Of(usage.Pod(pod))
}

// PodObject is a pod as the view counts it: what it adds to its tenant's
// sums, and Uncounted once ResourceQuota no longer counts it (finished, or
// past the grace period of its deletion), which Upsert takes out.
func PodObject(pod *corev1.Pod) Object {
	return Object{Kind: "Pod", Resource: "pods", Namespace: pod.Namespace, Name: pod.Name,
		Usage: PodUsage(pod), Uncounted: !usage.Charged(pod, time.Now())}
}

// ClaimUsage is what a claim adds to its tenant's sums as the view keeps it.
func ClaimUsage(pvc *corev1.PersistentVolumeClaim) usage.List {
	return usage.Of(usage.Claim(pvc))
}

// v1Claim is a ResourceClaim manifest in resource.k8s.io/v1's shape: one of
// v1beta1, whose exact device requests lie in the request itself, has them
// moved under exactly, as the API server converts them; others are as given.
// obj is not changed.
func v1Claim(obj map[string]any) map[string]any {
	field, _, _ := unstructured.NestedFieldNoCopy(obj, "spec", "devices", "requests")
	requests, _ := field.([]any)
	var moved []any
	for i, r := range requests {
		req, ok := r.(map[string]any)
		class, _ := req["deviceClassName"].(string)
		if alternatives, _ := req["firstAvailable"].([]any); !ok || class == "" || len(alternatives) > 0 {
			continue
		}
		if moved == nil {
			moved = slices.Clone(requests)
		}
		exactly := map[string]any{}
		for k, v := range req {
			if k != "name" && k != "firstAvailable" {
				exactly[k] = v
			}
		}
		moved[i] = map[string]any{"name": req["name"], "exactly": exactly}
	}
	if moved == nil {
		return obj
	}
	spec, _ := obj["spec"].(map[string]any)
	devices, _ := spec["devices"].(map[string]any)
	devices = maps.Clone(devices)
	devices["requests"] = moved
	spec = maps.Clone(spec)
	spec["devices"] = devices
	out := maps.Clone(obj)
	out["spec"] = spec
	return out
}

// DeviceClaimUsage is what a ResourceClaim adds to its tenant's sums as the
// view keeps it.
func DeviceClaimUsage(claim *resourcev1.ResourceClaim) usage.List {
	return usage.Of(usage.DeviceClaim(claim))
}
