package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Balance serves HTTPS on a free loopback port with the cluster's serving
// certificate and passes each request to the next of backends in turn (base
// URLs of replicas), as a Service spreads the API server's webhook calls
// over a Deployment's pods. It returns its base URL; stop closes it.
func (c *Cluster) Balance(backends []string) (baseURL string, stop func(), err error) {
	if len(backends) == 0 {
		return "", nil, errors.New("no backends to balance")
	}
	targets := make([]*url.URL, len(backends))
	for i, b := range backends {
		if targets[i], err = url.Parse(b); err != nil {
			return "", nil, err
		}
	}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(targets[(next.Add(1)-1)%uint64(len(targets))])
		},
		Transport: c.HTTP.Transport,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.ServeTLS(ln, c.CertFile, c.KeyFile) }()
	return "https://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// webhookName is the name of the webhook configurations Start installs
// (the configuration package's default).
const webhookName = "tenantguard"

// PointWebhooks sends every webhook of tenantguard's configurations to
// baseURL (the same paths) and returns the base URL they used before.
func (c *Cluster) PointWebhooks(ctx context.Context, baseURL string) (before string, err error) {
	adm := c.Client.AdmissionregistrationV1()
	validating, err := adm.ValidatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	mutating, err := adm.MutatingWebhookConfigurations().Get(ctx, webhookName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	repoint := func(u *string) error {
		if u == nil {
			return errors.New("a webhook without a URL")
		}
		parsed, err := url.Parse(*u)
		if err != nil {
			return err
		}
		before = parsed.Scheme + "://" + parsed.Host
		*u = strings.TrimSuffix(baseURL, "/") + parsed.Path
		return nil
	}
	for i := range validating.Webhooks {
		if err := repoint(validating.Webhooks[i].ClientConfig.URL); err != nil {
			return "", err
		}
	}
	for i := range mutating.Webhooks {
		if err := repoint(mutating.Webhooks[i].ClientConfig.URL); err != nil {
			return "", err
		}
	}
	if _, err := adm.ValidatingWebhookConfigurations().Update(ctx, validating, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("repointing the validating webhooks: %w", err)
	}
	if _, err := adm.MutatingWebhookConfigurations().Update(ctx, mutating, metav1.UpdateOptions{}); err != nil {
		return "", fmt.Errorf("repointing the mutating webhooks: %w", err)
	}
	return before, nil
}
