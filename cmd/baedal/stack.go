package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/simulator"
)

func runUp(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("up", flag.ContinueOnError)
	stack := localstack.Defaults()
	stack.Flags(fs)
	serve := app.Defaults()
	serve.API.Flags(fs)
	serve.Demo = simulator.Defaults()
	serve.Demo.Flags(fs)
	var logs logConfig
	logs.flags(fs)
	stackOnly := fs.Bool("stack-only", false, "start the stack, print where it listens and return (no server)")
	if err := parse(fs, args); err != nil {
		return err
	}
	apiAddrGiven := isFlagSet(fs, "addr")
	log, err := logs.logger()
	// Every flag is checked before anything is installed or started.
	if err := errors.Join(err, stack.Validate(), serve.API.Validate(), serve.Demo.Validate()); err != nil {
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
	})
	fmt.Println("stopping the stack")
	downErr := localstack.Down(st.StateDir, os.Stdout)
	if errors.Is(downErr, localstack.ErrNotRunning) {
		downErr = nil
	}
	return errors.Join(serveErr, downErr)
}

func runDown(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("down", flag.ContinueOnError)
	stack := localstack.Defaults()
	fs.StringVar(&stack.StateDir, "state-dir", stack.StateDir, "the stack's state directory (env BAEDAL_STATE_DIR)")
	if err := parse(fs, args); err != nil {
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
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	stack := localstack.Defaults()
	fs.StringVar(&stack.StateDir, "state-dir", stack.StateDir, "the stack's state directory (env BAEDAL_STATE_DIR)")
	asJSON := fs.Bool("json", false, "print JSON: {components, layouts}")
	idx := indexer.Defaults()
	fs.StringVar(&idx.Layout.Prefix, "index-prefix", idx.Layout.Prefix, "prefix of the layouts' index and alias names")
	if err := parse(fs, args); err != nil {
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
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := app.Defaults()
	cfg.Flags(fs)
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "take backend addresses not given by flags from the local stack in this directory")
	var logs logConfig
	logs.flags(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	log, err := logs.logger()
	if err != nil {
		return err
	}
	if st, err := localstack.Load(*stateDir); err == nil {
		fillFromStack(&cfg, st)
	}
	return app.Run(ctx, cfg, log, func(addr string) {
		log.Info("ready", "url", "http://"+addr)
	})
}

// fillFromStack uses the local stack's addresses for backends not configured.
func fillFromStack(cfg *app.Config, st *localstack.State) {
	b := &cfg.Backends
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
	// A stack started with --links-old-redis runs the link store migration
	// between that Redis (old store) and the primary (new store).
	if st.LinksOldRedisAddr != "" && cfg.Links.OldRedisAddr == "" {
		cfg.Links.OldRedisAddr, cfg.Links.Migrate = st.LinksOldRedisAddr, true
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
	fmt.Printf("\n  postgres:   %s\n", st.RedactedPostgresURL())
}

func isFlagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
