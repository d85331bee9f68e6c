package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tenantguard/tenantguard/internal/metrics"
	"github.com/tenantguard/tenantguard/internal/quota"
	"github.com/tenantguard/tenantguard/internal/state"
	"github.com/tenantguard/tenantguard/webhook/admission"
)

// Options configure a Server.
type Options struct {
	// Addr is the HTTPS listen address, ":9443" by default.
	Addr string
	// CertFile and KeyFile are the serving certificate (PEM), reloaded when
	// a file event reports a change and at least every CertPollInterval.
	CertFile, KeyFile string
	// CertPollInterval is how often the certificate files are read besides
	// their file events, and so how soon a pair that does not load shows in
	// the reload-failure metric; 1 s by default.
	CertPollInterval time.Duration
	// GetCertificate serves the certificate instead of CertFile and KeyFile
	// (the built-in rotation).
	GetCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// ShutdownDelay is how long /readyz fails before the listener closes, so
	// that load balancers stop sending requests first.
	ShutdownDelay time.Duration
	// ShutdownTimeout is how long in-flight requests get to finish; 20 s by default.
	ShutdownTimeout time.Duration
	// Synced reports whether the cluster view is complete; nil means it is.
	Synced func() error
	// NamespaceWait is how long a request in a namespace the view has not
	// seen yet waits for it before it is refused; 2 s by default.
	NamespaceWait time.Duration
	// Ledger holds the places of creates counted against tenant quotas
	// while they are decided; nil is quota.LocalLedger on the store's view.
	Ledger quota.Ledger
	// MetricsAddr, when set, serves /metrics over plain HTTP on its own
	// listener instead of on Addr, so that a NetworkPolicy can open it to
	// the scraper alone.
	MetricsAddr string
	// ClientCAFile, when set, is a PEM bundle of CAs: /validate and /mutate
	// then answer only callers presenting a client certificate one of them
	// signed (the API server, given one through its AdmissionConfiguration),
	// and refuse others with 401, counted as decision="unauthenticated".
	// Use a CA dedicated to webhook callers: every certificate it signs is
	// let in. Read at start. Probes and /metrics stay open.
	ClientCAFile string
}

// Server is the admission server.
type Server struct {
	opts    Options
	store   *state.Store
	metrics *metrics.Metrics
	log     *slog.Logger
	certs   *fileCerts
	// clientCAs verify the callers of the admission paths; nil: any caller
	clientCAs *x509.CertPool
	stopping  atomic.Bool
	mux       *http.ServeMux
}

// New checks the options and loads the certificate.
func New(store *state.Store, m *metrics.Metrics, log *slog.Logger, opts Options) (*Server, error) {
	if opts.Addr == "" {
		opts.Addr = ":9443"
	}
	if opts.CertPollInterval == 0 {
		opts.CertPollInterval = time.Second
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 20 * time.Second
	}
	if opts.NamespaceWait == 0 {
		opts.NamespaceWait = 2 * time.Second
	}
	if opts.Ledger == nil {
		opts.Ledger = quota.LocalLedger{View: store.View()}
	}
	s := &Server{opts: opts, store: store, metrics: m, log: log}
	if opts.GetCertificate != nil && (opts.CertFile != "" || opts.KeyFile != "") {
		return nil, errors.New("a certificate source and certificate files are exclusive")
	}
	if opts.CertFile != "" || opts.KeyFile != "" {
		certs, err := newFileCerts(opts.CertFile, opts.KeyFile, log, m)
		if err != nil {
			return nil, err
		}
		s.certs = certs
	}
	if opts.ClientCAFile != "" {
		pool, err := loadClientCAs(opts.ClientCAFile)
		if err != nil {
			return nil, err
		}
		s.clientCAs = pool
	}
	s.mux = http.NewServeMux()
	for _, webhook := range []string{Validate, Mutate} {
		s.mux.Handle("/"+webhook, s.verifiedCallers(&handler{webhook: webhook, store: store, ledger: opts.Ledger, namespaceWait: opts.NamespaceWait, metrics: m, log: log, maxBody: opts.MaxBodyBytes}))
	}
	s.mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { admission.WriteError(w, http.StatusOK, "ok") })
	s.mux.HandleFunc("/readyz", s.readyz)
	if opts.MetricsAddr == "" {
		s.mux.Handle("/metrics", m.Handler())
	}
	return s, nil
}

