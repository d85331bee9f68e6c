package auditloop

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/tenantguard/tenantguard/internal/jsonast"
)

// Pager lists the objects of a resource in all namespaces page by page, as
// the API server answers a list request with limit and continue: the JSON
// text of the list. The audit decodes it straight into OPA's values
// (jsonast), never into maps of Go values: that decode cost a tenth of the
// CPU and of the allocation (BENCHMARKS.md, bench-audit).
type Pager interface {
	// Page is at most limit objects of the resource, from the continue
	// token given ("" for the first page).
	Page(ctx context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error)
}

// restPager is a Pager on the API server.
type restPager struct{ client rest.Interface }

// NewRESTPager is a Pager that lists from the API server of cfg, through
// the HTTP client given (the manager's, which its other clients share).
func NewRESTPager(cfg *rest.Config, client *http.Client) (Pager, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	c, err := rest.UnversionedRESTClientForConfigAndClient(cfg, client)
	if err != nil {
		return nil, fmt.Errorf("the audit's list client: %w", err)
	}
	return restPager{client: c}, nil
}

// Page lists one page, in JSON.
func (p restPager) Page(ctx context.Context, gvr schema.GroupVersionResource, limit int64, token string) ([]byte, error) {
	path := []string{"/apis", gvr.Group, gvr.Version, gvr.Resource}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version, gvr.Resource}
	}
	req := p.client.Get().AbsPath(path...).Param("limit", strconv.FormatInt(limit, 10)).SetHeader("Accept", "application/json")
	if token != "" {
		req = req.Param("continue", token)
	}
	// Do, not DoRaw: a refusal's Status is decoded (DoRaw keeps only its
	// code), so that its reason and a 410's continue token reach the
	// caller.
	res := req.Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}

// listPaths are what a page's decode leaves out: the items' managed
// fields, often the largest part of an object and read by no rule.
var listPaths = []jsonast.Path{{Keys: []string{"items", jsonast.Every, "metadata", "managedFields"}, Drop: true}}

// Keys of a list.
var (
	keyItems    = ast.InternedTerm("items")
	keyMetadata = ast.InternedTerm("metadata")
	keyContinue = ast.InternedTerm("continue")
)

// DecodePage decodes a page of a list as the loop does: its objects, their
// managed fields left out, values they repeat shared through cache, their
// strings sharing data (which must stay unchanged), and the token of the
// next page ("" after the last).
func DecodePage(cache *jsonast.Cache, data []byte) (items []ast.Object, next string, err error) {
	v, err := cache.ParsePaths(data, listPaths, nil)
	if err != nil {
		return nil, "", err
	}
	list, ok := v.(ast.Object)
	if !ok {
		return nil, "", fmt.Errorf("the list is %s, not an object", ast.ValueName(v))
	}
	if metadata, ok := jsonast.ValueAt(list, keyMetadata).(ast.Object); ok {
		if s, ok := jsonast.ValueAt(metadata, keyContinue).(ast.String); ok {
			next = string(s)
		}
	}
	switch all := jsonast.ValueAt(list, keyItems).(type) {
	case nil, ast.Null:
	case *ast.Array:
		items = make([]ast.Object, 0, all.Len())
		for i := range all.Len() {
			item, ok := all.Elem(i).Value.(ast.Object)
			if !ok {
				return nil, "", fmt.Errorf("item %d of the list is %s, not an object", i, ast.ValueName(all.Elem(i).Value))
			}
			items = append(items, item)
		}
	default:
		return nil, "", fmt.Errorf("the list's items are %s, not an array", ast.ValueName(all))
	}
	return items, next, nil
}
