package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
)

// opaServer is `opa run --server` serving one bundle on loopback.
type opaServer struct {
	url  string
	http *http.Client
}

func startOPA(t testing.TB, args ...string) *opaServer {
	t.Helper()
	port, err := live.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	bin, err := filepath.Abs(filepath.Join("..", "bin", "opa"))
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), bin, append([]string{"run", "--server", "--addr", addr, "--log-level", "error"}, args...)...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("%v: run `make tools`", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &opaServer{url: "http://" + addr, http: &http.Client{Timeout: 10 * time.Second}}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := s.http.Get(s.url + "/health?bundles=true"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
	}
	t.Fatalf("opa did not become healthy:\n%s", logs.String())
	return nil
}

// do sends body to path and decodes the answer into out.
func (s *opaServer) do(t testing.TB, method, path string, body []byte, out any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s: %s", method, path, resp.Status, raw)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
}

// writeBundle exports the bundle of a registry file into dir.
func writeBundle(t testing.TB, registryFile, file string, opts export.BundleOptions) {
	t.Helper()
	snap, err := registry.Load(registryFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := export.Bundle(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := export.WriteTarGz(&buf, b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// kubeMgmt lays objects out as kube-mgmt replicates them into data.kubernetes.
func kubeMgmt(t testing.TB, objects []map[string]any) map[string]any {
	t.Helper()
	data := map[string]any{}
	for _, o := range objects {
		apiVersion, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		resource := clusterview.Resource(gv.WithKind(kind))
		meta, _ := o["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		namespace, _ := meta["namespace"].(string)
		byResource, _ := data[resource].(map[string]any)
		if byResource == nil {
			byResource = map[string]any{}
			data[resource] = byResource
		}
		if namespace == "" {
			byResource[name] = o
			continue
		}
		byNamespace, _ := byResource[namespace].(map[string]any)
		if byNamespace == nil {
			byNamespace = map[string]any{}
			byResource[namespace] = byNamespace
		}
		byNamespace[name] = o
	}
	return data
}

// opaJudge runs `opa run --server` on the exported bundle, the cluster
// replicated into data.kubernetes as kube-mgmt does, and asks as the API
// server would: the mutating entrypoint, its patch applied, then the
// validating entrypoint. Beyond rule ids, its answer must be the embedded
// engine's to the letter: the status message line for line, warnings,
// audit annotations and the patch.
func opaJudge(t testing.TB, cat *catalog.Catalog) judge {
	dir := t.TempDir()
	var srv *opaServer
	return judge{
		name:   "OPA bundle",
		covers: func(string) bool { return true },
		load: func(t testing.TB, registryFile string) {
			bundleFile := filepath.Join(dir, fmt.Sprintf("bundle-%d.tar.gz", time.Now().UnixNano()))
			writeBundle(t, registryFile, bundleFile, export.BundleOptions{Catalog: cat})
			srv = startOPA(t, "--bundle", bundleFile)
		},
		decide: func(t testing.TB, c *corpusCase) (verdict, []string) {
			data, err := json.Marshal(kubeMgmt(t, c.objects))
			if err != nil {
				t.Fatal(err)
			}
			srv.do(t, http.MethodPut, "/v1/data/kubernetes", data, nil)
			var mutated admissionv1.AdmissionReview
			srv.do(t, http.MethodPost, "/v0/data/tenantguard/kubernetes/mutate", c.original, &mutated)
			review := c.original
			if len(mutated.Response.Patch) > 0 {
				review = applyToReview(t, c.original, mutated.Response.Patch)
			}
			var validated admissionv1.AdmissionReview
			srv.do(t, http.MethodPost, "/v0/data/tenantguard/kubernetes/validate", review, &validated)
			got := validated.Response
			v := verdictOf{}
			if got.Result != nil && got.Result.Message != "" {
				for _, line := range strings.Split(got.Result.Message, "\n") {
					v.add("deny", ruleOf(line))
				}
			}
			for _, w := range got.Warnings {
				v.add("warn", ruleOf(w))
			}
			for _, a := range got.AuditAnnotations {
				v.add("dryrun", ruleOf(a))
			}
			return v.verdict(), compareResponses(c.response, *got, c.patch, mutated.Response.Patch)
		},
	}
}

// applyToReview applies a JSON patch to request.object of an AdmissionReview.
func applyToReview(t testing.TB, body, patch []byte) []byte {
	t.Helper()
	var review map[string]any
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatal(err)
	}
	request, _ := review["request"].(map[string]any)
	object, err := json.Marshal(request["object"])
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := p.Apply(object)
	if err != nil {
		t.Fatal(err)
	}
	var obj any
	if err := json.Unmarshal(patched, &obj); err != nil {
		t.Fatal(err)
	}
	request["object"] = obj
	out, err := json.Marshal(review)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// compareResponses lists every difference between the engine's answer and
// another engine's: allowed, message, warnings, audit annotations, patch.
func compareResponses(want, got admissionv1.AdmissionResponse, wantPatch, gotPatch []byte) []string {
	var problems []string
	if want.Allowed != got.Allowed {
		problems = append(problems, fmt.Sprintf("allowed %v, engine %v", got.Allowed, want.Allowed))
	}
	message := func(r admissionv1.AdmissionResponse) string {
		if r.Result == nil {
			return ""
		}
		return r.Result.Message
	}
	if message(want) != message(got) {
		problems = append(problems, fmt.Sprintf("message\n  %q\nengine\n  %q", message(got), message(want)))
	}
	if !reflect.DeepEqual(want.Warnings, got.Warnings) && (len(want.Warnings) > 0 || len(got.Warnings) > 0) {
		problems = append(problems, fmt.Sprintf("warnings %q, engine %q", got.Warnings, want.Warnings))
	}
	if !reflect.DeepEqual(want.AuditAnnotations, got.AuditAnnotations) && (len(want.AuditAnnotations) > 0 || len(got.AuditAnnotations) > 0) {
		problems = append(problems, fmt.Sprintf("audit annotations %v, engine %v", got.AuditAnnotations, want.AuditAnnotations))
	}
	if !jsonEqual(wantPatch, gotPatch) {
		problems = append(problems, fmt.Sprintf("patch %s, engine %s", gotPatch, wantPatch))
	}
	return problems
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if len(a) == 0 {
		a = []byte("[]")
	}
	if len(b) == 0 {
		b = []byte("[]")
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestOPABundleSignature signs the exported bundle and has the real opa
// verify it: with the public key it builds, with another key it is refused.
func TestOPABundleSignature(t *testing.T) {
	dir := t.TempDir()
	keyPEM, pubPEM := rsaKey(t)
	_, otherPub := rsaKey(t)
	for name, data := range map[string][]byte{"key.pem": keyPEM, "pub.pem": pubPEM, "other.pem": otherPub} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signed := filepath.Join(dir, "signed.tar.gz")
	writeBundle(t, filepath.Join("..", "examples", "registry.yaml"), signed, export.BundleOptions{SigningKey: keyPEM, KeyID: "platform"})
	opa := filepath.Join("..", "bin", "opa")
	verify := func(pub string) error {
		out, err := exec.CommandContext(t.Context(), opa, "build", "-b", signed, "--verification-key", filepath.Join(dir, pub),
			"--verification-key-id", "platform", "-o", filepath.Join(dir, "out.tar.gz")).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	}
	if err := verify("pub.pem"); err != nil {
		t.Errorf("opa refused the signed bundle with the right key: %v", err)
	}
	if err := verify("other.pem"); err == nil || !strings.Contains(err.Error(), "verification") {
		t.Errorf("opa accepted the signed bundle with another key: %v", err)
	}
}

func rsaKey(t testing.TB) (keyPEM, pubPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// TestTheExportedBundlesTestsPassInIt runs the real opa test -b on the
// exported bundle, as policy-library.md says it runs: the library's tests
// pass with the bundle's data.json (its registry and catalog) beside them.
func TestTheExportedBundlesTestsPassInIt(t *testing.T) {
	file := filepath.Join(t.TempDir(), "bundle.tar.gz")
	writeBundle(t, filepath.Join("..", "examples", "registry.yaml"), file, export.BundleOptions{})
	out, err := exec.CommandContext(t.Context(), filepath.Join("..", "bin", "opa"), "test", "-b", file).CombinedOutput()
	if err != nil {
		t.Fatalf("opa test -b: %v\n%s", err, out)
	}
}
