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
	usage := errors.New("usage: baedal links mode [--set old-only|dual-write|shadow-read|new-only]; allowed subcommands: mode")
	fs := flag.NewFlagSet("links mode", flag.ContinueOnError)
	cfg := linkstore.DefaultConfig()
	cfg.Flags(fs)
	redisCfg := backend.Defaults().Redis
	redisCfg.Flags(fs)
	stateDir := fs.String("state-dir", localstack.Defaults().StateDir, "local stack to use when --redis-addr is not given")
	set := fs.String("set", "", "move to this mode (one step forward or back)")
	// The subcommand and the flags may come in any order.
	positional, err := parseWithArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) != 1 || positional[0] != "mode" {
		return usage
	}
	if redisCfg.Addr == "" {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return err
		}
		redisCfg.Addr = st.RedisAddr
	}
	if err := redisCfg.Validate(); err != nil {
		return err
	}
	rdb := backend.NewRedis(redisCfg, redisCfg.Addr)
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
