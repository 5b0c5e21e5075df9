package main

import (
	"context"
	"flag"
	"io"
	"os"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/internal/flaghelp"
)

// captureStdout returns what f writes to os.Stdout.
func captureStdout(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	defer func() { os.Stdout = saved }()
	f()
	w.Close()
	os.Stdout = saved
	return <-done
}

// helpLines are every command and sub-subcommand, asked for help.
func helpLines() [][]string {
	lines := [][]string{{"--help"}, {"-h"}, {"help"}, {"help", "bench", "search"}}
	for name := range commands() {
		lines = append(lines, []string{name, "-h"}, []string{name, "--help"})
	}
	lines = append(lines, []string{"feed", "seed", "-h"}, []string{"links", "mode", "--help"},
		[]string{"bench", "all", "-h"}, []string{"bench", "compare", "--help"}, []string{"bench", "targets", "-h"}, []string{"bench", "scale-plots", "-h"})
	for name := range benchmarks() {
		lines = append(lines, []string{"bench", name, "-h"})
	}
	for _, sub := range []string{"start", "status", "pause", "resume", "rethrottle", "rollback", "cleanup"} {
		lines = append(lines, []string{"reindex", sub, "--help"})
	}
	return lines
}

// Every command answers -h and --help with its synopsis, grouped flags and
// an example on stdout, and exits 0; the example parses as written.
func TestEveryCommandHasHelpThatExitsZero(t *testing.T) {
	ctx := context.Background()
	for _, line := range helpLines() {
		var code int
		out := captureStdout(t, func() { code = run(ctx, line, os.Stdout, io.Discard) })
		name := strings.Join(line, " ")
		if code != 0 {
			t.Errorf("baedal %s: exit %d, want 0", name, code)
		}
		if !strings.HasPrefix(out, "usage: baedal") {
			t.Errorf("baedal %s: help does not start with a synopsis:\n%.300s", name, out)
		}
		ex := regexp.MustCompile(`(?m)^example:\n  (baedal .*)$`).FindStringSubmatch(out)
		if ex == nil {
			t.Errorf("baedal %s: help has no example:\n%s", name, out)
			continue
		}
		if !slices.Contains([]string{"-h", "--help", "help", "version"}, line[0]) && name != "bench -h" && name != "bench --help" && !strings.Contains(out, " flags:\n  --") {
			t.Errorf("baedal %s: help lists no flag group:\n%s", name, out)
		}
		args := strings.Fields(ex[1])[1:]
		if code := run(flaghelp.WithParseOnly(ctx), args, io.Discard, os.Stderr); code != 0 {
			t.Errorf("baedal %s: its example %q does not parse (exit %d)", name, ex[1], code)
		}
	}
}

// serve -h groups its flags by component, sorted within each group.
func TestServeHelpGroupsFlagsByComponent(t *testing.T) {
	out := captureStdout(t, func() { run(context.Background(), []string{"serve", "-h"}, os.Stdout, io.Discard) })
	groups := map[string][]string{}
	var order []string
	cur := ""
	for _, l := range strings.Split(out, "\n") {
		if g, ok := strings.CutSuffix(l, " flags:"); ok && !strings.HasPrefix(l, " ") {
			cur = g
			order = append(order, g)
			continue
		}
		if l == "" || !strings.HasPrefix(l, "  ") {
			if !strings.HasPrefix(l, "        ") {
				cur = ""
			}
			continue
		}
		if cur != "" && strings.HasPrefix(l, "  --") {
			groups[cur] = append(groups[cur], strings.Fields(l)[0])
		}
	}
	for _, want := range []string{"API", "backends", "indexer", "search", "feed", "links", "reindex", "replicas"} {
		if len(groups[want]) == 0 {
			t.Errorf("serve -h has no %q group; groups: %v", want, order)
		}
	}
	for g, flags := range groups {
		if !slices.IsSorted(flags) {
			t.Errorf("group %s is not sorted: %v", g, flags)
		}
	}
	for _, f := range []string{"--addr", "--redis-addr", "--state-dir", "--log-level", "--workers-enabled"} {
		if !regexp.MustCompile(`\n  ` + f + `[ \n]`).MatchString(out) {
			t.Errorf("serve -h does not list %s", f)
		}
	}
}

func TestVersion(t *testing.T) {
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "07215d81e9446258128913439251ce56b6eb03e9"}, {Key: "vcs.modified", Value: "true"},
	}}
	v := readBuildVersion(info, true)
	if v.Revision != "07215d81e9446258128913439251ce56b6eb03e9+dirty" || v.Go != "go1.26.8" || v.Version != "(devel)" {
		t.Errorf("readBuildVersion = %+v", v)
	}
	if v := readBuildVersion(&debug.BuildInfo{}, true); v.Revision != "unknown" || !strings.HasPrefix(v.Go, "go") {
		t.Errorf("without vcs settings: %+v, want revision unknown", v)
	}
	if v := readBuildVersion(nil, false); v.Revision != "unknown" {
		t.Errorf("without build info: %+v", v)
	}
	for _, args := range [][]string{{"--version"}, {"version"}, {"-version"}} {
		var code int
		out := captureStdout(t, func() { code = run(context.Background(), args, os.Stdout, io.Discard) })
		if code != 0 || !regexp.MustCompile(`^baedal \S+\nrevision: \S+\ngo: go\S+\n$`).MatchString(out) {
			t.Errorf("baedal %s: exit %d, output %q", args[0], code, out)
		}
	}
}

