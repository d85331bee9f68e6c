package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/export"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/tests/live"
	"github.com/tenantguard/tenantguard/tests/scale"
)

// OPAPath is where the classic OPA admission setup answers the validating
// webhook: the exported bundle's kube-mgmt entrypoint.
const OPAPath = "/v0/data/tenantguard/kubernetes/validate"

// OPAServerFlags are the settings of `opa run --server` the harness uses,
// those docs/policy-library.md gives for the bundle at scale: the store
// keeps data.kubernetes as Rego values (--optimize-store-for-read-speed),
// so that reading a replicated object does not convert it anew for every
// request, and OPA logs errors only (at info it logs every request). No
// decision log is configured, which is OPA's default: a console decision
// log writes every decision, the whole AdmissionReview with it.
var OPAServerFlags = []string{"--optimize-store-for-read-speed", "--log-level", "error"}

// StartOPA runs the classic OPA admission setup for the scale: `opa run
// --server` over TLS with OPAServerFlags and tenantguard's exported bundle
// (the same Rego, the registry as data), and the scale cluster replicated
// into data.kubernetes as kube-mgmt lays it out. It returns once the data
// is loaded.
func StartOPA(ctx context.Context, bin, dir, certFile, keyFile string, client *http.Client, s Scale) (*Process, string, error) {
	bundleFile := filepath.Join(dir, "bundle.tar.gz")
	if err := writeBundle(bundleFile, s.Tenants); err != nil {
		return nil, "", err
	}
	port, err := live.FreePort()
	if err != nil {
		return nil, "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{"run", "--server", "--addr", addr}, OPAServerFlags...)
	p, err := start(ctx, "opa", nil, bin, append(args, "--tls-cert-file", certFile, "--tls-private-key-file", keyFile, "--bundle", bundleFile)...)
	if err != nil {
		return nil, "", err
	}
	base := "https://" + addr
	if err := waitHealthy(client, base, p); err != nil {
		p.Stop()
		return nil, "", err
	}
	data, err := json.Marshal(KubeMgmt(s))
	if err != nil {
		p.Stop()
		return nil, "", err
	}
	if err := put(client, base+"/v1/data/kubernetes", data); err != nil {
		p.Stop()
		return nil, "", err
	}
	return p, base, nil
}

// writeBundle exports the bundle of the scale registry of n tenants.
func writeBundle(file string, n int) error {
	snap, err := registry.Parse("scale.yaml", scale.Registry(n))
	if err != nil {
		return err
	}
	b, err := export.Bundle(snap, export.BundleOptions{})
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := export.WriteTarGz(&buf, b); err != nil {
		return err
	}
	return os.WriteFile(file, buf.Bytes(), 0o600)
}

// KubeMgmt lays the scale cluster out as kube-mgmt replicates it into
// data.kubernetes: cluster-scoped objects by name, namespaced ones by
// namespace and name.
func KubeMgmt(s Scale) map[string]any {
	data := map[string]any{}
	scale.Objects(s.Tenants, s.Namespaces, s.Pods, func(o clusterview.Object) {
		meta := map[string]any{"name": o.Name}
		if o.Labels != nil {
			meta["labels"] = o.Labels
		}
		obj := map[string]any{"metadata": meta}
		if o.PriorityClass != nil {
			obj["value"] = o.PriorityClass.Value
		}
		if len(o.Hosts) > 0 {
			obj["spec"] = hostsSpec(o)
		}
		if o.Kind == "Pod" {
			// what the bundle sums for the tenant's resource quota
			obj["spec"] = podResourcesSpec()
		}
		byResource, _ := data[o.Resource].(map[string]any)
		if byResource == nil {
			byResource = map[string]any{}
			data[o.Resource] = byResource
		}
		if o.Namespace == "" {
			byResource[o.Name] = obj
			return
		}
		meta["namespace"] = o.Namespace
		byNamespace, _ := byResource[o.Namespace].(map[string]any)
		if byNamespace == nil {
			byNamespace = map[string]any{}
			byResource[o.Namespace] = byNamespace
		}
		byNamespace[o.Name] = obj
	})
	return data
}

// waitHealthy polls OPA's health endpoint until its bundle is active.
func waitHealthy(client *http.Client, base string, p *Process) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get(base + "/health?bundles=true")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("opa exited: %s", p.logs.String())
		default:
		}
	}
	return fmt.Errorf("opa did not become healthy: %s", p.logs.String())
}

// put writes a document into OPA's data.
func put(client *http.Client, url string, data []byte) error {
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s: %.300s", url, resp.Status, body)
	}
	return nil
}

// hostsSpec is the spec of an Ingress or route serving o.Hosts, as
// kube-mgmt replicates it.
func hostsSpec(o clusterview.Object) map[string]any {
	hosts := make([]any, len(o.Hosts))
	for i, h := range o.Hosts {
		hosts[i] = h
	}
	if o.Kind != "Ingress" {
		return map[string]any{"hostnames": hosts}
	}
	rules := make([]any, len(hosts))
	for i, h := range hosts {
		rules[i] = map[string]any{"host": h}
	}
	return map[string]any{"rules": rules}
}

// WriteOPAFiles writes what `opa bench` and `opa eval --profile` need to
// measure the bundle on the scale cluster in-process, without the server:
// bundle.tar.gz (the bundle of the scale registry), data.json (the cluster
// as kube-mgmt replicates it, under "kubernetes") and, for each kind of
// request of the corpus, KIND.json, its first AdmissionReview (the input).
func WriteOPAFiles(dir string, s Scale) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := writeBundle(filepath.Join(dir, "bundle.tar.gz"), s.Tenants); err != nil {
		return err
	}
	data, err := json.Marshal(map[string]any{"kubernetes": KubeMgmt(s)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "data.json"), data, 0o600); err != nil {
		return err
	}
	written := map[string]bool{}
	for _, r := range scale.Corpus(s.Tenants, 100) {
		if written[r.Kind] {
			continue
		}
		written[r.Kind] = true
		if err := os.WriteFile(filepath.Join(dir, r.Kind+".json"), r.Body, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// podResourcesSpec is the spec of a scale pod as far as its usage goes: one
// container with scale.PodResources.
func podResourcesSpec() map[string]any {
	var resources map[string]any
	if err := json.Unmarshal([]byte(scale.PodResources), &resources); err != nil {
		panic(err)
	}
	return map[string]any{"containers": []any{map[string]any{"name": "web", "resources": resources}}}
}
