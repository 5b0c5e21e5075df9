package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/baedal/baedal/internal/flagenv"
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

// parse parses args, then fills flags not given from BAEDAL_* variables.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	return flagenv.Apply(fs, "BAEDAL")
}
