package clusterview

import (
	"fmt"
	"math"
	"strconv"
)

// checkManifest reports the first field the view reads whose value has the
// wrong type, with its path (metadata.labels: expected a mapping, got a
// list), in a manifest author's words rather than the decoder's Go types.
func checkManifest(obj map[string]any) error {
	for _, key := range []string{"apiVersion", "kind", "preemptionPolicy"} {
		if err := want(obj, key, key, "a string"); err != nil {
			return err
		}
	}
	if err := want(obj, "value", "value", "a whole number"); err != nil {
		return err
	}
	if err := want(obj, "metadata", "metadata", "a mapping"); err != nil {
		return err
	}
	metadata, _ := obj["metadata"].(map[string]any)
	for _, key := range []string{"name", "namespace"} {
		if err := want(metadata, key, "metadata."+key, "a string"); err != nil {
			return err
		}
	}
	if err := want(metadata, "labels", "metadata.labels", "a mapping"); err != nil {
		return err
	}
	labels, _ := metadata["labels"].(map[string]any)
	for key := range labels {
		if err := want(labels, key, "metadata.labels."+key, "a string"); err != nil {
			return err
		}
	}
	return nil
}

// want checks that m[key], when present and not null, is what kind says:
// "a string", "a whole number" or "a mapping".
func want(m map[string]any, key, path, kind string) error {
	v, ok := m[key]
	if !ok || v == nil {
		return nil
	}
	var fits bool
	switch kind {
	case "a string":
		_, fits = v.(string)
	case "a mapping":
		_, fits = v.(map[string]any)
	default:
		fits = isWhole(v)
	}
	if fits {
		return nil
	}
	return fmt.Errorf("%s: expected %s, got %s", path, kind, describe(v))
}

// isWhole is true for a whole number as YAML or JSON decoding gives it.
func isWhole(v any) bool {
	switch n := v.(type) {
	case int, int64, uint64:
		return true
	case float64:
		return n == math.Trunc(n)
	}
	return false
}

// describe names a decoded value: a scalar as written, else its kind.
func describe(v any) string {
	switch x := v.(type) {
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case string:
		return strconv.Quote(x)
	default:
		return fmt.Sprint(x)
	}
}