// Handler is the HTTP handler of every path, without TLS.
func (s *Server) Handler() http.Handler { return s.mux }

// Ready is nil once the registry and the policy are in force and the cluster
// view is synced, and while the server is not shutting down.
func (s *Server) Ready() error {
	switch {
	case s.stopping.Load():
		return errors.New("shutting down")
	case s.store.Engine() == nil:
		return errors.New("no tenant registry loaded yet")
	case s.opts.Synced != nil:
		return s.opts.Synced()
	}
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, _ *http.Request) {
	if err := s.Ready(); err != nil {
		admission.WriteError(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
		return
	}
	admission.WriteError(w, http.StatusOK, "ok")
}

// tlsConfig is the serving TLS configuration: TLS 1.2 at least, the
// certificate from the file reloader or Options.GetCertificate.
func (s *Server) tlsConfig() (*tls.Config, error) {
	get := s.opts.GetCertificate
	if s.certs != nil {
		get = s.certs.getCertificate
	}
	if get == nil {
		return nil, errors.New("no TLS certificate configured")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: get}
	if s.clientCAs != nil {
		// verified when given: probes come without one
		cfg.ClientAuth, cfg.ClientCAs = tls.VerifyClientCertIfGiven, s.clientCAs
	}
	return cfg, nil
}

// loadClientCAs reads the PEM bundle of --client-ca-file.
func loadClientCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("reading the client CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("the client CA file %s holds no PEM certificate", file)
	}
	return pool, nil
}

// verifiedCallers refuses, when client CAs are set, callers that did not
// present a certificate they signed (the TLS handshake has verified any
// certificate presented).
func (s *Server) verifiedCallers(next http.Handler) http.Handler {
	if s.clientCAs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
			// counted, not logged: anyone reaching the port could flood the log
			if s.metrics != nil {
				s.metrics.Unauthenticated(strings.TrimPrefix(r.URL.Path, "/"))
			}
			admission.WriteError(w, http.StatusUnauthorized, "a client certificate signed by the --client-ca-file CA is required")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Run serves HTTPS on Options.Addr (and /metrics on Options.MetricsAddr)
// until ctx ends, then fails /readyz for ShutdownDelay, stops accepting
// connections and waits up to ShutdownTimeout for in-flight requests.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.opts.Addr)
	if err != nil {
		return err
	}
	if s.opts.MetricsAddr != "" {
		metricsLn, err := net.Listen("tcp", s.opts.MetricsAddr)
		if err != nil {
			_ = ln.Close()
			return fmt.Errorf("metrics listener: %w", err)
		}
		stop := s.serveMetrics(metricsLn)
		defer stop()
	}
	return s.Serve(ctx, ln)
}

// Serve is Run on an existing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	tlsConfig, err := s.tlsConfig()
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           s.mux,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       15 * time.Second,
		WriteTimeout:      35 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWatch()
	if s.certs != nil {
		go s.certs.watch(watchCtx, s.opts.CertPollInterval)
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(tls.NewListener(ln, tlsConfig)) }()
	s.log.Info("serving", "addr", ln.Addr().String())
	select {
	case err := <-served:
		return fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
	}
	s.stopping.Store(true)
	s.log.Info("shutting down", "delay", s.opts.ShutdownDelay.String(), "timeout", s.opts.ShutdownTimeout.String())
	time.Sleep(s.opts.ShutdownDelay)
	drainCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(drainCtx); err != nil {
		return fmt.Errorf("draining in-flight requests: %w", err)
	}
	s.log.Info("stopped")
	return nil
}
