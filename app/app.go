// Package app wires baedal together: it opens the backends, builds the HTTP
// server with every feature's routes, starts the background workers (indexer,
// feed fan-out, demo traffic), and stops all of it on cancellation. It is the
// only package that knows every other one; the command package only parses
// flags and calls Run.
//
// Invariant: Run returns only after the server has drained and every worker
// it started has stopped; a worker that fails stops the whole process.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/console"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/linkstore"
	"github.com/baedal/baedal/reindex"
	"github.com/baedal/baedal/replica"
	"github.com/baedal/baedal/replica/osread"
	"github.com/baedal/baedal/replica/redisread"
	"github.com/baedal/baedal/searcher"
	"github.com/baedal/baedal/simulator"
)

// Config is the configuration of `baedal serve`.
type Config struct {
	API      api.Config
	Backends backend.Config
	// Indexer includes the index layout (names, shards) and the event log.
	Indexer indexer.Config
	Search  searcher.Config
	// Fallback lets a search that named no layout be answered by another
	// layout when its own is unavailable.
	Fallback searcher.FallbackConfig
	Feed     feed.Config
	Links    linkstore.Config
	// Reindex is the live reindex orchestrator (admin endpoints).
	Reindex reindex.Config
	// RedisReads picks the Redis read replica of timeline and link reads
	// when replicas are configured (C3 by default).
	RedisReads redisread.Config
	// OpenSearchReads picks the OpenSearch endpoint of each request when
	// several URLs are configured (C3 by default).
	OpenSearchReads osread.Config
	// Demo is the generated catalog and live traffic (Shops 0 disables
	// it), and the follow feed's seeded graph and posts (FeedUsers 0
	// disables them).
	Demo simulator.Config
	// Workers runs the indexer and feed fan-out workers in this process.
	Workers bool
	// HealthTimeout bounds each backend probe of /healthz.
	HealthTimeout time.Duration
	// HotPluginCheckEvery is how often a server that serves the hot layout
	// checks that every OpenSearch node still runs the baedal-hot plugin at
	// the version it speaks (a rolling upgrade of the plugin changes that).
	HotPluginCheckEvery time.Duration
	// Progress receives progress bars of long start-up work (demo load).
	Progress io.Writer
	// onRoutes, if set (by tests), receives every registered route pattern
	// before the server starts; onQueryParams the query parameters each
	// route takes (api.Server.QueryParams).
	onRoutes      func(routes []string)
	onQueryParams func(params map[string][]string)
}

// Defaults returns the default configuration; backend addresses are empty
// until filled from flags, the environment or the local stack. No demo:
// neither the catalog nor the feed.
func Defaults() Config {
	demo := simulator.Defaults()
	demo.Shops, demo.FeedUsers = 0, 0
	return Config{
		API: api.Defaults(), Backends: backend.Defaults(), Indexer: indexer.Defaults(),
		Search: searcher.Defaults(), Fallback: searcher.DefaultFallback(), Feed: feed.Defaults(), Links: linkstore.DefaultConfig(), Reindex: reindex.Defaults(), Demo: demo,
		Workers: true, HealthTimeout: 2 * time.Second, HotPluginCheckEvery: 5 * time.Second,
	}
}

// Flags binds every component's flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	c.API.Flags(fs)
	c.Backends.Flags(fs)
	c.Indexer.Flags(fs)
	c.Indexer.Layout.Flags(fs)
	c.Indexer.Log.Flags(fs)
	c.Search.Flags(fs)
	c.Fallback.Flags(fs)
	c.Feed.Flags(fs)
	c.Links.Flags(fs)
	c.Reindex.Flags(fs)
	c.RedisReads.Flags(fs, "redis-replica-")
	c.OpenSearchReads.Flags(fs, "opensearch-endpoint-")
	c.Demo.Flags(fs)
	c.ServerFlags(fs)
}

// ServerFlags binds the flags of the server itself (not of a component).
func (c *Config) ServerFlags(fs *flag.FlagSet) {
	fs.BoolVar(&c.Workers, "workers-enabled", c.Workers, "run the indexer and feed fan-out workers in this process")
	fs.DurationVar(&c.HealthTimeout, "health-timeout", c.HealthTimeout, "timeout of each backend probe in /healthz")
	fs.DurationVar(&c.HotPluginCheckEvery, "hot-plugin-check-every", c.HotPluginCheckEvery, "how often to check that every OpenSearch node runs the baedal-hot plugin at the version baedal speaks; the hot layout is unavailable while one does not (a rolling upgrade)")
}

