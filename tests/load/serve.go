package load

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/tenantguard/tenantguard/internal/clusterview"
	"github.com/tenantguard/tenantguard/internal/engine"
	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/registry"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/tests/scale"
	"github.com/tenantguard/tenantguard/webhook"
)

// Scale is the size of the cluster a target holds.
type Scale struct {
	Tenants, Namespaces, Pods int
}

// Started is what a served target reports once it is ready.
type Started struct {
	// Addr is the HTTPS address.
	Addr string `json:"addr"`
	// Sync is how long the cluster view took to fill, the way the informers
	// fill it after their initial list.
	Sync time.Duration `json:"sync"`
	// Ready is how long after the view was filled the server was ready:
	// policy compiled, registry loaded, listening.
	Ready time.Duration `json:"ready"`
}

// ServeTenantguard runs tenantguard's admission server on ln with the
// embedded policy, the scale registry and a view filled with the scale
// cluster, and reports through started once it answers /readyz. With reload
// set it then loads a changed registry that often, the way a ConfigMap edit
// reaches the server, alternating the scale registry with one holding an
// extra tenant (no request of the corpus is decided differently), and
// reports each through reloaded. The heap requests it receives are
// answered between reloads, never during one. With audit set it then runs
// audit with the server's store, beside the server, as serve runs its
// background audit. It returns when ctx ends.
func ServeTenantguard(ctx context.Context, ln net.Listener, certFile, keyFile string, s Scale, reload time.Duration, heap <-chan heapRequest, started func(Started), reloaded func(Reloads), audit func(context.Context, *state.Store)) error {
	t0 := time.Now()
	view := clusterview.New(registry.DefaultTenantLabel)
	scale.Fill(view, s.Tenants, s.Namespaces, s.Pods)
	synced := time.Now()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	pool := engine.NewPool(0) // GOMAXPROCS, as serve's default
	defer pool.Close()
	store := state.New(view, state.Options{Logger: log, Pool: pool})
	if err := store.LoadPolicy(ctx, "embedded", nil); err != nil {
		return err
	}
	if err := store.LoadRegistry(ctx, "scale", scaleRegistry(s.Tenants, 0)); err != nil {
		return err
	}
	srv, err := webhook.New(store, metrics.New(), log, webhook.Options{CertFile: certFile, KeyFile: keyFile})
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	if err := srv.Ready(); err != nil {
		return err
	}
	started(Started{Addr: ln.Addr().String(), Sync: synced.Sub(t0), Ready: time.Since(synced)})
	go reloadEvery(ctx, store, reload, func(i int) []byte { return scaleRegistry(s.Tenants, i) }, heap, reloaded)
	if audit != nil {
		go audit(ctx, store)
	}
	return <-served
}

// scaleRegistry is the registry of the i-th load: the scale registry, and
// every other time the one with an extra tenant. It is written when
// loaded: tenantguard keeps no registry's text, and the served process
// holding two (a megabyte each at 1,000 tenants) would have its garbage
// collector mark what tenantguard's does not.
func scaleRegistry(tenants, i int) []byte {
	if i%2 == 1 {
		return scale.RegistryPlusOne(tenants)
	}
	return scale.Registry(tenants)
}

// reloadEvery loads registry(i) for i = 1, 2, ..., one every period (never
// when period is 0), until ctx ends, and answers heap requests in between.
// A reload's time is the store's, from the text to the swap.
func reloadEvery(ctx context.Context, store *state.Store, period time.Duration, registry func(int) []byte, heap <-chan heapRequest, reloaded func(Reloads)) {
	var ticks <-chan time.Time
	if period > 0 {
		tick := time.NewTicker(period)
		defer tick.Stop()
		ticks = tick.C
	}
	var r Reloads
	for i := 1; ; i++ {
		select {
		case <-ctx.Done():
			return
		case req := <-heap:
			req.answer <- liveHeap(req.profile)
			i--
			continue
		case <-ticks:
		}
		data := registry(i)
		t := time.Now()
		if err := store.LoadRegistry(ctx, "scale", data); err != nil {
			r.Failed++
		} else {
			r.Loaded++
		}
		r.Slowest = max(r.Slowest, time.Since(t))
		reloaded(r)
	}
}

// ServeNull runs the null webhook on ln over TLS, the way tenantguard's
// server listens, until ctx ends.
func ServeNull(ctx context.Context, ln net.Listener, certFile, keyFile string, started func(Started)) error {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: NullWebhook(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	started(Started{Addr: ln.Addr().String()})
	err = srv.Serve(tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("serving: %w", err)
}
