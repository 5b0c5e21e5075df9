// Package app wires baedal together: it opens the backends, builds the HTTP
// server with every feature's routes, starts the background workers, and
// stops all of it on cancellation. It is the only package that knows every
// other one; the command package only parses flags and calls Run.
//
// Invariant: Run returns only after the server has drained and every worker
// it started has stopped.
package app

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/searcher"
)

// Config is the configuration of `baedal serve`.
type Config struct {
	API      api.Config
	Backends backend.Config
	Indices  layout.Config
	Search   searcher.Config
	// HealthTimeout bounds each backend probe of /healthz.
	HealthTimeout time.Duration
}

// Defaults returns the default configuration; backend addresses are empty
// until filled from flags, the environment or the local stack.
func Defaults() Config {
	return Config{API: api.Defaults(), Backends: backend.Defaults(), Indices: layout.Defaults(), Search: searcher.Defaults(), HealthTimeout: 2 * time.Second}
}

// Flags binds every component's flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	c.API.Flags(fs)
	c.Backends.Flags(fs)
	c.Indices.Flags(fs)
	c.Search.Flags(fs)
	fs.DurationVar(&c.HealthTimeout, "health-timeout", c.HealthTimeout, "timeout of each backend probe in /healthz")
}

// Validate checks every component and joins the errors.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.API.Validate(), c.Backends.Validate(), c.Indices.Validate(), c.Search.Validate())
	if c.HealthTimeout <= 0 {
		errs = append(errs, errors.New("health-timeout: must be > 0"))
	}
	return errors.Join(errs...)
}

// Run serves the API until ctx is cancelled. ready, if not nil, is called
// with the bound address once the server accepts connections.
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(addr string)) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clients, err := backend.Open(ctx, cfg.Backends)
	if err != nil {
		return err
	}
	defer clients.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := api.New(cfg.API, log, reg)
	srv.Handle("GET /healthz", healthHandler(clients, cfg.HealthTimeout))

	osc := osapi.New(clients.OpenSearch)
	go ensureIndices(ctx, cfg.Indices, osc, log)
	searcher.RegisterRoutes(srv, searcher.New(osc, cfg.Indices, cfg.Search, reg))

	log.Info("serving", "addr", cfg.API.Addr, "opensearch", cfg.Backends.OpenSearch.URLs, "redis", cfg.Backends.Redis.Addr)
	return srv.Run(ctx, ready)
}

// healthHandler reports each backend; the status is 503 when any is down.
func healthHandler(clients *backend.Clients, timeout time.Duration) api.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		checks := clients.Probe(r.Context(), timeout)
		status, code := "ok", http.StatusOK
		for _, c := range checks {
			if !c.Healthy {
				status, code = "degraded", http.StatusServiceUnavailable
			}
		}
		api.WriteJSON(w, code, map[string]any{"status": status, "backends": checks})
		return nil
	}
}

// ensureIndices creates the layouts' indices, retrying while OpenSearch is
// unreachable, so the server starts (and /healthz reports) without it.
func ensureIndices(ctx context.Context, idx layout.Config, osc *osapi.Client, log *slog.Logger) {
	for {
		err := errors.Join(idx.EnsureIndices(ctx, osc, layout.Nested), idx.EnsureIndices(ctx, osc, layout.Split))
		if err == nil {
			return
		}
		log.Warn("cannot create the search indices yet; retrying in 5s", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}
