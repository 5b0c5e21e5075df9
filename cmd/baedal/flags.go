package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/flaghelp"
)

// logConfig is shared by the commands that log.
type logConfig struct {
	level  string
	format string
}

func (c *logConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.level, "log-level", "info", "log level: debug, info, warn, error")
	fs.StringVar(&c.format, "log-format", "text", "log format: text, json")
}

func (c *logConfig) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.level)); err != nil {
		return nil, fmt.Errorf("log-level: got %q, allowed: debug, info, warn, error", c.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.format {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, fmt.Errorf("log-format: got %q, allowed: text, json", c.format)
}

// newCommand is a command's flags and help; name is the words after
// "baedal" ("bench search").
func newCommand(name, synopsis, summary, example string) *flaghelp.Command {
	return flaghelp.New(name, synopsis, summary, example)
}

// parse parses args, flags in any position, then fills flags not given
// from BAEDAL_* variables. A command that takes no positional arguments
// refuses them. -h prints the help and returns flag.ErrHelp.
func parse(c *flaghelp.Command, args []string) error {
	return asUsageError(c.ParseNoArgs(args))
}

// parseWithArgs is parse for a command with positional arguments, which it
// returns.
func parseWithArgs(c *flaghelp.Command, args []string) ([]string, error) {
	positional, err := c.Parse(args)
	return positional, asUsageError(err)
}

func asUsageError(err error) error {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usageError{err}
}

// parseOnly reports whether the command should return after parsing.
func parseOnly(ctx context.Context) bool { return flaghelp.ParseOnly(ctx) }

// withPlaceholderBackends fills backend addresses not given with
// placeholders, so that a parse-only run can validate the other fields of a
// configuration whose addresses come from the local stack at run time.
func withPlaceholderBackends(b *backend.Config) {
	if len(b.OpenSearch.URLs) == 0 {
		b.OpenSearch.URLs = []string{"http://127.0.0.1:1"}
	}
	if b.Redis.Addr == "" {
		b.Redis.Addr = "127.0.0.1:1"
	}
	if b.Postgres.URL == "" {
		b.Postgres.URL = "postgres://placeholder@127.0.0.1:1/placeholder"
	}
}