// EnsureDefaults fills the zero fields of the components whose zero value
// means their default (the feed's), so that Validate sees the values Run
// uses: `--feed-celebrity-threshold 0` is the default threshold, not an
// error. The other components take their defaults from Defaults only.
func (c *Config) EnsureDefaults() {
	c.Feed.EnsureDefaults()
}

// Validate checks every component and joins the errors. Call EnsureDefaults
// first.
func (c *Config) Validate() error {
	errs := []error{c.API.Validate(), c.Backends.Validate(), c.Indexer.Validate(),
		c.Search.Validate(), c.Fallback.Validate(), c.Feed.Validate(), c.Links.Validate(), c.RedisReads.Validate(), c.OpenSearchReads.Validate(), c.Demo.Validate()}
	if c.HealthTimeout <= 0 {
		errs = append(errs, errors.New("health-timeout: must be > 0"))
	}
	if c.HotPluginCheckEvery <= 0 {
		errs = append(errs, fmt.Errorf("hot-plugin-check-every: got %s, must be > 0", c.HotPluginCheckEvery))
	}
	// The server, not a client, decides when a search has taken too long:
	// then it answers 503 with Retry-After, not a broken connection.
	if t := c.Search.Timeout; t >= c.Backends.OpenSearch.RequestTimeout || t >= c.API.WriteTimeout {
		errs = append(errs, fmt.Errorf("search-timeout: got %s, must be shorter than opensearch-timeout (%s) and the API's write timeout (%s)",
			t, c.Backends.OpenSearch.RequestTimeout, c.API.WriteTimeout))
	}
	return errors.Join(errs...)
}

