package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/tenantguard/tenantguard/tests/fixtures"
)

func TestServeUsageErrors(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := writeFile(t, "kubeconfig", "apiVersion: v1\nkind: Config\nclusters: []\n")
	tls := []string{"--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-private-key-file", filepath.Join(dir, "tls.key")}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"the TLS files are required", []string{"serve"}, "--tls-cert-file and --tls-private-key-file are required"},
		{"the registry ConfigMap is NAMESPACE/NAME", append([]string{"serve", "--registry-configmap", "registry"}, tls...), `--registry-configmap must be NAMESPACE/NAME, got "registry"`},
		{"an unknown log level is refused", append([]string{"serve", "--log-level", "loud"}, tls...), "--log-level"},
		{"a memory limit that is not a size is refused", append([]string{"serve", "--memory-limit", "lots"}, tls...), `--memory-limit: memory limit "lots" is not "auto"`},
		{"the collector off without a memory limit is refused", append([]string{"serve", "--gc-percent", "-1", "--memory-limit", "0"}, tls...), "--gc-percent: -1 turns the garbage collector off: it needs a memory limit"},
		{"a GC percent below -1 is refused", append([]string{"serve", "--gc-percent", "-2"}, tls...), "--gc-percent: GC percent -2 is not -1 (off) or more"},
		{"a negative number of evaluators is refused", append([]string{"serve", "--evaluators", "-1"}, tls...), "--evaluators must be 0 (one per CPU) or more, got -1"},
		{"an unknown evaluator is refused", append([]string{"serve", "--evaluator", "wasm"}, tls...), `--evaluator must be one of auto, plan, topdown, got "wasm"`},
		{"a kubeconfig without a cluster is refused", append([]string{"serve", "--kubeconfig", kubeconfig}, tls...), "kubeconfig:"},
		{"the Secret and the files are exclusive", append([]string{"serve", "--tls-secret", "ns/tls"}, tls...), "are exclusive"},
		{"the Secret is NAMESPACE/NAME", []string{"serve", "--tls-secret", "tls"}, `--tls-secret must be NAMESPACE/NAME, got "tls"`},
		{"the built-in rotation needs a DNS name", []string{"serve", "--tls-secret", "ns/tls"}, "at least one --tls-dns-name"},
		{"a CA outliving fewer than three certificates is refused", []string{"serve", "--tls-secret", "ns/tls", "--tls-dns-name", "a.svc", "--tls-ca-validity", "48h", "--tls-cert-validity", "24h"}, "at least three times"},
		{"arguments are refused", []string{"serve", "extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, "", tt.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, ExitUsage, tt.want)
			}
		})
	}
}

// TestTheServeFlagReferenceIsCurrent holds docs/serve.md's flag table equal
// to the command's flags; UPDATE_GOLDEN=1 rewrites it.
func TestTheServeFlagReferenceIsCurrent(t *testing.T) {
	const begin, end = "<!-- serve flags: begin (generated, do not edit) -->\n", "<!-- serve flags: end -->"
	var table strings.Builder
	table.WriteString("| flag | default | what it does |\n| --- | --- | --- |\n")
	newServeCommand().Flags().VisitAll(func(f *pflag.Flag) {
		def := f.DefValue
		if def == "" || def == "[]" {
			def = " "
		} else {
			def = "`" + def + "`"
		}
		fmt.Fprintf(&table, "| `--%s` | %s | %s |\n", f.Name, def, strings.ReplaceAll(f.Usage, "|", "\\|"))
	})
	fixtures.GeneratedSection(t, filepath.Join("..", "..", "docs", "serve.md"), begin, end, table.String(),
		"UPDATE_GOLDEN=1 go test ./internal/cli/ -run TestTheServeFlagReferenceIsCurrent")
}
