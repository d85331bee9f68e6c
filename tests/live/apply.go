package live

import (
	"context"
	"errors"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// Apply applies every document of multi-document YAML with
// server-side apply (opts says the field manager, dry run and force) as the
// administrator of cp, and returns KIND/NAMESPACE/NAME of each document
// applied and every refusal.
func (p *ControlPlane) Apply(ctx context.Context, text string, opts metav1.PatchOptions) (applied []string, err error) {
	var objects []map[string]any
	for doc := range strings.SplitSeq(text, "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, err
		}
		if obj != nil { // nil: a document of comments only
			objects = append(objects, obj)
		}
	}
	return p.ApplyObjects(ctx, objects, opts)
}

// ApplyObjects is Apply of objects already decoded, such as an export's.
func (p *ControlPlane) ApplyObjects(ctx context.Context, objects []map[string]any, opts metav1.PatchOptions) (applied []string, err error) {
	client, err := dynamic.NewForConfig(p.Admin)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, o := range objects {
		obj := unstructured.Unstructured{Object: o}
		id := obj.GetKind() + "/" + obj.GetNamespace() + "/" + obj.GetName()
		gvr, err := p.Resource(obj.GroupVersionKind())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", id, err))
			continue
		}
		var ri dynamic.ResourceInterface = client.Resource(gvr)
		if ns := obj.GetNamespace(); ns != "" {
			ri = client.Resource(gvr).Namespace(ns)
		}
		body, err := obj.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, opts); err != nil {
			errs = append(errs, fmt.Errorf("%s refused: %w", id, err))
			continue
		}
		applied = append(applied, id)
	}
	return applied, errors.Join(errs...)
}

// Resource is the resource of a kind, from discovery.
func (p *ControlPlane) Resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, error) {
	resources, err := p.Client.Discovery().ServerResourcesForGroupVersion(gvk.GroupVersion().String())
	if err != nil {
		return schema.GroupVersionResource{}, err
	}
	for _, r := range resources.APIResources {
		if r.Kind == gvk.Kind && !strings.Contains(r.Name, "/") {
			return gvk.GroupVersion().WithResource(r.Name), nil
		}
	}
	return schema.GroupVersionResource{}, fmt.Errorf("no resource for %s", gvk)
}
