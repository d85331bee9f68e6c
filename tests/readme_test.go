package tests

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/tests/fixtures"
)

// TestTheREADMEsCountsAreCurrent holds the counts README.md gives equal to
// what they count: the embedded library's rules and the shared corpus's
// cases, those the decoder must refuse left out of the decidable ones.
func TestTheREADMEsCountsAreCurrent(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cases, err := fixtures.Load()
	if err != nil {
		t.Fatal(err)
	}
	decidable := 0
	for _, c := range cases {
		if !c.Expect.BadInput {
			decidable++
		}
	}
	for _, tt := range []struct {
		what    string
		pattern *regexp.Regexp
		want    []int
	}{
		{"the rules", regexp.MustCompile(`The rules \((\d+) today`), []int{len(catalog.MustEmbedded().Rules())}},
		{"the corpus", regexp.MustCompile(`A shared corpus of (\d+) AdmissionReviews \((\d+) decidable\)`), []int{len(cases), decidable}},
	} {
		m := tt.pattern.FindSubmatch(raw)
		if m == nil {
			t.Errorf("README.md no longer says how many are %s (%s)", tt.what, tt.pattern)
			continue
		}
		for i, want := range tt.want {
			if got, _ := strconv.Atoi(string(m[i+1])); got != want {
				t.Errorf("README.md counts %d in %s, there are %d: %q", got, tt.what, want, m[0])
			}
		}
	}
}
