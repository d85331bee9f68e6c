package tests

import (
	"strings"
	"testing"
)

// TestChartNotesSayWhenQuotasAreExactOnlyPerReplica: the notes `helm
// install` prints warn that local holds let a burst over several replicas
// overshoot, exactly when the release runs more than one replica in local
// mode.
func TestChartNotesSayWhenQuotasAreExactOnlyPerReplica(t *testing.T) {
	const warning = "Quotas and hostname collisions are exact within each replica"
	for _, c := range []struct {
		name string
		args []string
		want string // "" when no warning
	}{
		{"the default two local replicas are warned about", nil, "can admit up to 2 times the room a\ntenant has left"},
		{"three local replicas are warned about", []string{"--set", "replicaCount=3"}, "can admit up to 3 times"},
		{"one replica is exact", []string{"--set", "replicaCount=1", "--set", "podDisruptionBudget.enabled=false"}, ""},
		{"strict mode is exact", []string{"--set", "quota.mode=strict"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"install", "tg", chartDir, "-n", "tenantguard-system", "--dry-run=client"}, c.args...)...)
			if err != nil {
				t.Fatalf("helm install --dry-run=client: %v", err)
			}
			_, notes, ok := strings.Cut(out, "NOTES:\n")
			if !ok {
				t.Fatalf("no notes in\n%s", out)
			}
			switch {
			case c.want == "" && strings.Contains(notes, warning):
				t.Errorf("notes warn though holds are exact:\n%s", notes)
			case c.want != "" && (!strings.Contains(notes, warning) || !strings.Contains(notes, c.want)):
				t.Errorf("notes do not say %q:\n%s", c.want, notes)
			}
		})
	}
}
