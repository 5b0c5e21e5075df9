package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/flaghelp"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/simulator"
)

func runUp(ctx context.Context, args []string) error {
	c := newCommand("up", "baedal up [flags]",
		"Install what is missing, start the local stack (OpenSearch, Redis, PostgreSQL on 127.0.0.1),\n"+
			"wait until each server is healthy, then serve the API and the demo until Ctrl-C or\n"+
			"`baedal down`, which stop everything. With --stack-only, start the stack and return.",
		"baedal up --stack-only --opensearch-nodes 3 --redis-replicas 2 --state-dir /tmp/baedal-3 --port-base 0")
	fs := c.FS
	stack := localstack.Defaults()
	c.Group("stack", stack.Flags)
	var stackOnly *bool
	c.Group("stack", func(fs *flag.FlagSet) {
		stackOnly = fs.Bool("stack-only", false, "start the stack, print where it listens and return (no server)")
	})
	serve := app.Defaults()
	c.Group("API", serve.API.Flags)
	serve.Demo = simulator.Defaults()
	c.Group("demo", serve.Demo.Flags)
	var logs logConfig
	c.Group("log", logs.flags)
	if err := parse(c, args); err != nil {
		return err
	}
	apiAddrGiven := isFlagSet(fs, "addr")
	log, err := logs.logger()
	// Every flag is checked before anything is installed or started.
	if err := errors.Join(err, stack.Validate(), serve.API.Validate(), serve.Demo.Validate()); err != nil || parseOnly(ctx) {
		return err
	}
	start := time.Now()
	st, err := localstack.Up(ctx, stack, os.Stdout)
	if err != nil {
		return err
	}
	fmt.Printf("stack is up in %s (state: %s)\n", time.Since(start).Round(100*time.Millisecond), st.StateDir)
	printStack(st)
	if *stackOnly {
		fmt.Printf("stop it with: baedal down --state-dir %s\n", st.StateDir)
		return nil
	}
	// Foreground: serve until Ctrl-C or `baedal down`, then stop the stack.
	if err := st.AddSelf(); err != nil {
		return err
	}
	fillFromStack(&serve, st)
	serve.Progress = os.Stdout
	if !apiAddrGiven {
		serve.API.Addr = st.APIAddr
	}
	serveErr := app.Run(ctx, serve, log, func(addr string) {
		fmt.Printf("baedal is serving on http://%s/  (console: /console/, search: /v1/search?q=치킨, health: /healthz, metrics: /metrics)\n", addr)
		if serve.Demo.Shops > 0 {
			fmt.Printf("demo: %d generated shops loading, then %.0f live change events/s; Ctrl-C or `baedal down` stops everything\n", serve.Demo.Shops, serve.Demo.Rate)
		}
		if serve.Demo.FeedUsers > 0 {
			fmt.Printf("feed demo: the write-up's experiment with %d users (seeded only into a database without feed users), then %g posts/min; console: http://%s/console/#feed\n", serve.Demo.FeedUsers, serve.Demo.FeedPostsPerMinute, addr)
		}
	})
	fmt.Println("stopping the stack")
	downErr := localstack.Down(st.StateDir, os.Stdout)
	if errors.Is(downErr, localstack.ErrNotRunning) {
		downErr = nil
	}
	return errors.Join(serveErr, downErr)
}

func runDown(ctx context.Context, args []string) error {
	c := newCommand("down", "baedal down [--state-dir DIR]",
		"Stop exactly the processes the stack in --state-dir started (and a foreground `baedal up`).",
		"baedal down --state-dir .baedal")
	stack := localstack.Defaults()
	c.Group("stack", func(fs *flag.FlagSet) {
		fs.StringVar(&stack.StateDir, "state-dir", stack.StateDir, "the stack's state directory (env BAEDAL_STATE_DIR)")
	})
	if err := parse(c, args); err != nil || parseOnly(ctx) {
		return err
	}
	err := localstack.Down(stack.StateDir, os.Stdout)
	if errors.Is(err, localstack.ErrNotRunning) {
		fmt.Println(err)
		return nil
	}
	return err
}

func runStatus(ctx context.Context, args []string) error {
	c := newCommand("status", "baedal status [--state-dir DIR] [--json]",
		"Show where the local stack listens, each process's PID, health and log file, and each\nlayout's index health and replica count. Exits 1 when a component is unhealthy.",
		"baedal status --json")
	stack := localstack.Defaults()
	c.Group("stack", func(fs *flag.FlagSet) {
		fs.StringVar(&stack.StateDir, "state-dir", stack.StateDir, "the stack's state directory (env BAEDAL_STATE_DIR)")
	})
	idx := indexer.Defaults()
	c.Group("layouts", func(fs *flag.FlagSet) {
		fs.StringVar(&idx.Layout.Prefix, "index-prefix", idx.Layout.Prefix, "prefix of the layouts' index and alias names")
	})
	asJSON := c.FS.Bool("json", false, "print JSON: {components, layouts}")
	if err := parse(c, args); err != nil || parseOnly(ctx) {
		return err
	}
	st, err := localstack.Load(stack.StateDir)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	health := st.Health(ctx)
	layouts, err := app.LayoutsHealth(ctx, st.OpenSearchURLs, idx)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(os.Stdout).Encode(map[string]any{"components": health, "layouts": layouts})
	}
	printStack(st)
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tPID\tHEALTH\tLOG")
	unhealthy := 0
	for _, h := range health {
		state := "healthy"
		if !h.Healthy {
			state = "DOWN: " + h.Error
			unhealthy++
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", h.Component, h.PID, state, h.Log)
	}
	tw.Flush()
	fmt.Println()
	tw = tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYOUT\tHEALTH\tINDEX\tINDEX HEALTH\tREPLICAS (SETTING)")
	for _, h := range layouts {
		if h.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t%s\t\t\n", h.Layout, h.Health, h.Error)
			continue
		}
		for _, ix := range h.Indices {
			fmt.Fprintf(tw, "%s\t%s\t%s → %s\t%s\t%d (%s)\n", h.Layout, h.Health, ix.Alias, ix.Index, ix.Health, ix.Replicas, ix.ReplicaSetting)
		}
	}
	tw.Flush()
	if unhealthy > 0 {
		return fmt.Errorf("%d component(s) unhealthy", unhealthy)
	}
	return nil
}