// Run serves the API until ctx is cancelled. ready, if not nil, is called
// with the bound address once the server accepts connections.
func Run(ctx context.Context, cfg Config, log *slog.Logger, ready func(addr string)) error {
	cfg.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	clients, err := backend.Open(ctx, cfg.Backends)
	if err != nil {
		return err
	}
	defer clients.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	srv := api.New(cfg.API, log, reg)

	// S3: with several OpenSearch URLs, every request goes to the endpoint
	// C3 ranks best.
	osClient := clients.OpenSearch
	endpointsView := func() any {
		return notConfigured("endpoints", "one OpenSearch URL is configured: every request goes to it; give several --opensearch-urls to rank endpoints with C3")
	}
	if urls := cfg.Backends.OpenSearch.URLs; len(urls) > 1 {
		rt, err := backend.NewOpenSearchTransport(cfg.Backends.OpenSearch)
		if err != nil {
			return err
		}
		endpoints, err := osread.NewTransport(urls, rt, cfg.OpenSearchReads, log, reg)
		if err != nil {
			return err
		}
		defer endpoints.Close()
		// The transport rewrites each request's host, so the client knows
		// one URL and keeps no node pool of its own.
		osCfg := cfg.Backends.OpenSearch
		osCfg.URLs = urls[:1]
		if osClient, err = backend.OpenOpenSearchVia(osCfg, endpoints); err != nil {
			return err
		}
		endpointsView = func() any { return endpointStatus(endpoints) }
	}
	srv.HandleAdmin("GET /v1/admin/opensearch-endpoints", adminView(endpointsView))

	// S1: events in, search out.
	osc := osapi.New(osClient)
	evlog, err := eventlog.New(cfg.Indexer.Log, clients.Redis, log, reg)
	if err != nil {
		return err
	}
	// Event logs written before the keys had hash tags move to them once.
	if _, err := evlog.MigrateLegacyKeys(ctx); err != nil {
		return err
	}
	eventlog.RegisterRoutes(srv, evlog)
	srch := searcher.New(osc, cfg.Indexer.Layout, cfg.Search, reg)
	srch.SetUnavailable(layout.Hot, "OpenSearch has not been checked for the "+layout.HotPlugin+" plugin yet")
	srch.SetServed(cfg.Indexer.Layouts)
	lag := func(ctx context.Context, k layout.Kind) (time.Duration, error) {
		return indexerLag(ctx, evlog, cfg.Indexer.Log.Partitions, k)
	}
	searcher.RegisterRoutes(srv, srch, searcher.NewFallback(cfg.Fallback, cfg.Indexer.Layouts, lag, reg))
	srv.Handle("GET /readyz", readyHandler(cfg.Indexer.Layout, cfg.Indexer.Layouts, osc, srch, cfg.HealthTimeout))
	srv.Handle("GET /livez", func(w http.ResponseWriter, r *http.Request) error {
		// Alive is answering: no backend is asked, so a slow one cannot
		// get the process restarted.
		api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	})
	srv.Handle("GET /healthz", healthHandler(clients, srch, cfg.HealthTimeout))
	// The contract of every route registered here (api/openapi.json); the
	// tests fail when a route is missing from it.
	srv.Handle("GET /openapi.json", api.ServeOpenAPI)

	// S2: live reindex, behind the admin token.
	reindexCfg := cfg.Reindex
	reindexCfg.Layout, reindexCfg.Log = cfg.Indexer.Layout, cfg.Indexer.Log
	reindexer, err := reindex.New(reindexCfg, osc, clients.Redis, log, reg)
	if err != nil {
		return err
	}
	if _, err := reindexer.MigrateLegacyKeys(ctx); err != nil {
		return err
	}
	reindex.RegisterRoutes(ctx, srv, reindexer)
	console.RegisterRoutes(srv, console.Deps{Search: true, Feed: true, Links: true, Replicas: true, ReindexAliases: reindexer.Aliases(),
		Gatherer: reg, DefaultLayout: srch.DefaultKind})

	// S3: reads that tolerate replica lag go to the replica C3 ranks best.
	var linkReader linkstore.Reader
	var feedReads feed.ReadFunc
	replicasView := func() any {
		return notConfigured("replicas", "no Redis read replicas are configured (--redis-replica-addrs): every read goes to the primary")
	}
	if cc, ok := clients.Redis.(*redis.ClusterClient); ok && cfg.Backends.Redis.ClusterReadFromReplicas {
		reads, err := redisread.OpenCluster(ctx, cc, cfg.Backends.Redis, cfg.RedisReads, log)
		if err != nil {
			return err
		}
		defer reads.Close()
		rdb := reads.Client()
		feedReads = func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
			return read(ctx, rdb)
		}
		linkReader = linkstore.DoReader(feedReads)
		replicasView = func() any { return reads.Status() }
	} else if len(clients.RedisReplicas) > 0 {
		// Replica addresses are refused in cluster mode (backend.RedisConfig
		// Validate), so the primary is a single-server client here.
		primary, ok := clients.Redis.(*redis.Client)
		if !ok {
			return fmt.Errorf("app: redis replicas %d configured beside a %T primary; want a single-server primary", len(clients.RedisReplicas), clients.Redis)
		}
		reads, err := redisread.New(primary, clients.RedisReplicas, cfg.RedisReads, log, reg)
		if err != nil {
			return err
		}
		defer reads.Close()
		feedReads = func(ctx context.Context, read func(context.Context, redis.Cmdable) error) error {
			return reads.Do(ctx, func(ctx context.Context, c *redis.Client) error { return read(ctx, c) })
		}
		linkReader = linkstore.DoReader(feedReads)
		replicasView = func() any { return reads.Status() }
	}
	srv.HandleAdmin("GET /v1/admin/replicas", adminView(replicasView))

	// S5: the follow feed.
	if _, err := feed.Migrate(ctx, clients.Postgres); err != nil {
		return err
	}
	feedSvc, err := feed.NewService(cfg.Feed, clients.Postgres, clients.Redis, log, reg)
	if err != nil {
		return err
	}
	feedSvc.UseReadClient(feedReads)
	feed.RegisterRoutes(srv, feedSvc)

	// S4: click records and deferred deep links.
	links, closeOldLinks, err := linkstore.Open(ctx, cfg.Links, cfg.Backends.Redis, clients.Redis, linkReader, log, reg)
	if err != nil {
		return err
	}
	defer closeOldLinks()
	defer links.Close()
	linkstore.RegisterRoutes(srv, links)
	if cfg.onRoutes != nil {
		cfg.onRoutes(srv.Routes())
	}
	if cfg.onQueryParams != nil {
		cfg.onQueryParams(srv.QueryParams())
	}

	g, gctx := errgroup.WithContext(ctx)
	indexed := make(chan []layout.Kind, 1) // the layouts the indexer keeps up to date
	g.Go(func() error {
		// The indexer starts only once the aliases exist: a bulk write to a
		// missing alias would auto-create a concrete index in its place.
		kinds, ok := ensureIndices(gctx, cfg.Indexer.Layout, osc, srch, log)
		if ok && slices.Contains(kinds, layout.Hot) {
			g.Go(func() error {
				watchHotPlugin(gctx, osc, srch, cfg.HotPluginCheckEvery, log)
				return nil
			})
		}
		if !ok || !cfg.Workers {
			return nil
		}
		icfg := cfg.Indexer
		icfg.Layouts = slices.DeleteFunc(slices.Clone(icfg.Layouts), func(k layout.Kind) bool { return !slices.Contains(kinds, k) })
		indexed <- icfg.Layouts
		if len(icfg.Layouts) == 0 {
			log.Warn("no layout to index on this cluster", "asked", cfg.Indexer.Layouts)
			return nil
		}
		return indexer.Run(gctx, icfg, clients, log, reg)
	})
	if cfg.Workers {
		g.Go(func() error { return feedSvc.RunWorkers(gctx) })
	}
	if cfg.Demo.Shops > 0 {
		sim := simulator.New(cfg.Demo, evlog, log, reg)
		g.Go(func() error { return sim.Run(gctx, cfg.Progress) })
		g.Go(func() error {
			reportDemoIndexing(gctx, evlog, sim.Loaded(), indexed, longestRefresh(cfg.Indexer.Layout), cfg.Progress, log)
			return nil
		})
	}
	if cfg.Demo.FeedUsers > 0 {
		poster := simulator.NewFeedPoster(cfg.Demo, feedSvc, log, reg)
		g.Go(func() error { return poster.Run(gctx, cfg.Progress) })
	}
	g.Go(func() error {
		log.Info("serving", "addr", cfg.API.Addr, "opensearch", redacted(cfg.Backends.OpenSearch.URLs), "redis", backend.RedactRedisAddr(cfg.Backends.Redis.Addr))
		return srv.Run(gctx, ready)
	})
	return g.Wait()
}

