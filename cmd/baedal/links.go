package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/linkstore"
	"github.com/baedal/baedal/localstack"
)

// runLinks is `baedal links mode [--set MODE]`: show or move the link store's
// migration mode (old-only → dual-write → shadow-read → new-only) and print
// the shadow-read report.
func runLinks(ctx context.Context, args []string) error {
	c := newCommand("links", "baedal links mode [--set old-only|dual-write|shadow-read|new-only] [flags]",
		"Show the link store's migration mode and its shadow-read report, or move the mode one step\n"+
			"(old-only → dual-write → shadow-read → new-only, or back). Prints JSON.",
		"baedal links mode --set dual-write")
	c.Subcommands = [][2]string{{"mode", "print the mode and the shadow-read report; --set MODE moves it"}}
	usage := usageError{errors.New("usage: baedal links mode [--set old-only|dual-write|shadow-read|new-only]; allowed subcommands: mode (see baedal links -h)")}
	cfg := linkstore.DefaultConfig()
	c.Group("links", cfg.Flags)
	var set *string
	c.Group("links", func(fs *flag.FlagSet) {
		set = fs.String("set", "", "move to this mode (one step forward or back)")
	})
	redisCfg := backend.Defaults().Redis
	c.Group("Redis", redisCfg.Flags)
	stateDir := c.FS.String("state-dir", localstack.Defaults().StateDir, "local stack to use when --redis-addr is not given")
	// The subcommand and the flags may come in any order.
	positional, err := parseWithArgs(c, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 || positional[0] != "mode" {
		return usage
	}
	if *set != "" {
		if _, err := linkstore.ParseMode(*set); err != nil {
			return usageError{fmt.Errorf("--set: %w", err)}
		}
	}
	if err := cfg.Validate(); err != nil || parseOnly(ctx) {
		return err
	}
	if redisCfg.Addr == "" {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return err
		}
		useStackRedis(&redisCfg, st)
	}
	if err := redisCfg.Validate(); err != nil {
		return err
	}
	rdb, err := backend.NewRedis(redisCfg, redisCfg.Addr)
	if err != nil {
		return err
	}
	defer rdb.Close()
	svc, closeOld, err := linkstore.Open(ctx, cfg, redisCfg, rdb, nil, nil, nil)
	if err != nil {
		return err
	}
	defer closeOld()
	defer svc.Close()
	if *set != "" {
		m, err := linkstore.ParseMode(*set)
		if err != nil {
			return fmt.Errorf("--set: %w", err)
		}
		if err := svc.SetMode(ctx, m); err != nil {
			return err
		}
	}
	report, err := svc.Report(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(map[string]any{"mode": svc.Mode(), "report": report})
}
