package engine

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
)

func TestRuleDocumentsRefuseDataAsOPAsConflictCheckDoes(t *testing.T) {
	compiler, err := compile(map[string]string{
		"a.rego": "package tenantguard.a\n\nx := 1\n\nf(y) := y\n",
		"b.rego": "package tenantguard.b.c\n\ndeny contains \"d\" if input.d\n",
		"g.rego": "package tenantguard.g\n\nh.i := 1\n\nh.j.k := 2\n",
	}, ast.EvalModeIR)
	if err != nil {
		t.Fatal(err)
	}
	docs := ruleDocumentsOf(compiler)
	tests := []struct {
		name string
		data map[string]any
		want []string // the errors' messages; none when nothing conflicts
	}{
		{name: "data beside the rules conflicts with none", data: map[string]any{"tenantguard": map[string]any{"registry": map[string]any{"x": 1}}}},
		{name: "data at a rule's path conflicts", data: map[string]any{"tenantguard": map[string]any{"a": map[string]any{"x": 2}}}, want: []string{"conflicting rule for data path tenantguard/a/x found"}},
		{name: "data at a function's path conflicts", data: map[string]any{"tenantguard": map[string]any{"a": map[string]any{"f": 2}}}, want: []string{"conflicting rule for data path tenantguard/a/f found"}},
		{name: "data at a deeper package's rule conflicts", data: map[string]any{"tenantguard": map[string]any{"b": map[string]any{"c": map[string]any{"deny": []any{}}}}}, want: []string{"conflicting rule for data path tenantguard/b/c/deny found"}},
		{name: "an empty object at a rule's path conflicts too", data: map[string]any{"tenantguard": map[string]any{"a": map[string]any{"x": map[string]any{}}}}, want: []string{"conflicting rule for data path tenantguard/a/x found"}},
		{name: "an empty object at a package's path conflicts with none", data: map[string]any{"tenantguard": map[string]any{"a": map[string]any{}}}},
		{name: "data at two rules' paths conflicts twice", data: map[string]any{"tenantguard": map[string]any{"a": map[string]any{"x": 1}, "g": map[string]any{"h": map[string]any{"i": 1}}}}, want: []string{"conflicting rule for data path tenantguard/a/x found", "conflicting rule for data path tenantguard/g/h/i found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := inmem.NewFromObject(tt.data)
			txn, err := store.NewTransaction(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer store.Abort(ctx, txn)
			exists := storage.NonEmpty(ctx, store, txn)
			var errs ast.Errors
			if err := docs.conflicts(exists); err != nil && !errors.As(err, &errs) {
				t.Fatalf("conflicts: %v, not ast.Errors", err)
			}
			got, opa := messages(errs), messages(ast.CheckPathConflicts(compiler, exists))
			slices.Sort(got)
			slices.Sort(opa) // OPA's walk visits a node's children in no fixed order
			if !slices.Equal(got, tt.want) || !slices.Equal(opa, tt.want) {
				t.Errorf("conflicts: %q, OPA's check: %q; want %q from both", got, opa, tt.want)
			}
		})
	}
}

// messages are the errors' messages, in order.
func messages(errs ast.Errors) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Message)
	}
	return out
}
