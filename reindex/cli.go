package reindex

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/flaghelp"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/localstack"
)

// Subcommands of `baedal reindex`, with their one-line help.
var subcommands = map[string]string{
	"start":      "plan a job and run it to the swap (or --job ID: continue a stopped or failed job)",
	"status":     "show a job (--job ID) or every job",
	"pause":      "slow a running copy to the pause rate",
	"resume":     "restore the copy rate of a paused job",
	"rethrottle": "set the copy rate: --requests-per-second N (-1 = unthrottled)",
	"rollback":   "move the alias back to the old index (after the swap: catch it up first)",
	"cleanup":    "delete the index the alias no longer points at and end the job",
}

// CLI is `baedal reindex <subcommand> [flags]`. Progress and logs go to
// stderr, results (JSON) to stdout. Flags not given are read from BAEDAL_*
// variables; backend addresses default to the local stack in --state-dir.
// `-h` (alone or after a subcommand) prints the help to stdout and returns
// flag.ErrHelp. Under flaghelp.WithParseOnly it returns once the command
// line is checked.
func CLI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var names []string
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	sub := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub = args[0]
		if _, ok := subcommands[sub]; !ok {
			return fmt.Errorf("unknown subcommand %q; allowed: %s (see baedal reindex -h)", sub, strings.Join(names, ", "))
		}
		args = args[1:]
	}
	c := flaghelp.New("reindex "+sub, "baedal reindex "+sub+" [flags]",
		"Live reindex: copy an index into a new one with sliced _reindex, catch up from the event\n"+
			"log, swap the alias, and keep the old index for a rollback. Every step is persisted in\n"+
			"Redis, so a stopped job continues with start --job ID. Results are JSON on stdout.",
		"baedal reindex start --alias baedal_shops_nested --shards 6 --requests-per-second 2000")
	c.Out = stdout
	if sub == "" {
		c.Synopsis = "baedal reindex start|status|pause|resume|rethrottle|rollback|cleanup [flags]"
		c.Example = "baedal reindex status --job baedal_shops_nested_v2"
		for _, n := range names {
			c.Subcommands = append(c.Subcommands, [2]string{n, subcommands[n]})
		}
	} else {
		c.Summary = sub + ": " + subcommands[sub] + "\n\n" + c.Summary
		if sub != "start" {
			c.Example = "baedal reindex " + sub + " --job baedal_shops_nested_v2"
			if sub == "rethrottle" {
				c.Example += " --requests-per-second 500"
			}
		}
		// The synopsis names the flags a subcommand requires.
		switch sub {
		case "start", "status":
		case "rethrottle":
			c.Synopsis = "baedal reindex rethrottle --job JOB_ID --requests-per-second RATE [flags]"
		default:
			c.Synopsis = "baedal reindex " + sub + " --job JOB_ID [flags]"
		}
	}
	cfg := Defaults()
	c.Group("reindex", cfg.Flags)
	c.Group("layout", cfg.Layout.Flags)
	c.Group("event log", cfg.Log.Flags)
	bc := backend.Defaults()
	c.Group("backends", bc.OpenSearch.Flags)
	c.Group("backends", bc.Redis.Flags)
	opts := DefaultOptions()
	var bodyFile string
	var rps float64 = -2
	var job, stateDir, logLevel *string
	c.Group("job", func(fs *flag.FlagSet) {
		job = fs.String("job", "", "job id (the new index's name, e.g. baedal_shops_nested_v2)")
	})
	c.Group("copy", func(fs *flag.FlagSet) {
		switch sub {
		case "", "start":
			// Without a subcommand the help lists start's flags too.
			opts.Flags(fs)
			fs.StringVar(&bodyFile, "body-file", "", "JSON file with the new index body (settings, mappings); default: the layout's current body")
		case "rethrottle":
			fs.Func("requests-per-second", "new copy rate in documents per second; -1 = unthrottled (required)", func(v string) error {
				x, err := strconv.ParseFloat(v, 64)
				rps = x
				return err
			})
		}
	})
	stateDir = c.FS.String("state-dir", localstack.Defaults().StateDir, "local stack whose servers to use when --opensearch-urls / --redis-addr are not given")
	logLevel = c.FS.String("log-level", "info", "log level: debug, info, warn, error")
	if err := c.ParseNoArgs(args); err != nil {
		return err
	}
	if sub == "" {
		return fmt.Errorf("usage: baedal reindex SUBCOMMAND [flags]; allowed subcommands: %s (see baedal reindex -h)", strings.Join(names, ", "))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return fmt.Errorf("--log-level: got %q, allowed: debug, info, warn, error", *logLevel)
	}
	if sub != "start" && sub != "status" && *job == "" {
		return fmt.Errorf("--job: required for %s (the job id; `baedal reindex status` lists them)", sub)
	}
	if sub == "rethrottle" && rps == -2 {
		return errors.New("--requests-per-second: required for rethrottle, allowed: -1 (unthrottled) or > 0")
	}
	if flaghelp.ParseOnly(ctx) {
		return nil
	}
	if bodyFile != "" {
		raw, err := os.ReadFile(bodyFile)
		if err != nil {
			return fmt.Errorf("--body-file: %w", err)
		}
		opts.Body = raw
	}

	if len(bc.OpenSearch.URLs) == 0 || bc.Redis.Addr == "" {
		st, err := localstack.Load(*stateDir)
		if err != nil {
			return fmt.Errorf("no --opensearch-urls/--redis-addr and no local stack in --state-dir %s: %w", *stateDir, err)
		}
		if len(bc.OpenSearch.URLs) == 0 {
			bc.OpenSearch.URLs = st.OpenSearchURLs
		}
		if bc.Redis.Addr == "" {
			// The Redis serve uses: the stack's cluster when it has one.
			bc.Redis.Addr = st.RedisAddr
			if len(st.RedisClusterAddrs) > 0 {
				bc.Redis.Addr, bc.Redis.Cluster = strings.Join(st.RedisClusterAddrs, ","), true
			}
		}
	}
	if err := errors.Join(bc.OpenSearch.Validate(), bc.Redis.Validate()); err != nil {
		return err
	}
	osc, err := backend.OpenOpenSearch(bc.OpenSearch)
	if err != nil {
		return err
	}
	rdb, err := backend.NewRedis(bc.Redis, bc.Redis.Addr)
	if err != nil {
		return err
	}
	defer rdb.Close()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	o, err := New(cfg, osapi.New(osc), rdb, log, nil)
	if err != nil {
		return err
	}
	if _, err := o.MigrateLegacyKeys(ctx); err != nil {
		return err
	}
	printJSON := func(v any) error {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	showStatus := func() error {
		st, err := o.Status(ctx, *job)
		if err != nil {
			return err
		}
		return printJSON(st)
	}

	switch sub {
	case "start":
		if *job == "" {
			if err := opts.Validate(o.Aliases()); err != nil {
				return flagError(err)
			}
			st, err := o.Start(ctx, opts)
			if err != nil {
				return flagError(err)
			}
			*job = st.ID
			fmt.Fprintf(stderr, "job %s: %s → %s (resume with: baedal reindex start --job %s)\n", st.ID, st.Source, st.Target, st.ID)
		}
		var bar *bench.Progress
		var last int64
		o.OnProgress = func(st Status) {
			if bar == nil && st.Copy.Total > 0 {
				bar = bench.NewProgress(stderr, "copy "+st.Source+" → "+st.Target, st.Copy.Total)
			}
			if bar != nil {
				bar.Add(st.Copy.Done() - last)
				last = st.Copy.Done()
			}
		}
		err := o.Run(ctx, *job)
		if bar != nil {
			bar.Done()
		}
		if err != nil {
			return err
		}
		return showStatus()
	case "status":
		if *job == "" {
			jobs, err := o.List(ctx)
			if err != nil {
				return err
			}
			return printJSON(map[string]any{"jobs": jobs})
		}
		return showStatus()
	case "pause":
		err = o.Pause(ctx, *job)
	case "resume":
		err = o.Resume(ctx, *job)
	case "rethrottle":
		err = o.Rethrottle(ctx, *job, rps)
	case "rollback":
		err = o.Rollback(ctx, *job)
	case "cleanup":
		var deleted string
		if deleted, err = o.Cleanup(ctx, *job); err == nil {
			fmt.Fprintf(stderr, "deleted index %s\n", deleted)
		}
	}
	if err != nil {
		return flagError(err)
	}
	return showStatus()
}

// flagError renames the JSON field of FieldErrors to its flag.
func flagError(err error) error {
	var fe *FieldError
	if !errors.As(err, &fe) {
		return err
	}
	var msgs []string
	for _, e := range unjoin(err) {
		if errors.As(e, &fe) {
			flagName := strings.ReplaceAll(fe.Field, "_", "-")
			if flagName == "body" {
				flagName = "body-file"
			}
			msgs = append(msgs, "--"+flagName+": "+fe.Problem+", allowed: "+fe.Allowed)
		} else {
			msgs = append(msgs, e.Error())
		}
	}
	return errors.New(strings.Join(msgs, "\n"))
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