// healthHandler reports each backend, and each search layout ("ok" or why it
// cannot serve); the status is 503 when a backend is down. A layout the
// cluster cannot run (the hot layout without its plugin) does not make the
// server unhealthy: the others serve.
func healthHandler(clients *backend.Clients, srch *searcher.Searcher, timeout time.Duration) api.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		checks := clients.Probe(r.Context(), timeout)
		status, code := "ok", http.StatusOK
		for _, c := range checks {
			if !c.Healthy {
				status, code = "degraded", http.StatusServiceUnavailable
			}
		}
		layouts := map[string]string{}
		for _, k := range layout.Kinds() {
			layouts[string(k)] = "ok"
			if why := srch.Unavailable(k); why != "" {
				layouts[string(k)] = "unavailable: " + why
			}
		}
		api.WriteJSON(w, code, map[string]any{"status": status, "backends": checks, "layouts": layouts})
		return nil
	}
}

// readyHandler reports, per layout, the health and replica count of every
// index: 200 when every layout answers complete results (all primaries
// active: green or yellow), else 503 with Retry-After. A layout that cannot
// run on this cluster (the hot layout without its plugin) is listed with
// the reason and does not count.
func readyHandler(idx layout.Config, kinds []layout.Kind, osc *osapi.Client, srch *searcher.Searcher, timeout time.Duration) api.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ctx, cancel := context.WithTimeout(r.Context(), timeout)
		defer cancel()
		status, code := "ready", http.StatusOK
		layouts := make([]layout.Health, len(kinds))
		for i, k := range kinds {
			if why := srch.Unavailable(k); why != "" {
				layouts[i] = layout.Health{Layout: k, Health: "disabled", Error: why}
				continue
			}
			layouts[i] = idx.Health(ctx, osc, k)
			if !layouts[i].Searchable() {
				status, code = "unavailable", http.StatusServiceUnavailable
			}
		}
		if code != http.StatusOK {
			w.Header().Set("Retry-After", strconv.Itoa(int(api.DefaultRetryAfter/time.Second)))
		}
		api.WriteJSON(w, code, map[string]any{"status": status, "layouts": layouts})
		return nil
	}
}

// LayoutsHealth reads the index health and replica count of every layout of
// cfg (what /readyz serves) from the OpenSearch at urls, for `baedal status`.
func LayoutsHealth(ctx context.Context, urls []string, cfg indexer.Config) ([]layout.Health, error) {
	osCfg := backend.Defaults().OpenSearch
	osCfg.URLs, osCfg.RequestTimeout = urls, 5*time.Second
	client, err := backend.OpenOpenSearch(osCfg)
	if err != nil {
		return nil, err
	}
	osc := osapi.New(client)
	out := make([]layout.Health, len(cfg.Layouts))
	for i, k := range cfg.Layouts {
		out[i] = cfg.Layout.Health(ctx, osc, k)
	}
	return out, nil
}

