package catalog

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
)

// refusedWhy says why Refused built-ins are refused.
const refusedWhy = "a policy decides from its input and data alone, with no network and no view of the process it runs in"

// Refused reports whether a policy may not call the built-in function name:
// http.send, every net.* function and opa.runtime, the built-ins that reach
// outside the evaluation (the network, DNS, the process's environment and
// configuration). Deciding needs none of them, and an admission webhook
// that waits on the network stalls the API server.
func Refused(name string) bool {
	return name == "http.send" || name == "opa.runtime" || strings.HasPrefix(name, "net.")
}

// Capabilities are the OPA capabilities a tenantguard policy is compiled
// with: this OPA's, without the Refused built-ins and with no host allowed
// to connect to. A call of a refused built-in that Load did not catch fails
// to compile.
func Capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0]
	for _, b := range caps.Builtins {
		if !Refused(b.Name) {
			kept = append(kept, b)
		}
	}
	caps.Builtins = kept
	caps.AllowNet = []string{}
	return caps
}

// call is a call of a built-in function, where it is made.
type call struct {
	name string
	loc  *ast.Location
}

// refusedCalls are the module's calls of Refused built-ins: as calls, and
// as function values (a reference to one passed around).
func refusedCalls(m *ast.Module) []call {
	var out []call
	seen := map[*ast.Location]bool{}
	note := func(name string, loc *ast.Location) {
		if Refused(name) && !seen[loc] {
			seen[loc] = true
			out = append(out, call{name, loc})
		}
	}
	ast.WalkExprs(m, func(e *ast.Expr) bool {
		if e.IsCall() {
			note(e.Operator().String(), e.Location)
		}
		return false
	})
	ast.WalkTerms(m, func(t *ast.Term) bool {
		switch v := t.Value.(type) {
		case ast.Call:
			if len(v) > 0 {
				note(v[0].String(), t.Location)
			}
		case ast.Ref:
			if _, builtin := ast.BuiltinMap[v.String()]; builtin {
				note(v.String(), t.Location)
			}
		}
		return false
	})
	return out
}