func runServe(ctx context.Context, args []string) error {
	c, cfg := serveCommand()
	stateDir := c.FS.String("state-dir", localstack.Defaults().StateDir, "take backend addresses not given by flags from the local stack in this directory")
	var logs logConfig
	c.Group("log", logs.flags)
	if err := parse(c, args); err != nil {
		return err
	}
	log, err := logs.logger()
	if err != nil {
		return err
	}
	if parseOnly(ctx) {
		// Backends not given come from the stack at run time.
		check := *cfg
		withPlaceholderBackends(&check.Backends)
		check.EnsureDefaults()
		return check.Validate()
	}
	if st, err := localstack.Load(*stateDir); err == nil {
		fillFromStack(cfg, st)
	}
	return app.Run(ctx, *cfg, log, func(addr string) {
		log.Info("ready", "url", "http://"+addr)
	})
}

// serveCommand binds app.Config's flags component by component, so that
// -h lists them in groups; TestServeGroupsBindWhatAppBinds checks that they
// are exactly the flags app.Config.Flags binds.
func serveCommand() (*flaghelp.Command, *app.Config) {
	c := newCommand("serve", "baedal serve [flags]",
		"Run the HTTP API, the indexer and the feed workers against OpenSearch, Redis and PostgreSQL.\n"+
			"Backend addresses not given by flags come from the local stack in --state-dir.",
		"baedal serve --addr 127.0.0.1:19080 --opensearch-urls http://127.0.0.1:19200 --redis-addr 127.0.0.1:19379 --log-format json")
	cfg := app.Defaults()
	c.Group("API", cfg.API.Flags)
	c.Group("backends", cfg.Backends.Flags)
	c.Group("indexer", cfg.Indexer.Flags)
	c.Group("indexer", cfg.Indexer.Log.Flags)
	c.Group("layout", cfg.Indexer.Layout.Flags)
	c.Group("search", cfg.Search.Flags)
	c.Group("search", cfg.Fallback.Flags)
	c.Group("feed", cfg.Feed.Flags)
	c.Group("links", cfg.Links.Flags)
	c.Group("reindex", cfg.Reindex.Flags)
	c.Group("replicas", func(fs *flag.FlagSet) {
		cfg.RedisReads.Flags(fs, "redis-replica-")
		cfg.OpenSearchReads.Flags(fs, "opensearch-endpoint-")
	})
	c.Group("demo", cfg.Demo.Flags)
	c.Group(flaghelp.General, cfg.ServerFlags)
	return c, &cfg
}

// fillFromStack uses the local stack's addresses for backends not configured.
func fillFromStack(cfg *app.Config, st *localstack.State) {
	b := &cfg.Backends
	if len(b.OpenSearch.URLs) == 0 {
		b.OpenSearch.URLs = st.OpenSearchURLs
	}
	useStackRedis(&b.Redis, st)
	if b.Postgres.URL == "" {
		b.Postgres.URL = st.PostgresURL
	}
	// A stack started with --links-old-redis runs the link store migration
	// between that Redis (old store) and the primary (new store).
	if st.LinksOldRedisAddr != "" && cfg.Links.OldRedisAddr == "" {
		cfg.Links.OldRedisAddr, cfg.Links.Migrate = st.LinksOldRedisAddr, true
	}
}

// useStackRedis points a Redis configuration that names no address at the
// stack's Redis: its Redis Cluster when it runs one (started with
// --redis-cluster), else its single Redis with its replicas.
func useStackRedis(r *backend.RedisConfig, st *localstack.State) {
	if r.Addr != "" {
		return
	}
	if len(st.RedisClusterAddrs) > 0 {
		r.Addr, r.Cluster = strings.Join(st.RedisClusterAddrs, ","), true
		return
	}
	r.Addr = st.RedisAddr
	if len(r.ReplicaAddrs) == 0 {
		r.ReplicaAddrs = st.RedisReplicaAddrs
	}
}

// printStack prints where each server listens; the PostgreSQL password is
// kept in the 0600 state file, not printed.
func printStack(st *localstack.State) {
	fmt.Printf("  opensearch: %v\n  redis:      %s", st.OpenSearchURLs, st.RedisAddr)
	if len(st.RedisReplicaAddrs) > 0 {
		fmt.Printf(" (replicas %v)", st.RedisReplicaAddrs)
	}
	if st.LinksOldRedisAddr != "" {
		fmt.Printf("\n  redis (link store's old store): %s", st.LinksOldRedisAddr)
	}
	if len(st.RedisClusterAddrs) > 0 {
		fmt.Printf("\n  redis cluster (%d masters, used by serve): %v", st.RedisClusterMasters, st.RedisClusterAddrs)
	}
	fmt.Printf("\n  postgres:   %s\n", st.RedactedPostgresURL())
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