// indexerLag is the indexer lag of layout k: the age of the oldest event no
// indexer of the layout has taken yet, over every partition.
func indexerLag(ctx context.Context, evlog *eventlog.Log, partitions int, k layout.Kind) (time.Duration, error) {
	var worst time.Duration
	for p := range partitions {
		b, err := evlog.Consumer(indexer.GroupName(k), p).Backlog(ctx)
		if err != nil {
			return 0, err
		}
		worst = max(worst, b.OldestUndelivered)
	}
	return worst, nil
}

// ensureIndices creates the indices of every layout the cluster can run,
// retrying while OpenSearch is unreachable, so the server starts (and
// /healthz reports) without it. The hot layout runs only when every node has
// the baedal-hot plugin; otherwise srch answers 503 for it, saying why, and
// the other layouts are unaffected. It returns the layouts it set up, or
// false if ctx ended first.
func ensureIndices(ctx context.Context, idx layout.Config, osc *osapi.Client, srch *searcher.Searcher, log *slog.Logger) ([]layout.Kind, bool) {
	for {
		kinds, unavailable, err := layout.RunnableKinds(ctx, osc)
		for _, k := range kinds {
			err = errors.Join(err, idx.EnsureIndices(ctx, osc, k))
		}
		if err == nil {
			for _, k := range layout.Kinds() {
				if why := unavailable[k]; why != "" {
					log.Warn("a layout is unavailable", "layout", k, "reason", why)
				}
				srch.SetUnavailable(k, unavailable[k])
			}
			return kinds, true
		}
		log.Warn("cannot create the search indices yet; retrying in 5s", "err", err)
		select {
		case <-ctx.Done():
			return nil, false
		case <-time.After(5 * time.Second):
		}
	}
}

// watchHotPlugin checks, every period, that every OpenSearch node runs the
// baedal-hot plugin at layout.HotPluginVersion, and keeps the hot layout
// unavailable while one does not, naming each such node and what it runs
// (a rolling upgrade of the plugin under way, a node started without it):
// searches that name hot answer 503 with Retry-After, those that name no
// layout run on split, and the indexer keeps writing the head documents.
// When every node runs it again, the hot layout serves again. A check that
// fails (OpenSearch unreachable) changes nothing. It runs only on a server
// whose indexer set up the hot layout at start (ensureIndices): one that
// started without it indexes no hot layout until it is restarted.
func watchHotPlugin(ctx context.Context, osc *osapi.Client, srch *searcher.Searcher, every time.Duration, log *slog.Logger) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, unavailable, err := layout.RunnableKinds(ctx, osc)
		if err != nil {
			continue
		}
		why := unavailable[layout.Hot]
		if srch.Unavailable(layout.Hot) == why {
			continue
		}
		if why != "" {
			log.Warn("a layout is unavailable", "layout", layout.Hot, "reason", why)
		} else {
			log.Info("a layout is available again", "layout", layout.Hot)
		}
		srch.SetUnavailable(layout.Hot, why)
	}
}

// adminView serves a read-only admin view; it takes no parameters.
func adminView(view func() any) api.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		api.WriteJSON(w, http.StatusOK, view())
		return nil
	}
}

// notConfigured is an admin view of a feature that is off: an empty list
// under key, and a note saying why and how to turn it on.
func notConfigured(key, note string) map[string]any {
	return map[string]any{"policy": "none", key: []any{}, "note": note}
}

// redacted masks passwords in URLs before they are logged.
func redacted(urls []string) []string {
	out := make([]string, len(urls))
	for i, raw := range urls {
		if u, err := url.Parse(raw); err == nil {
			out[i] = u.Redacted()
		} else {
			out[i] = "(unparsable URL)"
		}
	}
	return out
}

// endpointStatus is the admin view of the OpenSearch endpoint selection:
// each endpoint (host:port, no credentials) and its C3 statistics.
func endpointStatus(t *osread.Transport) any {
	type endpoint struct {
		Host string `json:"host"`
		replica.ReplicaStats
	}
	hosts := t.Endpoints()
	var out []endpoint
	for _, s := range t.Policy().Snapshot(nil) {
		out = append(out, endpoint{Host: hosts[s.Replica], ReplicaStats: s})
	}
	return map[string]any{"policy": t.Policy().Name(), "endpoints": out}
}
