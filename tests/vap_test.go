package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
)

// loaderUser sets up each case's cluster (namespaces, the objects an update
// or delete acts on); the test adds a matchCondition leaving it out of the
// policies, the only change it makes to what export vap writes.
const loaderUser = "tenantguard-test-loader"

// observerSuffix names the extra binding the test adds to every policy with
// validationActions [Warn]: the API server answers a denied request with
// its first failed policy only, the observers' warnings name every one.
const observerSuffix = "-observer"

// warnings records the API server's warnings of one request at a time.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func (w *warnings) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = nil
	return out
}

// vapCluster is the control plane the exported policies are installed in.
type vapCluster struct {
	cp      *live.ControlPlane
	loader  *dynamic.DynamicClient
	actions map[string][]string // rule -> validationActions of its exported binding
	lib     *export.Library
	cat     *catalog.Catalog  // the library exported
	patcher *familyPatcher    // its families' patches
	labels  map[string]string // namespace -> labels last applied, as JSON
	classes map[string]bool   // PriorityClasses known to exist
	loads   int
}

// observed and warned match the warnings of an observer binding and of an
// exported binding in Warn mode: the rule and the message.
var (
	observed = regexp.MustCompile(`ValidatingAdmissionPolicy 'tenantguard-([a-z-]+)' with binding 'tenantguard-[a-z-]+` + observerSuffix + `': (.*)$`)
	warned   = regexp.MustCompile(`ValidatingAdmissionPolicy 'tenantguard-([a-z-]+)' with binding 'tenantguard-[a-z-]+': (.*)$`)
)

// vapJudge installs the exported admission policies, bindings and
// parameter object into a real kube-apiserver and sends every case through
// it: the case's namespace labelled as in the case, the object an update or
// delete acts on created first, then the request itself, dry-run,
// impersonating the case's user. A create is sent as the requester wrote it,
// but for the defaults of the families no MutatingAdmissionPolicy sets, and
// the object the API server answers must carry what the engine's patch of
// each other family sets (mapdefaults_test.go); any other request is sent as
// the engine mutated it. Requests the API server refuses before validating
// admission (an object its own validation rejects, a namespace that does not
// exist) are counted apart.
func vapJudge(cluster *sharedCluster, cat *catalog.Catalog) judge {
	var vc *vapCluster
	var corpus []*corpusCase
	if cat == nil {
		cat = catalog.MustEmbedded()
	}
	defaulted := map[string]bool{}
	return judge{
		setsDefaults: func(rule string) bool {
			r, _ := cat.Rule(rule)
			return r.HasCELMutations()
		},
		defaulted: defaulted,
		name:      "ValidatingAdmissionPolicy",
		covers:    func(rule string) bool { return vc == nil || vc.lib == nil || vc.lib.Covers(rule) },
		notTaken: []string{
			deleteWithoutOld,
			"CONNECT requests carry no object and are allowed",
			"dot-dot escape from a granted hostPath is denied",                                            // a path with "..", which API validation refuses
			"a custom resource kind named Deployment is not a pod carrier",                                // no such CRD here
			"resizing a claim is not re-judged",                                                           // a claim's spec is immutable
			"a claim's expansion past its tenant's storage is refused",                                    // likewise, unless bound
			"a resource claim sent as resource.k8s.io/v1beta1 counts its devices as in v1",                // v1beta1 is not served by default
			"a cordoned tenant's storage controller removes its finalizer from a namespace being deleted", // a namespace terminating, which the replay does not set up
		},
		refuses: func(c *corpusCase) string {
			if why := refusesDeleteWithoutOld(c); why != "" {
				return why
			}
			if c.request.Operation == "CONNECT" {
				return "a CONNECT needs a node to connect to"
			}
			return ""
		},
		prepare: func(_ testing.TB, cases []*corpusCase) { corpus = cases },
		load: func(t testing.TB, registryFile string) {
			vc = cluster.get(t)
			vc.install(t, registryFile, cat)
			if vc.patcher.learned == nil {
				vc.patcher.learn(t, corpus)
			}
		},
		decide: func(t testing.TB, c *corpusCase) (verdict, []string) {
			return vc.send(t, c, defaulted)
		},
	}
}

