package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/feed"
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
	useStackRedis(&b.Redis, st)
	if b.Postgres.URL == "" {
		b.Postgres.URL = st.PostgresURL
	}
	return nil
}

// runGen writes the generated catalog as NDJSON change events.
func runGen(ctx context.Context, args []string) error {
	c := newCommand("gen", "baedal gen [--shops N] [--seed S] [--out FILE]",
		"Write the generated catalog (shops with Korean names, ~30 menus each) as NDJSON change\nevents, the body POST /v1/events takes. The same seed gives the same catalog.",
		"baedal gen --shops 1000 --seed 1 --out catalog.ndjson")
	cfg := eventlog.CatalogDefaults()
	c.Group("catalog", func(fs *flag.FlagSet) { cfg.Flags(fs, true) })
	if err := parse(c, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil || parseOnly(ctx) {
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
	c := newCommand("load", "baedal load [--shops N] [--seed S] [flags]",
		"Append the generated catalog to the event log in Redis; the indexer of `baedal serve` indexes it.",
		"baedal load --shops 20000 --seed 1")
	cfg := eventlog.CatalogDefaults()
	c.Group("catalog", func(fs *flag.FlagSet) { cfg.Flags(fs, false) })
	logCfg := eventlog.Defaults()
	c.Group("event log", logCfg.Flags)
	backends := backend.Defaults()
	c.Group("Redis", backends.Redis.Flags)
	stateDir := c.FS.String("state-dir", localstack.Defaults().StateDir, "local stack to use when --redis-addr is not given")
	if err := parse(c, args); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil || parseOnly(ctx) {
		return err
	}
	if backends.Redis.Addr == "" {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return err
		}
		useStackRedis(&backends.Redis, st)
	}
	if err := backends.Redis.Validate(); err != nil {
		return err
	}
	rdb, err := backend.NewRedis(backends.Redis, backends.Redis.Addr)
	if err != nil {
		return err
	}
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
	c := newCommand("feed", "baedal feed seed --preset experiment|social [--users N] [--reset] [flags]",
		"Seed the follow feed: users, follows and posts of a preset (experiment: the write-up's\n"+
			"celebrity experiment; social: a power-law social graph), then rebuild the timelines.",
		"baedal feed seed --preset social --users 1000 --reset")
	c.Subcommands = [][2]string{{"seed", "create the preset's users, follows and posts and rebuild the timelines"}}
	usage := usageError{errors.New("usage: baedal feed seed --preset experiment|social [--users N] [--reset]; allowed subcommands: seed (see baedal feed -h)")}
	seedCfg := feed.SeedDefaults()
	c.Group("seed", seedCfg.Flags)
	feedCfg := feed.Defaults()
	c.Group("feed", feedCfg.Flags)
	backends := backend.Defaults()
	c.Group("backends", backends.Flags)
	stateDir := c.FS.String("state-dir", localstack.Defaults().StateDir, "local stack to use for backends not given by flags")
	// The subcommand and the flags may come in any order.
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 || positional[0] != "seed" {
		return usage
	}
	// Defaults before validation: a flag given as 0 means its default, as
	// in the configurations' own constructors.
	seedCfg.EnsureDefaults()
	feedCfg.EnsureDefaults()
	if err := errors.Join(seedCfg.Validate(), feedCfg.Validate()); err != nil || parseOnly(ctx) {
		return err
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
