package clusterview

import (
	"maps"
	"testing"
)

func TestLabelsReadAsTheMapTheyWereMadeFrom(t *testing.T) {
	tests := []struct {
		name string
		m    map[string]string
	}{
		{"no labels", nil},
		{"one label", map[string]string{"tenantguard.io/tenant": "oil"}},
		{"labels out of order, one with an empty value", map[string]string{"z": "1", "a": "", "kubernetes.io/metadata.name": "ns", "m": "3", "b": "4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLabels(tt.m)
			if l.Len() != len(tt.m) || !maps.Equal(asMap(l), tt.m) {
				t.Fatalf("labels %v (%d), want %v", asMap(l), l.Len(), tt.m)
			}
			for k, want := range tt.m {
				if got, ok := l.Lookup(k); !ok || got != want || l.Get(k) != want {
					t.Errorf("label %q = %q, %v; want %q", k, got, ok, want)
				}
			}
			for _, absent := range []string{"", "0", "y", "zz", "tenantguard.io/tenant-x"} {
				if _, set := tt.m[absent]; set {
					continue
				}
				if got, ok := l.Lookup(absent); ok || got != "" {
					t.Errorf("label %q not set, read as %q, %v", absent, got, ok)
				}
			}
			var last string
			for k := range l.All() {
				if k < last {
					t.Fatalf("keys out of order: %q after %q", k, last)
				}
				last = k
			}
		})
	}
}

func TestLabelsKeepNothingOfTheMap(t *testing.T) {
	m := map[string]string{"a": "1"}
	l := NewLabels(m)
	m["a"], m["b"] = "2", "3"
	if l.Get("a") != "1" || l.Len() != 1 {
		t.Fatalf("labels changed with the map: %v", asMap(l))
	}
}

// asMap is the labels as a map.
func asMap(l Labels) map[string]string {
	m := make(map[string]string, l.Len())
	for k, v := range l.All() {
		m[k] = v
	}
	return m
}
