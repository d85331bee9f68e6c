package registry

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func exampleFile(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "registry.yaml")
}

func TestTheExampleRegistryCompiles(t *testing.T) {
	snap, err := Load(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Len() != 2 || snap.TenantLabel() != DefaultTenantLabel {
		t.Fatalf("got %d tenants, label %q", snap.Len(), snap.TenantLabel())
	}
	if got := snap.OwnedBy("alice", nil); !slices.Equal(got, []string{"oil"}) {
		t.Errorf("alice owns %v", got)
	}
	if got := snap.OwnedBy("gina", []string{"gas-team"}); !slices.Equal(got, []string{"gas"}) {
		t.Errorf("gas-team owns %v", got)
	}
	if got := snap.OwnedBy("system:serviceaccount:oil-ci:deployer", nil); !slices.Equal(got, []string{"oil"}) {
		t.Errorf("the deployer service account owns %v", got)
	}
	for _, tt := range []struct {
		user   string
		groups []string
		want   bool
	}{{"platform-admin", nil, true}, {"alice", []string{"system:masters"}, true}, {"alice", []string{"oil-team"}, false}, {"system:masters", nil, false}} {
		if got := snap.Administers(tt.user, tt.groups); got != tt.want {
			t.Errorf("Administers(%q, %v) = %v, want %v", tt.user, tt.groups, got, tt.want)
		}
	}
	admins := snap.Data()["administrators"].(map[string]any)
	if admins["users"].(map[string]any)["platform-admin"] != true || admins["groups"].(map[string]any)["system:masters"] != true {
		t.Errorf("administrators = %v", admins)
	}
	exempt := snap.Data()["cordonExempt"].(map[string]any)
	if exempt["users"].(map[string]any)["system:serviceaccount:cert-manager:cert-manager"] != true || len(exempt["groups"].(map[string]any)) != 0 {
		t.Errorf("cordonExempt = %v", exempt)
	}
	if snap.Data()["administratorNamespaces"].(map[string]any)["cert-manager"] != true {
		t.Errorf("the namespace of a cordon-exempt service account is not reserved: %v", snap.Data()["administratorNamespaces"])
	}
	oil, _ := snap.Tenant("oil")
	if !*oil.Companions.NetworkIsolation || !slices.Equal(oil.Companions.OwnerClusterRoles, []string{"admin"}) {
		t.Errorf("companion defaults not applied: %+v", oil.Companions)
	}
}

func TestBareDocumentAndConfigMapCompileAlike(t *testing.T) {
	cm, err := Load(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	// The ConfigMap's tenants.yaml, un-indented, is the bare document.
	text, err := os.ReadFile(exampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(text), "tenants.yaml: |\n")
	bare := strings.ReplaceAll("\n"+block, "\n    ", "\n")
	snap, err := Parse("bare.yaml", []byte(bare))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(snap.Data(), cm.Data()) {
		t.Errorf("the two forms compile differently:\n%v\n%v", snap.Data(), cm.Data())
	}
}

func TestOmittedSettingsGetDefaults(t *testing.T) {
	snap, err := Parse("bare.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants: [{name: oil}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	st := snap.Registry().Settings
	if st.TenantLabel != DefaultTenantLabel || !slices.Equal(st.ProtectedNamespaces, DefaultProtectedNamespaces) ||
		!slices.Equal(st.Administrators, DefaultAdministrators) || !slices.Equal(st.ProtectedLabels, DefaultProtectedLabels) {
		t.Errorf("settings = %+v", st)
	}
	explicit, err := Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings: {protectedLabels: []}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(explicit.Registry().Settings.ProtectedLabels) != 0 {
		t.Error("an explicit empty list must stay empty")
	}
}

func TestPrefixTenantPrefersTheLongestName(t *testing.T) {
	snap, err := Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - {name: oil}\n  - {name: oil-x}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]string{"oil-x-dev": "oil-x", "oil-dev": "oil", "oil": "", "oilx-a": "", "-oil": ""} {
		if got, _ := snap.PrefixTenant(ns); got != want {
			t.Errorf("PrefixTenant(%q) = %q, want %q", ns, got, want)
		}
	}
	// The name is the registry's: a part of the namespace given would keep
	// the whole request body it was decoded from alive in a hold.
	body := []byte("oil-x-dev")
	got, _ := snap.PrefixTenant(unsafe.String(unsafe.SliceData(body), len(body)))
	start, p := uintptr(unsafe.Pointer(unsafe.SliceData(body))), uintptr(unsafe.Pointer(unsafe.StringData(got)))
	if p >= start && p < start+uintptr(len(body)) {
		t.Error("PrefixTenant returned a part of the namespace given, not the registry's name")
	}
}

func TestBadRegistriesListEveryProblem(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"an empty file is refused", "", []string{"the file is empty"}},
		{"a YAML syntax error names its line", "apiVersion: [", []string{"r.yaml:1:"}},
		{"two documents are refused", "a: 1\n---\nb: 2\n", []string{"more than one document"}},
		{"a ConfigMap without the key is refused", "apiVersion: v1\nkind: ConfigMap\ndata: {other: x}\n", []string{`no data key "tenants.yaml"`}},
		{
			"unknown fields and semantic problems are reported together",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings:\n  colour: blue\ntenants:\n  - name: Oil\n",
			[]string{`r.yaml:4: unknown field "colour" in Settings`, "r.yaml:6: tenants[0].name: tenant name \"Oil\" is not a DNS label"},
		},
		{
			"problems in a ConfigMap are located in the file",
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata:\n  tenants.yaml: |\n    apiVersion: tenantguard.io/v1\n    kind: TenantRegistry\n    tenants:\n      - name: a\n        quotas: {pods: -1}\n",
			[]string{"r.yaml:10: tenants[0].quotas.pods: must not be negative"},
		},
		{
			"one count under two names is refused",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    quotas: {pods: 3, count/pods: 5, services: 1, count/deployments.apps: 2}\n",
			[]string{`r.yaml:5: tenants[0].quotas.pods: "pods" counts the same objects as "count/pods"; give one of them`},
		},
		{
			"a count of what the core API group does not serve is refused, as it would count nothing",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    quotas: {deployments: 3, count/ingresses: 5, configmaps: 1, count/secrets: 2}\n",
			[]string{`r.yaml:5: tenants[0].quotas.count/ingresses: "count/ingresses" is not an object count`, `r.yaml:5: tenants[0].quotas.deployments: "deployments" is not an object count`},
		},
		{
			"companions the API server would refuse are refused",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    companions:\n      resourceQuota: {hard: {request.cpu: '4', pods: '10', requests.cpu: '2', count/deployments.apps: '3', services.loadbalancers: '1', limits.nvidia.com/gpu: '1', hugepages-2Mi: 1Gi}}\n      limitRange:\n        limits:\n          - {type: Pod, default: {cpu: '1'}}\n          - {type: PersistentVolumeClaim, max: {cpu: '1'}}\n          - {type: Container, min: {cpu: '2'}, max: {cpu: '1'}, default: {memory: 1Gi}, defaultRequest: {memory: 2Gi}}\n          - {type: Container}\n",
			[]string{
				`tenants[0].companions.resourceQuota.hard.request.cpu: "request.cpu" is not a resource a ResourceQuota limits`,
				"tenants[0].companions.limitRange.limits[0]: default and defaultRequest may not be given for type Pod",
				"tenants[0].companions.limitRange.limits[1]: type PersistentVolumeClaim needs min or max storage",
				"tenants[0].companions.limitRange.limits[2].min.cpu: min 2 is greater than max 1",
				"tenants[0].companions.limitRange.limits[2].defaultRequest.memory: defaultRequest 2Gi is greater than default 1Gi",
				`tenants[0].companions.limitRange.limits[3].type: type "Container" is given twice`,
			},
		},
		{
			"duplicate tenants and owners are refused",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    owners: [{kind: User, name: x}, {kind: User, name: x}]\n  - name: a\n",
			[]string{`User "x" is listed twice`, `tenant "a" is already defined at tenants[0]`},
		},
		{
			"a shared owner of overlapping tenant names is ambiguous",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: oil\n    owners: [{kind: User, name: x}]\n  - name: oil-x\n    owners: [{kind: User, name: x}]\n",
			[]string{`tenant "oil-x" starts with tenant "oil" and both are owned by User "x"`},
		},
		{
			"bad regexes, modes, kinds and quantities are all reported",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\nsettings:\n  protectedNamespaces: ['((']\n  enforcement: {host-path: maybe, nope: warn}\n  administrators: [{kind: Robot, name: r}]\n  cordonExempt: [{kind: ServiceAccount, name: cert-manager}, {kind: Group, name: 'system:authenticated'}, {kind: Group, name: 'system:serviceaccounts:a-ci'}, {kind: User, name: 'system:anonymous'}, {kind: ServiceAccount, name: 'system:serviceaccount:a:b'}]\ntenants:\n  - name: a\n    owners: [{kind: ServiceAccount, name: deployer}, {kind: User, name: 'system:serviceaccount:a:b'}, {kind: ServiceAccount, name: 'system:serviceaccount:a-ci:deployer'}]\n    pods: {allowedHostPaths: [{pathPrefix: var/log}, {pathPrefix: /var/../etc}]}\n    storageClasses: {allowed: [standard], allowedRegex: '[', default: fast}\n    quotas: {services.loadbalancers: 1, count/deployments.apps: 2, count/pods: 3}\n    companions:\n      resourceQuota: {hard: {cpu: lots}}\n      limitRange: {limits: [{type: Node}]}\n      additionalRoleBindings: [{clusterRole: view}]\n",
			[]string{
				"bad regular expression", `enforcement must be deny, warn or dryrun, not "maybe"`,
				`kind must be User, Group or ServiceAccount, not "Robot"`, "must be written system:serviceaccount:NAMESPACE:NAME",
				`r.yaml:7: settings.cordonExempt[0].name: service account "cert-manager" must be written`,
				`r.yaml:7: settings.cordonExempt[1].name: group "system:authenticated" stands for every requester of its kind: exempting it from the cordon leaves no cordon`,
				`r.yaml:7: settings.cordonExempt[2].name: namespace "a-ci" holds ServiceAccount owners of tenants ["a"], who could act as "system:serviceaccounts:a-ci" and pass their own cordon`,
				`r.yaml:7: settings.cordonExempt[3].name: user "system:anonymous" stands for every requester of its kind: exempting it from the cordon leaves no cordon`,
				`r.yaml:7: settings.cordonExempt[4].name: "system:serviceaccount:a:b" owns tenants ["a"], who would pass their own cordon`,
				"is a service account; write it as", `"var/log" must be a clean absolute path`, `"/var/../etc" must be a clean absolute path`,
				`default "fast" is not allowed`, `"services.loadbalancers" is not an object count`, `"lots" is not a quantity`,
				`must be Container, Pod or PersistentVolumeClaim, not "Node"`, "a role binding needs at least one subject",
			},
		},
		{
			"bad workload rules are located and explained",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    images:\n      allowedRegistries: [registry.example.com, ghcr.io/oil, nginx, 'https://quay.io', 'quay.io/x:1', index.docker.io/library]\n      allowedRegex: '(('\n      allowedPullPolicies: [Always, Sometimes]\n    runtimeClasses: {allowed: [gvisor], default: kata}\n    nodePlacement:\n      nodeSelector: {pool: 'a b', 'bad key!': x}\n      tolerations:\n        - {operator: Exists}\n        - {key: pool, operator: Exists, value: a, effect: NoSchedule}\n        - {key: pool, operator: Maybe, value: a, effect: Sometimes, tolerationSeconds: 5}\n",
			[]string{
				`r.yaml:6: tenants[0].images.allowedRegistries[2]: "nginx" is not an image reference prefix: it names no registry host`, "write e.g. docker.io/nginx",
				`allowedRegistries[3]: "https://quay.io" is not an image reference prefix`, `allowedRegistries[4]: "quay.io/x:1"`, `allowedRegistries[5]: "index.docker.io/library" names Docker Hub by its old host; references are matched normalized, so write docker.io/library`,
				"r.yaml:7: tenants[0].images.allowedRegex: bad regular expression",
				`r.yaml:8: tenants[0].images.allowedPullPolicies[1]: pull policy must be one of Always, IfNotPresent, Never, not "Sometimes"`,
				`r.yaml:9: tenants[0].runtimeClasses.default: default "kata" is not allowed`,
				`nodePlacement.nodeSelector.pool: "a b" is not a valid label value`, `"bad key!" is not a valid label key`,
				"tolerations[0].key: a toleration added to every pod must name a key", "tolerations[0].effect: a toleration added to every pod must name an effect",
				`tolerations[1].value: operator Exists takes no value, not "a"`,
				`tolerations[2].operator: operator must be Equal or Exists, not "Maybe"`, `tolerations[2].effect: effect must be NoSchedule, PreferNoSchedule or NoExecute, not "Sometimes"`,
				"tolerations[2].tolerationSeconds: tolerationSeconds applies to the NoExecute effect only",
			},
		},
		{
			"bad edge rules are located and explained",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    ingress:\n      classes: {allowed: [nginx, 'Bad_Class'], default: haproxy}\n      gatewayClasses: {allowed: [shared], default: shared}\n      hostnames:\n        allowed: [oil.example.com, '*.oil.example.com', 'a.*.example.com', '*.com', 'Oil..example']\n        allowedRegex: '(('\n      hostnameCollision: everywhere\n",
			[]string{
				`tenants[0].ingress.classes.allowed[1]: "Bad_Class" is not a valid class name`,
				`r.yaml:6: tenants[0].ingress.classes.default: default "haproxy" is not allowed`,
				`r.yaml:7: tenants[0].ingress.gatewayClasses.default: a Gateway must name its class, so there is no default to set; remove "shared"`,
				`hostnames.allowed[2]: "a.*.example.com" is not a host name or pattern: a wildcard is allowed only as the first label`,
				`hostnames.allowed[3]: "*.com" would admit every name under the top-level domain "com"`,
				`hostnames.allowed[4]: "Oil..example" is not a host name or pattern`,
				"tenants[0].ingress.hostnames.allowedRegex: bad regular expression",
				`r.yaml:11: tenants[0].ingress.hostnameCollision: must be one of cluster, tenant, namespace, off, not "everywhere"`,
			},
		},
		{
			"a bad tenant-wide resource quota is located and explained",
			"apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    resourceQuota:\n      hard: {requests.cpu: lots, limits.memory: -1Gi, pods: '10', limits.nvidia.com/gpu: '2', requests.nvidia.com/gpu: '2'}\n",
			[]string{
				`tenants[0].resourceQuota.hard.requests.cpu: "lots" is not a quantity`,
				"tenants[0].resourceQuota.hard.limits.memory: must not be negative",
				`tenants[0].resourceQuota.hard.pods: "pods" is an object count: write it under quotas`,
				`tenants[0].resourceQuota.hard.limits.nvidia.com/gpu: "limits.nvidia.com/gpu": extended resources are not overcommitted`,
			},
		},
		{"the wrong kind is refused", "apiVersion: v2\nkind: Tenants\n", []string{`must be "tenantguard.io/v1", not "v2"`, `must be "TenantRegistry", not "Tenants"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("r.yaml", []byte(tt.text))
			var invalid *Error
			if !errors.As(err, &invalid) {
				t.Fatalf("want *Error, got %v", err)
			}
			text := err.Error()
			for _, want := range tt.want {
				if !strings.Contains(text, want) {
					t.Errorf("missing %q in\n%s", want, text)
				}
			}
		})
	}
}

func TestEnforcementNamesOnlyTheRulesInForce(t *testing.T) {
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: r}\ndata:\n  tenants.yaml: |\n    apiVersion: tenantguard.io/v1\n    kind: TenantRegistry\n    settings:\n      enforcement:\n        host-path: warn\n        nope: dryrun\n    tenants: []\n"
	snap, err := Parse("r.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.CheckRules([]string{"host-path", "nope"}); err != nil {
		t.Errorf("ids the policy declares are refused: %v", err)
	}
	err = snap.CheckRules([]string{"host-path", "host-network"})
	var invalid *Error
	if !errors.As(err, &invalid) || len(invalid.Problems) != 1 {
		t.Fatalf("want one problem, got %v", err)
	}
	if want := `r.yaml:11: settings.enforcement.nope: unknown rule id "nope"; the rules in force are host-path, host-network`; invalid.Problems[0].String() != want {
		t.Errorf("got  %s\nwant %s", invalid.Problems[0], want)
	}
}

func TestQuotaKeysAreCanonical(t *testing.T) {
	snap, err := Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    quotas: {count/pods: 3, count/deployments.apps: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := snap.Tenant("a")
	if a.Quotas["pods"] != 3 || a.Quotas["count/deployments.apps"] != 2 {
		t.Errorf("quotas = %v", a.Quotas)
	}
}

func FuzzParse(f *testing.F) {
	example, err := os.ReadFile(filepath.Join("..", "..", "examples", "registry.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example)
	seeds, err := filepath.Glob(filepath.Join("..", "..", "tests", "fixtures", "registry*.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range seeds {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants: [{name: a, quotas: {pods: 1}}]\n"))
	f.Add([]byte("kind: ConfigMap\ndata: {tenants.yaml: 'kind: x'}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := Parse("fuzz.yaml", data)
		if err != nil {
			var invalid *Error
			if !errors.As(err, &invalid) || len(invalid.Problems) == 0 {
				t.Fatalf("an invalid registry must come with problems: %v", err)
			}
			return
		}
		if snap.Data() == nil {
			t.Fatal("a valid registry has data")
		}
	})
}

func TestCompanionsTheAPIServerTakesAreAccepted(t *testing.T) {
	text := "apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: a\n    companions:\n" +
		"      resourceQuota: {hard: {pods: '10', cpu: '2', requests.cpu: '2', limits.memory: 4Gi, count/deployments.apps: '3', services.loadbalancers: '1', configmaps: '9', limits.nvidia.com/gpu: '1', requests.nvidia.com/gpu: '1', hugepages-2Mi: 1Gi, gold.storageclass.storage.k8s.io/requests.storage: 1Ti}}\n" +
		"      limitRange:\n        limits:\n" +
		"          - {type: Container, min: {cpu: 100m}, defaultRequest: {cpu: 200m}, default: {cpu: 500m}, max: {cpu: '2'}}\n" +
		"          - {type: Pod, max: {cpu: '4'}}\n" +
		"          - {type: PersistentVolumeClaim, max: {storage: 10Gi}}\n"
	if _, err := Parse("r.yaml", []byte(text)); err != nil {
		t.Fatalf("refused what the API server takes: %v", err)
	}
}

// TestExtensionsReachTheRulesAsWritten: a tenant's extensions, for rule
// families of one's own, are taken as they are and handed to the rules
// under the tenant; anything but a mapping is refused.
func TestExtensionsReachTheRulesAsWritten(t *testing.T) {
	snap, err := Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: oil\n    extensions:\n      lb: {annotation: example.com/ok, allowed: [a, b]}\n      level: 3\n  - name: gas\n"))
	if err != nil {
		t.Fatal(err)
	}
	tenants := snap.Data()["tenants"].(map[string]any)
	oil := tenants["oil"].(map[string]any)
	raw, err := json.Marshal(oil["extensions"])
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != `{"lb":{"allowed":["a","b"],"annotation":"example.com/ok"},"level":3}` {
		t.Errorf("oil's extensions reach the rules as %s", raw)
	}
	if _, ok := tenants["gas"].(map[string]any)["extensions"]; ok {
		t.Error("a tenant without extensions has some")
	}
	for _, bad := range []struct{ extensions, want string }{
		{"[lb]", "tenants[0].extensions"},
		{"{ports: {80: web}}", "tenants[0].extensions.ports: a mapping whose keys are not all strings"},
		{"{level: .nan}", "tenants[0].extensions.level: NaN is not a number JSON holds"},
		{"{levels: [1, .inf]}", "tenants[0].extensions.levels[1]: +Inf is not a number JSON holds"},
	} {
		_, err := Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: oil\n    extensions: "+bad.extensions+"\n"))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("extensions %s: %v, want %q", bad.extensions, err, bad.want)
		}
	}
	// A type error elsewhere names itself alone, not the extensions too.
	_, err = Parse("r.yaml", []byte("apiVersion: tenantguard.io/v1\nkind: TenantRegistry\ntenants:\n  - name: oil\n    quotas: {pods: ten}\n    extensions:\n      lb: {allowed: [a]}\n"))
	if err == nil || !strings.Contains(err.Error(), "quotas.pods") || strings.Contains(err.Error(), "extensions") {
		t.Errorf("a registry with one type error: %v, want it named alone", err)
	}
}
