package export

import (
	"slices"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/registry"
)

// gatekeeperRegistry is a registry of three tenants, gas allowed a host
// path and load balancers, with the enforcement given.
func gatekeeperRegistry(t *testing.T, enforcement string) *registry.Snapshot {
	t.Helper()
	doc := "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings:\n  enforcement: {" + enforcement + "}\ntenants:\n" +
		"  - name: oil\n    owners: [{kind: User, name: alice}]\n    priorityClasses: {allowed: [low], default: low}\n" +
		"  - name: gas\n    owners: [{kind: Group, name: gas-team}]\n    pods: {allowedHostPaths: [{pathPrefix: /var/log, readOnly: true}]}\n    services: {allowLoadBalancer: true}\n" +
		"  - name: steel\n    owners: [{kind: User, name: sam}]\n"
	snap, err := registry.Parse("registry.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// constraintsOf are the library's Constraints of a kind.
func constraintsOf(lib *Library, kind string) []map[string]any {
	var out []map[string]any
	for _, obj := range lib.Objects {
		if obj["kind"] == kind {
			out = append(out, obj)
		}
	}
	return out
}

func spec(obj map[string]any) map[string]any { return obj["spec"].(map[string]any) }

func TestAFamilyIsOneTemplateAndOneConstraint(t *testing.T) {
	lib, err := Gatekeeper(gatekeeperRegistry(t, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	templates := map[string]bool{}
	for _, obj := range lib.Objects {
		if obj["kind"] == "ConstraintTemplate" {
			templates[obj["metadata"].(map[string]any)["name"].(string)] = true
		}
	}
	for i := range catalog.MustEmbedded().Rules() {
		r := &catalog.MustEmbedded().Rules()[i]
		if !r.Claims(catalog.EngineGatekeeper) {
			continue
		}
		u := &gatekeeperUnit{family: r.Family}
		if r.GatekeeperTemplate == catalog.GatekeeperRule {
			u.rule = r.ID
		}
		if !templates[strings.ToLower(u.kind())] {
			t.Errorf("no template %s for %s", u.kind(), r.ID)
		}
		if got := constraintsOf(lib, u.kind()); len(got) != 1 {
			t.Errorf("%s: %d Constraints, want one", u.kind(), len(got))
		}
	}
	services := constraintsOf(lib, "TenantguardServices")[0]
	if rules := spec(services)["parameters"].(map[string]any)["rules"].([]any); !slices.Equal(rules, []any{"service-type", "external-ips"}) {
		t.Errorf("services Constraint enforces %v", rules)
	}
}

func TestAFamilyInSeveralModesHasAConstraintPerMode(t *testing.T) {
	lib, err := Gatekeeper(gatekeeperRegistry(t, "service-type: warn"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range constraintsOf(lib, "TenantguardServices") {
		rules := spec(c)["parameters"].(map[string]any)["rules"].([]any)
		got[c["metadata"].(map[string]any)["name"].(string)] = spec(c)["enforcementAction"].(string) + " " + rules[0].(string)
		if len(rules) != 1 {
			t.Errorf("Constraint enforces %v", rules)
		}
	}
	want := map[string]string{"services-deny": "deny external-ips", "services-warn": "warn service-type"}
	if len(got) != len(want) || got["services-deny"] != want["services-deny"] || got["services-warn"] != want["services-warn"] {
		t.Errorf("Constraints %v, want %v", got, want)
	}
	if !strings.Contains(lib.Coverage["service-type"], "Constraint services-warn") {
		t.Errorf("coverage %q", lib.Coverage["service-type"])
	}
}

func TestAConstraintCarriesWhatItsRulesRead(t *testing.T) {
	lib, err := Gatekeeper(gatekeeperRegistry(t, ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	registryOf := func(kind string) map[string]any {
		return spec(constraintsOf(lib, kind)[0])["parameters"].(map[string]any)["registry"].(map[string]any)
	}
	// host-path reads the host path grants: gas's only differ from the default
	hostPath := registryOf("TenantguardHostPath")
	tenants := hostPath["tenants"].(map[string]any)
	if len(tenants) != 1 || tenants["gas"] == nil {
		t.Errorf("host-path tenants %v, want gas alone", tenants)
	}
	pods := tenants["gas"].(map[string]any)["pods"].(map[string]any)
	if len(pods) != 2 || pods["allowedHostPaths"] == nil {
		t.Errorf("host-path reads %v of gas's pods, want allowHostPath and allowedHostPaths", pods)
	}
	for _, key := range []string{"owners", "administrators", "serviceAccountNamespaces"} {
		if _, ok := hostPath[key]; ok {
			t.Errorf("host-path carries %s", key)
		}
	}
	if label := hostPath["settings"].(map[string]any); len(label) != 1 || label["tenantLabel"] != registry.DefaultTenantLabel {
		t.Errorf("settings %v, want the tenant label alone", label)
	}
	// the ownership rules read which tenants exist: every tenant is there
	namespaces := registryOf("TenantguardNamespaces")
	if got := len(namespaces["tenants"].(map[string]any)); got != 3 {
		t.Errorf("namespaces Constraint has %d tenants, want 3", got)
	}
	if _, ok := namespaces["owners"]; !ok {
		t.Error("namespaces Constraint lacks the owners")
	}
	// managers go only where a rule reads them
	for kind, want := range map[string]bool{"TenantguardManaged": true, "TenantguardHostNetwork": false} {
		if _, ok := spec(constraintsOf(lib, kind)[0])["parameters"].(map[string]any)["managers"]; ok != want {
			t.Errorf("%s carries managers: %v, want %v", kind, ok, want)
		}
	}
}

func TestATemplateOfOneRuleHoldsThatRuleAlone(t *testing.T) {
	cat := catalog.MustEmbedded()
	for _, u := range gatekeeperUnits(cat) {
		libs, err := u.libs(cat)
		if err != nil {
			t.Fatal(err)
		}
		var family string
		for _, l := range libs {
			src := l.(string)
			if strings.HasPrefix(src, "package lib.tenantguard.rules.") {
				if family != "" {
					t.Errorf("%s holds two families", u.kind())
				}
				family = src
			}
			if strings.HasPrefix(src, "package lib.tenantguard.kubernetes") || strings.HasPrefix(src, "package lib.tenantguard.main") {
				t.Errorf("%s holds %s", u.kind(), strings.SplitN(src, "\n", 2)[0])
			}
		}
		if strings.Contains(family, "mutations contains") {
			t.Errorf("%s holds mutations", u.kind())
		}
		for i := range cat.Rules() {
			r := &cat.Rules()[i]
			if r.Family != u.family {
				continue
			}
			holds := strings.Contains(family, `"id": "`+r.ID+`"`)
			if want := u.rule == "" || u.rule == r.ID; holds != want {
				t.Errorf("%s holds %s: %v, want %v", u.kind(), r.ID, holds, want)
			}
		}
	}
}

func TestTheParametersSchemaTypesWhatTheConstraintHolds(t *testing.T) {
	cat := catalog.MustEmbedded()
	for _, u := range gatekeeperUnits(cat) {
		if u.rule != "host-path" {
			continue
		}
		schema := u.parametersSchema()
		tenant := schema["properties"].(map[string]any)["registry"].(map[string]any)["properties"].(map[string]any)["tenants"].(map[string]any)["additionalProperties"].(map[string]any)
		pods := tenant["properties"].(map[string]any)["pods"].(map[string]any)["properties"].(map[string]any)
		grants := pods["allowedHostPaths"].(map[string]any)
		if grants["type"] != "array" || grants["items"].(map[string]any)["properties"].(map[string]any)["readOnly"].(map[string]any)["type"] != "boolean" {
			t.Errorf("allowedHostPaths schema %v", grants)
		}
		if pods["allowHostPath"].(map[string]any)["type"] != "boolean" || len(pods) != 2 {
			t.Errorf("pods schema %v", pods)
		}
		return
	}
	t.Fatal("no host-path template")
}

func TestEveryEmbeddedRuleDeclaresWhatItReads(t *testing.T) {
	for _, u := range gatekeeperUnits(catalog.MustEmbedded()) {
		if _, ok := u.reads(); !ok {
			t.Errorf("%s: a rule declares no reads, so its Constraint would carry the whole registry", u.kind())
		}
	}
}

// registryReads are what a reference of a rule family reads of the
// registry, for the references whose reading is plain from their text:
// tenancy.tenant.FIELD, tenancy.settings.FIELD, data.tenantguard.registry.KEY
// and the identity helpers.
var registryReads = map[string]string{
	"identity.is_admin":      "registry.administrators",
	"identity.owned_tenants": "registry.owners",
	"identity.is_manager":    "runtime.managers",
	"tenancy.prefix_tenant":  "registry.tenants",
}

func TestEveryRegistryReadOfAFamilyIsDeclared(t *testing.T) {
	cat := catalog.MustEmbedded()
	reads := map[string][]string{}
	for _, u := range gatekeeperUnits(cat) {
		r, _ := u.reads()
		reads[u.family] = append(reads[u.family], r...)
	}
	declared := func(family, path string) bool {
		return slices.ContainsFunc(reads[family], func(r string) bool {
			return r == path || strings.HasPrefix(r, path+".") || strings.HasPrefix(path, r+".")
		})
	}
	checked := 0
	for path, src := range cat.Modules() {
		module, err := catalog.ParseModule(path, src)
		if err != nil {
			t.Fatal(err)
		}
		family, ok := familyOf(module)
		if !ok || reads[family] == nil {
			continue
		}
		ast.WalkRefs(module, func(ref ast.Ref) bool {
			text := ref.String()
			var need string
			for prefix, read := range registryReads {
				if text == prefix || strings.HasPrefix(text, prefix+".") || strings.HasPrefix(text, prefix+"[") {
					need = read
				}
			}
			for prefix, under := range map[string]string{"tenancy.tenant.": "registry.tenants.", "tenancy.settings.": "registry.settings.", "data.tenantguard.registry.": "registry."} {
				if field, ok := strings.CutPrefix(text, prefix); ok {
					need = under + strings.FieldsFunc(field, func(r rune) bool { return r == '.' || r == '[' })[0]
				}
			}
			if need == "" {
				return false
			}
			checked++
			if !declared(family, need) {
				t.Errorf("%s reads %s (%s) but no rule of family %s declares it in reads", path, need, text, family)
			}
			return false
		})
	}
	if checked == 0 {
		t.Fatal("no registry read was checked")
	}
}