// A bad flag is a usage error (exit 2) that names the flag and the help.
func TestBadFlagIsAUsageError(t *testing.T) {
	var stderr strings.Builder
	if code := run(context.Background(), []string{"serve", "--no-such-flag"}, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), "no-such-flag") || !strings.Contains(stderr.String(), "baedal serve -h") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if code := run(context.Background(), []string{"nope"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

// serve binds app.Config's flags component by component (for the groups of
// its help): they must be exactly the flags app.Config.Flags binds, with
// the same defaults and usage, so that serve -h cannot drift from serve.
func TestServeGroupsBindWhatAppBinds(t *testing.T) {
	c, _ := serveCommand()
	want := flag.NewFlagSet("app", flag.ContinueOnError)
	cfg := app.Defaults()
	cfg.Flags(want)
	n := 0
	want.VisitAll(func(w *flag.Flag) {
		n++
		got := c.FS.Lookup(w.Name)
		if got == nil {
			t.Errorf("serve does not bind --%s (app.Config.Flags does)", w.Name)
			return
		}
		if got.DefValue != w.DefValue || got.Usage != w.Usage {
			t.Errorf("--%s: serve binds default %q usage %q; app binds %q %q", w.Name, got.DefValue, got.Usage, w.DefValue, w.Usage)
		}
	})
	c.FS.VisitAll(func(f *flag.Flag) {
		if want.Lookup(f.Name) == nil {
			t.Errorf("serve binds --%s, app.Config.Flags does not", f.Name)
		}
	})
	if n < 50 {
		t.Fatalf("app.Config.Flags bound only %d flags", n)
	}
}

// reindex checks its subcommand and the flags each one requires before it
// connects to anything.
func TestReindexCommandLineChecks(t *testing.T) {
	ctx := flaghelp.WithParseOnly(context.Background())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"reindex"}, "allowed subcommands"},
		{[]string{"reindex", "sideways"}, `unknown subcommand "sideways"`},
		{[]string{"reindex", "pause"}, "--job: required"},
		{[]string{"reindex", "rethrottle", "--job", "j"}, "--requests-per-second: required"},
		{[]string{"reindex", "rethrottle", "--job", "j", "--requests-per-second", "fast"}, "requests-per-second"},
		{[]string{"reindex", "status", "--shards", "3"}, "-shards"}, // start's flags only on start
	} {
		var stderr strings.Builder
		if code := run(ctx, tc.args, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error with %q", tc.args, code, stderr.String(), tc.want)
		}
	}
	if code := run(ctx, []string{"reindex", "rethrottle", "--job", "j", "--requests-per-second", "-1"}, io.Discard, os.Stderr); code != 0 {
		t.Errorf("rethrottle -1: exit %d", code)
	}
}

// Every command's synopsis (the first line of its help) parses in its
// shortest form, without its optional parts, with each value placeholder
// (a word in capitals: N, JOB_ID) as "1": a command applies the defaults of
// its configuration before it validates it, and the synopsis names every
// flag that is required. The overviews of commands with subcommands
// ("baedal bench all|compare|...") are left out: each subcommand's own
// help is checked.
func TestEverySynopsisParsesInItsShortestForm(t *testing.T) {
	ctx := flaghelp.WithParseOnly(context.Background())
	placeholder := regexp.MustCompile(`^[A-Z][A-Z0-9_]*(\.\.\.)?$`)
	checked := 0
	seen := map[string]bool{}
	for _, line := range helpLines() {
		if len(line) < 2 || line[0] == "help" {
			continue // the top-level usage is not one command
		}
		out := captureStdout(t, func() { run(context.Background(), line, os.Stdout, io.Discard) })
		synopsis, _, _ := strings.Cut(strings.TrimPrefix(out, "usage: "), "\n")
		synopsis, _, _ = strings.Cut(synopsis, " (or ") // "baedal version (or baedal --version)"
		if f := strings.Fields(synopsis); len(f) > 2 && strings.Contains(f[2], "|") && strings.Contains(out, "\nsubcommands:\n") {
			continue
		}
		for _, args := range expandSynopsis(shortestSynopsis(synopsis)) {
			for i, w := range args {
				if placeholder.MatchString(w) {
					args[i] = "1"
				}
			}
			key := strings.Join(args, " ")
			if seen[key] {
				continue
			}
			seen[key] = true
			checked++
			var stderr strings.Builder
			if code := run(ctx, args[1:], io.Discard, &stderr); code != 0 {
				t.Errorf("baedal %s: its synopsis %q (as %q) does not parse: exit %d: %s", strings.Join(line, " "), synopsis, key, code, strings.TrimSpace(stderr.String()))
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d synopsis lines", checked)
	}
	t.Logf("%d shortest synopsis lines parse", checked)
}

// A flag of a configuration whose zero value means its default, given as 0,
// is that default, not an error: each command applies the defaults before
// it validates.
func TestZeroFlagsMeanTheirDefaults(t *testing.T) {
	ctx := flaghelp.WithParseOnly(context.Background())
	for _, args := range [][]string{
		{"feed", "seed", "--users", "0", "--posts-per-user", "0", "--seed", "0"},
		{"feed", "seed", "--feed-celebrity-threshold", "0", "--feed-timeline-cap", "0"},
		{"serve", "--feed-celebrity-threshold", "0", "--feed-workers", "0"},
		{"bench", "feed", "--users", "0", "--clients", "0"},
	} {
		var stderr strings.Builder
		if code := run(ctx, args, io.Discard, &stderr); code != 0 {
			t.Errorf("baedal %s: exit %d: %s", strings.Join(args, " "), code, strings.TrimSpace(stderr.String()))
		}
	}
}
