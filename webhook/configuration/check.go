package configuration

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	admissionv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"

	"github.com/tenantguard/tenantguard/internal/catalog"
	"github.com/tenantguard/tenantguard/internal/clusterview"
)

// RouteCheck compares the installed configurations with what the library
// and registry in force need (Unrouted): when the server starts, after
// every change Changes signals, and every Interval, so that a library or
// registry whose requests the webhooks do not send is said, not silently
// unenforced.
type RouteCheck struct {
	// Client reads the configurations, named Name.
	Client admissionv1client.AdmissionregistrationV1Interface
	Name   string
	// InForce is the library and the counted resources in force; false
	// before any.
	InForce func() (*catalog.Catalog, []schema.GroupResource, bool)
	// Changes signals a change of what is in force.
	Changes  <-chan struct{}
	Interval time.Duration
	Logger   *slog.Logger
	// Report receives how many requests are not routed after each check,
	// -1 when the configurations could not be read.
	Report func(unrouted int)
	// TenantNamespaces, when set, lists the tenant namespaces, whose
	// requests the webhooks' namespace selectors must send (Unselected),
	// ok false while the list is not complete yet (the informers not
	// synced); ReportUnselected, which must then be set too, receives how
	// many of them some webhook's namespaceSelector leaves out, -1 when
	// the configurations could not be read.
	TenantNamespaces func() (namespaces []clusterview.NamedLabels, ok bool)
	ReportUnselected func(n int)
}

// Run checks until ctx ends, saying what changed since the last check.
func (c *RouteCheck) Run(ctx context.Context) {
	tick := time.NewTicker(c.Interval)
	defer tick.Stop()
	said := "" // what the last check said, said again only when it changes
	for {
		text, level, attrs := c.check(ctx)
		if key := text + fmt.Sprint(attrs...); key != said && text != "" && ctx.Err() == nil {
			c.Logger.Log(ctx, level, text, attrs...)
			said = key
		}
		select {
		case <-ctx.Done():
			return
		case <-c.Changes:
		case <-tick.C:
		}
	}
}

// check is one comparison, as a log message: its text, level and
// attributes.
func (c *RouteCheck) check(ctx context.Context) (string, slog.Level, []any) {
	cat, counted, ok := c.InForce()
	if !ok {
		return "", slog.LevelInfo, nil
	}
	vwc, err := c.Client.ValidatingWebhookConfigurations().Get(ctx, c.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		vwc, err = nil, nil
	}
	var mwc *admissionregistrationv1.MutatingWebhookConfiguration
	if err == nil {
		mwc, err = c.Client.MutatingWebhookConfigurations().Get(ctx, c.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			mwc, err = nil, nil
		}
	}
	if err != nil {
		c.Report(-1)
		if c.TenantNamespaces != nil {
			c.ReportUnselected(-1)
		}
		return fmt.Sprintf("cannot read the webhook configurations %q to check their routes: %v", c.Name, err), slog.LevelWarn, nil
	}
	unrouted := Unrouted(vwc, mwc, cat, counted)
	c.Report(len(unrouted))
	var sel Selection
	if c.TenantNamespaces != nil {
		if namespaces, ok := c.TenantNamespaces(); ok {
			sel = Unselected(vwc, mwc, namespaces)
			c.ReportUnselected(sel.LeftOut)
		}
	}
	attrs := []any{"configuration", c.Name}
	if len(sel.Namespaces) > 0 {
		attrs = append(attrs, "unselected", strings.Join(sel.Namespaces, "; "))
	}
	if len(sel.Objects) > 0 {
		attrs = append(attrs, "objectSelectors", strings.Join(sel.Objects, "; "))
	}
	switch {
	case len(unrouted) > 0:
		return "the webhook configurations do not send requests the rules in force judge (but through the catch-all or break-glass webhooks, which fail open): update them (the chart's webhook.rules, or tenantguard rules -o webhook-rules)",
			slog.LevelWarn, append(attrs, "unrouted", strings.Join(unrouted, ", "))
	case len(sel.Namespaces) > 0:
		return "the namespace selectors of webhooks that judge tenants' requests leave out tenant namespaces, whose requests are then never judged: make them select the registry's tenant label (the chart's tenantLabel)",
			slog.LevelWarn, attrs
	case len(sel.Objects) > 0:
		return "webhooks that judge tenants' requests have an object selector: the tenants set their objects' labels, so it lets them keep any object from tenantguard; keep it to objects tenants cannot create (the chart's webhook.objectSelector)",
			slog.LevelWarn, attrs
	}
	return "the webhook configurations send every request the rules in force judge", slog.LevelInfo, attrs
}
