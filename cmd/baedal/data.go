package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/feed/feedbench"
	"github.com/baedal/baedal/localstack"
)

// backendsFromStack fills backend addresses not given by flags from the local
// stack in stateDir.
func backendsFromStack(b *backend.Config, stateDir string) error {
	if len(b.OpenSearch.URLs) > 0 && b.Redis.Addr != "" && b.Postgres.URL != "" {
		return nil
	}
	st, err := localstack.Load(stateDir)
	if err != nil {
		return errors.Join(errors.New("backend addresses not given and no local stack (start one with `baedal up`)"), err)
	}
	if len(b.OpenSearch.URLs) == 0 {
		b.OpenSearch.URLs = st.OpenSearchURLs
	}
	if b.Redis.Addr == "" {
		b.Redis.Addr = st.RedisAddr
		if len(b.Redis.ReplicaAddrs) == 0 {
			b.Redis.ReplicaAddrs = st.RedisReplicaAddrs
		}
	}
	if b.Postgres.URL == "" {
		b.Postgres.URL = st.PostgresURL
	}
	return nil
}

// runGen writes the generated catalog as NDJSON change events.
func runGen(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	cfg := eventlog.CatalogDefaults()
	cfg.Flags(fs, true)
	if err := parse(fs, args); err != nil {
		return err
	}
	out := os.Stdout
	if cfg.Out != "" {
		f, err := os.Create(cfg.Out)
		if err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		defer f.Close()
		out = f
	}
	return eventlog.WriteCatalog(out, cfg)
}

// runLoad appends the generated catalog to the event log in bulk.
func runLoad(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	cfg := eventlog.CatalogDefaults()
	cfg.Flags(fs, false)
	logCfg := eventlog.Defaults()
	logCfg.Flags(fs)
	backends := backend.Defaults()
	backends.Redis.Flags(fs)
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "local stack to use when --redis-addr is not given")
	if err := parse(fs, args); err != nil {
		return err
	}
	if backends.Redis.Addr == "" {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return err
		}
		backends.Redis.Addr = st.RedisAddr
	}
	if err := backends.Redis.Validate(); err != nil {
		return err
	}
	rdb := backend.NewRedis(backends.Redis, backends.Redis.Addr)
	defer rdb.Close()
	l, err := eventlog.New(logCfg, rdb, nil, nil)
	if err != nil {
		return err
	}
	if err := eventlog.LoadCatalog(ctx, l, cfg, os.Stderr); err != nil {
		return err
	}
	fmt.Printf("appended %d shops to the event log; the indexer of `baedal serve` indexes them\n", cfg.Shops)
	return nil
}

// runFeed is `baedal feed seed`.
func runFeed(ctx context.Context, args []string) error {
	usage := errors.New("usage: baedal feed seed --preset experiment|social [--users N] [--reset]; allowed subcommands: seed")
	fs := flag.NewFlagSet("feed seed", flag.ContinueOnError)
	seedCfg := feed.SeedConfig{}
	seedCfg.Flags(fs)
	feedCfg := feed.Defaults()
	feedCfg.Flags(fs)
	backends := backend.Defaults()
	backends.Flags(fs)
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "local stack to use for backends not given by flags")
	// The subcommand and the flags may come in any order.
	positional, err := parseWithArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 || positional[0] != "seed" {
		return usage
	}
	if err := backendsFromStack(&backends, *stateDir); err != nil {
		return err
	}
	clients, err := backend.Open(ctx, backends)
	if err != nil {
		return err
	}
	defer clients.Close()
	if _, err := feed.Migrate(ctx, clients.Postgres); err != nil {
		return err
	}
	svc, err := feed.NewService(feedCfg, clients.Postgres, clients.Redis, nil, nil)
	if err != nil {
		return err
	}
	_, err = feed.SeedAndRebuild(ctx, svc, seedCfg, os.Stderr)
	return err
}

func benchFeed(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench feed", flag.ContinueOnError)
	cfg := feedbench.Defaults()
	cfg.Flags(fs)
	backends := backend.Defaults()
	fs.StringVar(&backends.Redis.Addr, "redis-addr", "", "Redis primary host:port (default: the local stack's)")
	fs.StringVar(&backends.Postgres.URL, "postgres-url", "", "PostgreSQL URL with the right to create databases (default: the local stack's)")
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "local stack to use for backends not given by flags")
	if err := parse(fs, args); err != nil {
		return err
	}
	if backends.Redis.Addr == "" || backends.Postgres.URL == "" {
		st, stop, err := localstack.UseOrStart(ctx, *stateDir, os.Stderr)
		if err != nil {
			return err
		}
		defer stop()
		if backends.Redis.Addr == "" {
			backends.Redis.Addr = st.RedisAddr
		}
		if backends.Postgres.URL == "" {
			backends.Postgres.URL = st.PostgresURL
		}
	}
	cfg.PostgresURL, cfg.RedisAddr = backends.Postgres.URL, backends.Redis.Addr
	cfg.Command = bench.CommandLine()
	_, err := feedbench.Run(ctx, cfg, os.Stdout, os.Stderr)
	return err
}