// sharedCluster is the control plane the CEL engines share, started on
// first use and stopped when the test that made it ends.
type sharedCluster struct {
	owner testing.TB
	vc    *vapCluster
}

func (s *sharedCluster) get(t testing.TB) *vapCluster {
	t.Helper()
	if s.vc == nil {
		s.vc = startVAPCluster(t, s.owner.Cleanup)
	}
	return s.vc
}

func startVAPCluster(t testing.TB, cleanup func(func())) *vapCluster {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	// PodSecurity and RuntimeClass would refuse some corpus pods before the
	// policies see them (RuntimeClasses the cluster lacks); they are the
	// cluster's own rules, not tenantguard's (StorageObjectInUseProtection
	// adds a finalizer only a controller removes). Priority stays: it sets a
	// Pod's priority from the class a MutatingAdmissionPolicy names
	// (ensurePriorityClass makes the classes the corpus names).
	cp, err := live.StartControlPlane(ctx, "PodSecurity", "RuntimeClass", "StorageObjectInUseProtection")
	if err != nil {
		t.Fatalf("%v (run `make control-plane`)", err)
	}
	cleanup(cp.Stop)
	// every requester may do anything RBAC-wise: only the policies decide
	_, err = cp.Client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "corpus-requesters"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "Group", Name: "system:authenticated"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(cp.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: loaderUser, Groups: []string{"system:masters", "system:authenticated"}}
	return &vapCluster{cp: cp, loader: dynamic.NewForConfigOrDie(cfg), labels: map[string]string{}, classes: map[string]bool{}}
}

// install applies the library for a registry file, with the loader's
// exemption and the observer bindings, and waits until the API server
// enforces it: a canary policy reports the parameter object's revision.
func (vc *vapCluster) install(t testing.TB, registryFile string, cat *catalog.Catalog) {
	t.Helper()
	ctx := t.Context()
	snap, err := registry.Load(registryFile)
	if err != nil {
		t.Fatal(err)
	}
	if vc.cat != cat {
		vc.cat, vc.patcher = cat, newFamilyPatcher(t, cat)
	}
	if vc.lib, err = export.VAP(snap, export.Options{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	vc.loads++
	token := fmt.Sprintf("load-%d", vc.loads)
	vc.actions = map[string][]string{}
	var crd, params []map[string]any
	var policies []map[string]any
	for _, obj := range vc.lib.Objects {
		obj = deepCopy(t, obj)
		spec, _ := obj["spec"].(map[string]any)
		switch obj["kind"] {
		case "CustomResourceDefinition":
			crd = append(crd, obj)
		case export.ParamsKind:
			obj["registry"].(map[string]any)["testRevision"] = token
			params = append(params, obj)
		case "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy":
			conditions, _ := spec["matchConditions"].([]any)
			spec["matchConditions"] = append(conditions, map[string]any{"name": "not-the-test-loader", "expression": fmt.Sprintf("request.userInfo.username != %q", loaderUser)})
			policies = append(policies, obj)
		case "MutatingAdmissionPolicyBinding":
			policies = append(policies, obj)
		case "ValidatingAdmissionPolicyBinding":
			name := obj["metadata"].(map[string]any)["name"].(string)
			var actions []string
			convert(t, spec["validationActions"], &actions)
			vc.actions[strings.TrimPrefix(name, "tenantguard-")] = actions
			observer := deepCopy(t, obj)
			observer["metadata"] = map[string]any{"name": name + observerSuffix}
			observer["spec"].(map[string]any)["validationActions"] = []any{"Warn"}
			policies = append(policies, obj, observer)
		}
	}
	policies = append(policies, canaryPolicy()...)
	vc.apply(t, crd)
	// the parameter kind is served once its CRD is established
	gvk := schema.GroupVersionKind{Group: export.ParamsGroup, Version: export.ParamsVersion, Kind: export.ParamsKind}
	waitFor(t, 30*time.Second, "the parameter kind to be served", func() bool {
		_, err := vc.cp.Resource(gvk)
		return err == nil
	})
	vc.apply(t, policies)
	vc.apply(t, params)
	canary := vc.as("tenantguard-canary", nil)
	waitFor(t, 30*time.Second, "the policies and parameters to be in force", func() bool {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "canary"}}}
		out, err := canary.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		validated := slices.ContainsFunc(apiWarnings.take(), func(w string) bool { return strings.Contains(w, "revision "+token) })
		return validated && err == nil && out.GetAnnotations()[canaryAnnotation] == token
	})
	// bindings and parameters come through separate informers
	time.Sleep(time.Second)
}

