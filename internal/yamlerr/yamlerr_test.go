package yamlerr_test

import (
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/tenantguard/tenantguard/internal/yamlerr"
)

func TestSyntaxPointsAtTheLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		text string
		line int
	}{
		{"An unclosed flow list on the second line", "a: 1\nb: [x\n", 2},
		{"An unclosed flow list followed by more lines", "a: 1\nb: [x, y\n\n\nc: 2\n", 2},
		{"An unclosed flow mapping inside a block", "a:\n  b: 1\n  c: {x: [y}\n", 3},
		{"An unclosed flow list on the first line", "a: [x\n", 1},
		{"A block sequence that stops being one", "a:\n  - x\n  y: 2\n", 2},
		{"A key indented under a scalar", "a: 1\n b: 2\n", 2},
		{"An unterminated quoted string", "a: 1\nb: \"x\n", 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			err := yaml.Unmarshal([]byte(tt.text), &v)
			if err == nil {
				t.Fatal("parsed")
			}
			got, ok := yamlerr.Syntax(err, []byte(tt.text))
			if !ok || got.Line != tt.line {
				t.Errorf("%v gives %+v (ok %v), want line %d", err, got, ok, tt.line)
			}
		})
	}
	var n int
	if _, ok := yamlerr.Syntax(yaml.Unmarshal([]byte("x"), &n), []byte("x")); ok {
		t.Error("a type error taken for a syntax error")
	}
}
