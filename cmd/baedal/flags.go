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

// parse parses args, flags in any position, then fills flags not given
// from BAEDAL_* variables. A command that takes no positional arguments
// refuses them.
func parse(fs *flag.FlagSet, args []string) error {
	positional, err := parseWithArgs(fs, args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return fmt.Errorf("unexpected arguments: %s", strings.Join(positional, " "))
	}
	return nil
}

// parseWithArgs parses args with flags in any position (flagenv.ParseAnywhere),
// fills flags not given from BAEDAL_* variables, and returns the positional
// arguments.
func parseWithArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	positional, err := flagenv.ParseAnywhere(fs, args)
	if err != nil {
		return nil, err
	}
	return positional, flagenv.Apply(fs, "BAEDAL")
}