// apiWarnings records the API server's warnings to every impersonated client.
var apiWarnings = &warnings{}

// canaryAnnotation is what the canary's MutatingAdmissionPolicy sets: the
// parameter object's revision.
const canaryAnnotation = "tenantguard.io/test-revision"

// canaryPolicy fails every namespace request of the canary user with the
// parameter object's revision, and a mutating one annotates it with the
// revision: once both report the newest, the API server has the newest
// parameters for both kinds of policy.
func canaryPolicy() []map[string]any {
	object := func(kind string, spec map[string]any) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": map[string]any{"name": "test-canary"}, "spec": spec}
	}
	policy := func(fields map[string]any) map[string]any {
		spec := map[string]any{
			"failurePolicy": "Fail",
			"paramKind":     map[string]any{"apiVersion": export.ParamsGroup + "/" + export.ParamsVersion, "kind": export.ParamsKind},
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "resources": []any{"namespaces"}, "operations": []any{"CREATE"},
			}}},
			"matchConditions": []any{map[string]any{"name": "canary", "expression": `request.userInfo.username == "tenantguard-canary"`}},
		}
		maps.Copy(spec, fields)
		return spec
	}
	paramRef := map[string]any{"name": export.ParamsName, "parameterNotFoundAction": "Deny"}
	return []map[string]any{
		object("ValidatingAdmissionPolicy", policy(map[string]any{
			"validations": []any{map[string]any{"expression": "false", "messageExpression": `"revision " + params.registry.testRevision`}},
		})),
		object("ValidatingAdmissionPolicyBinding", map[string]any{"policyName": "test-canary", "validationActions": []any{"Warn"}, "paramRef": paramRef}),
		object("MutatingAdmissionPolicy", policy(map[string]any{
			"reinvocationPolicy": "Never",
			"mutations": []any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{
				"expression": fmt.Sprintf(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {%q: params.registry.testRevision}}]`, canaryAnnotation),
			}}},
		})),
		object("MutatingAdmissionPolicyBinding", map[string]any{"policyName": "test-canary", "paramRef": paramRef}),
	}
}

func (vc *vapCluster) apply(t testing.TB, objects []map[string]any) {
	t.Helper()
	if err := applyObjects(t, vc, objects...); err != nil {
		t.Fatalf("the API server refused the exported library: %v", err)
	}
}

// as is a dynamic client impersonating a requester, recording warnings.
func (vc *vapCluster) as(user string, groups []string) *dynamic.DynamicClient {
	cfg := rest.CopyConfig(vc.cp.Admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cfg.WarningHandler = apiWarnings
	return dynamic.NewForConfigOrDie(cfg)
}

// send runs one case through the API server; defaulted gets the rules whose
// defaults the MutatingAdmissionPolicies set as the engine did.
func (vc *vapCluster) send(t testing.TB, c *corpusCase, defaulted map[string]bool) (verdict, []string) {
	t.Helper()
	ctx := t.Context()
	req := c.request
	gvr := schema.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource}
	if req.Namespace != "" && !vc.ensureNamespace(t, c) {
		t.Skipf("namespace %q does not exist in this case; the API server refuses before admission", req.Namespace)
	}
	var ri dynamic.ResourceInterface = vc.loader.Resource(gvr)
	if req.Namespace != "" {
		ri = vc.loader.Resource(gvr).Namespace(req.Namespace)
	}
	var existing *unstructured.Unstructured
	if len(req.OldObject.Raw) > 0 {
		existing = vc.putOld(t, ri, gvr, c)
	}
	client := vc.as(req.UserInfo.Username, req.UserInfo.Groups)
	var target dynamic.ResourceInterface = client.Resource(gvr)
	if req.Namespace != "" {
		target = client.Resource(gvr).Namespace(req.Namespace)
	}
	var obj *unstructured.Unstructured
	raw := req.Object.Raw
	var covered map[string][]map[string]any
	if req.Operation == "CREATE" && req.SubResource == "" {
		// the policies set the defaults of the families they cover
		var others []map[string]any
		covered, others = vc.patcher.split(t, c)
		raw = createBody(t, c, others)
	}
	if len(raw) > 0 {
		obj = &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		complete(obj.Object)
		if req.Namespace != "" {
			obj.SetNamespace(req.Namespace)
		}
		vc.ensurePriorityClass(t, obj.Object)
	}
	apiWarnings.take()
	dry := []string{metav1.DryRunAll}
	var err error
	var sub []string
	if req.SubResource != "" {
		sub = []string{req.SubResource}
	}
	var answered *unstructured.Unstructured
	switch req.Operation {
	case "CREATE":
		answered, err = target.Create(ctx, obj, metav1.CreateOptions{DryRun: dry}, sub...)
		if apierrors.IsAlreadyExists(err) {
			err = nil // storage answers after validating admission let it through
		}
	case "UPDATE":
		obj.SetResourceVersion(existing.GetResourceVersion())
		obj.SetUID(existing.GetUID())
		_, err = target.Update(ctx, obj, metav1.UpdateOptions{DryRun: dry}, sub...)
	case "DELETE":
		err = target.Delete(ctx, req.Name, metav1.DeleteOptions{DryRun: dry})
	}
	// namespaces stay: without a controller manager a deleted one would
	// stay Terminating and refuse everything created in it
	if existing != nil && gvr.Resource != "namespaces" {
		if existing.GetDeletionTimestamp() != nil {
			if _, perr := ri.Patch(context.WithoutCancel(ctx), existing.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); perr != nil && !apierrors.IsNotFound(perr) {
				t.Fatal(perr)
			}
		}
		zero := int64(0)
		if derr := ri.Delete(context.WithoutCancel(ctx), existing.GetName(), metav1.DeleteOptions{GracePeriodSeconds: &zero}); derr != nil && !apierrors.IsNotFound(derr) {
			t.Fatal(derr)
		}
	}
	got := verdictOf{}
	var problems, warnedRules []string
	for _, w := range apiWarnings.take() {
		if m := observed.FindStringSubmatch(w); m != nil {
			if !strings.HasPrefix(m[2], "["+m[1]+"] ") {
				problems = append(problems, fmt.Sprintf("%s failed without its rule's message (an evaluation error?): %s", m[1], m[2]))
				continue
			}
			got.add(modeOf(vc.actions[m[1]]), m[1])
		} else if m := warned.FindStringSubmatch(w); m != nil {
			warnedRules = append(warnedRules, m[1])
		}
	}
	v := got.verdict()
	if req.Operation == "CREATE" && req.SubResource == "" && err == nil {
		if len(covered) > 0 {
			problems = append(problems, vc.patcher.defaultsSet(t, answered, covered, defaulted)...)
		}
		problems = append(problems, vc.patcher.overDefaults(t, req.Kind.Kind, obj.Object, answered, covered)...)
	}
	// what the API server did in Warn mode, beside what the observers saw
	slices.Sort(warnedRules)
	if !slices.Equal(slices.Compact(warnedRules), v.Warn) {
		problems = append(problems, fmt.Sprintf("the API server warned for %v, the observers saw %v fail in Warn mode", warnedRules, v.Warn))
	}
	switch {
	case err == nil && len(v.Deny) > 0:
		problems = append(problems, "the API server admitted a request that policies in Deny mode failed")
	case err != nil && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'tenantguard-") && len(covered) > 0:
		problems = append(problems, fmt.Sprintf("the API server refused the create the engine mutates before validating admission, the MutatingAdmissionPolicies in force: %v", err))
	case err != nil && !strings.Contains(err.Error(), "ValidatingAdmissionPolicy 'tenantguard-"):
		t.Skipf("the API server refused the request before validating admission: %v", err)
	case err != nil && !slices.ContainsFunc(v.Deny, func(id string) bool { return strings.Contains(err.Error(), "["+id+"] ") }):
		problems = append(problems, fmt.Sprintf("denied with %q, which names no rule the observers saw fail in Deny mode", err))
	}
	return v, problems
}

// ensureNamespace gives the request's namespace the labels it has in the
// case, as the loader; false when the case has no such namespace.
func (vc *vapCluster) ensureNamespace(t testing.TB, c *corpusCase) bool {
	t.Helper()
	ns := c.namespaceObject()
	if ns == nil {
		return false
	}
	meta, _ := ns["metadata"].(map[string]any)
	labels, _ := meta["labels"].(map[string]any)
	raw, err := json.Marshal(labels)
	if err != nil {
		t.Fatal(err)
	}
	if vc.labels[c.request.Namespace] == string(raw) {
		return true
	}
	vc.putNamespace(t, c.request.Namespace, labels, nil)
	vc.labels[c.request.Namespace] = string(raw)
	// the policies read namespaces through the API server's informer
	time.Sleep(500 * time.Millisecond)
	return true
}

// putNamespace sets a namespace's labels and annotations (those the loader
// set before and not given are removed), creating it if need be.
func (vc *vapCluster) putNamespace(t testing.TB, name string, labels, annotations map[string]any) *unstructured.Unstructured {
	t.Helper()
	meta := map[string]any{"name": name, "labels": labels}
	if annotations != nil {
		meta["annotations"] = annotations
	}
	body, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
	if err != nil {
		t.Fatal(err)
	}
	force := true
	out, err := vc.loader.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).
		Patch(t.Context(), name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "loader", Force: &force})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// putOld makes the object an update or delete acts on exist, as the loader.
func (vc *vapCluster) putOld(t testing.TB, ri dynamic.ResourceInterface, gvr schema.GroupVersionResource, c *corpusCase) *unstructured.Unstructured {
	t.Helper()
	old := &unstructured.Unstructured{}
	if err := old.UnmarshalJSON(c.request.OldObject.Raw); err != nil {
		t.Fatal(err)
	}
	complete(old.Object)
	if gvr.Resource == "namespaces" {
		labels, _ := old.Object["metadata"].(map[string]any)["labels"].(map[string]any)
		annotations, _ := old.Object["metadata"].(map[string]any)["annotations"].(map[string]any)
		delete(vc.labels, old.GetName())
		return vc.putNamespace(t, old.GetName(), labels, annotations)
	}
	if c.request.Namespace != "" {
		old.SetNamespace(c.request.Namespace)
	}
	vc.ensurePriorityClass(t, old.Object)
	going := old.GetDeletionTimestamp() != nil
	old.SetDeletionTimestamp(nil)
	created, err := ri.Create(t.Context(), old, metav1.CreateOptions{})
	if err != nil {
		t.Skipf("the object the request acts on cannot be created: %v", err)
	}
	if !going {
		return created
	}
	// An object being deleted: deleted after its create, its finalizers
	// keep it (send removes them once the case is done).
	if err := ri.Delete(t.Context(), created.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := ri.Get(t.Context(), created.GetName(), metav1.GetOptions{})
	if err != nil || deleting.GetDeletionTimestamp() == nil {
		t.Fatalf("the object the request acts on is not being deleted after its delete (%v): finalizers %v", err, created.GetFinalizers())
	}
	return deleting
}

func waitFor(t testing.TB, timeout time.Duration, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if done() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func deepCopy(t testing.TB, in map[string]any) map[string]any {
	t.Helper()
	var out map[string]any
	convert(t, in, &out)
	return out
}

// complete fills in what the API server's validation requires of a corpus
// object and the rules never read (selectors, template labels, restart
// policies, claim sizes), so that the request reaches validating admission.
func complete(obj map[string]any) {
	kind, _ := obj["kind"].(string)
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		obj["spec"] = spec
	}
	labels := map[string]any{"app": "corpus"}
	template := func(t map[string]any, restart bool) {
		meta := ensure(t, "metadata")
		if meta["labels"] == nil {
			meta["labels"] = labels
		}
		podSpec := ensure(t, "spec")
		if restart && podSpec["restartPolicy"] == nil {
			podSpec["restartPolicy"] = "Never"
		}
		completePodSpec(podSpec)
	}
	switch kind {
	case "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet":
		if spec["selector"] == nil {
			spec["selector"] = map[string]any{"matchLabels": labels}
		}
		template(ensure(spec, "template"), false)
		if kind == "StatefulSet" {
			for _, c := range asList(spec["volumeClaimTemplates"]) {
				completeClaim(ensure(c, "spec"))
			}
		}
	case "ReplicationController":
		if spec["selector"] == nil {
			spec["selector"] = labels
		}
		template(ensure(spec, "template"), false)
	case "Job":
		template(ensure(spec, "template"), true)
	case "CronJob":
		if spec["schedule"] == nil {
			spec["schedule"] = "@daily"
		}
		template(ensure(ensure(ensure(spec, "jobTemplate"), "spec"), "template"), true)
	case "PodTemplate":
		template(ensure(obj, "template"), false)
		delete(obj, "spec")
	case "Pod":
		completePodSpec(spec)
	case "PersistentVolumeClaim":
		completeClaim(spec)
	case "Service":
		if spec["ports"] == nil && spec["type"] != "ExternalName" {
			spec["ports"] = []any{map[string]any{"port": int64(80)}}
		}
		if spec["type"] == "ExternalName" && spec["externalName"] == nil {
			spec["externalName"] = "example.com"
		}
	default:
		if len(spec) == 0 {
			delete(obj, "spec")
		}
	}
}

func completePodSpec(spec map[string]any) {
	if spec["containers"] == nil {
		spec["containers"] = []any{map[string]any{"name": "app", "image": "nginx"}}
	}
	for _, v := range asList(spec["volumes"]) {
		if eph, ok := v["ephemeral"].(map[string]any); ok {
			if tmpl, ok := eph["volumeClaimTemplate"].(map[string]any); ok {
				completeClaim(ensure(tmpl, "spec"))
			}
		}
	}
}

func completeClaim(spec map[string]any) {
	if spec["accessModes"] == nil {
		spec["accessModes"] = []any{"ReadWriteOnce"}
	}
	if spec["resources"] == nil {
		spec["resources"] = map[string]any{"requests": map[string]any{"storage": "1Gi"}}
	}
}

func ensure(m map[string]any, key string) map[string]any {
	v, ok := m[key].(map[string]any)
	if !ok {
		v = map[string]any{}
		m[key] = v
	}
	return v
}

func asList(v any) []map[string]any {
	var out []map[string]any
	list, _ := v.([]any)
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
