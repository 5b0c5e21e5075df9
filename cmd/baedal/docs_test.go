package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/baedal/baedal/internal/flaghelp"
)

// docLine is a `baedal …` command line found in a document.
type docLine struct {
	where string // file:line
	text  string // from "baedal" on, comment and synopsis notation included
}

var (
	fenceRE     = regexp.MustCompile("^\\s*```")
	inlineRE    = regexp.MustCompile("`([^`]+)`")
	baedalCmdRE = regexp.MustCompile(`(?:^|[\s(])(?:go run \./cmd/)?(baedal(?: [^\s].*)?)$`)
)

// documentedCommandLines extracts the `baedal …` command lines of a
// Markdown file: lines of fenced code blocks (with indented continuation
// lines joined) and inline code spans. A line counts when the word after
// "baedal" is a command or a flag.
func documentedCommandLines(t *testing.T, path string) []docLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmds := commands()
	var out []docLine
	add := func(lineNo int, text string) {
		m := baedalCmdRE.FindStringSubmatch(strings.TrimSpace(text))
		if m == nil {
			return
		}
		f := strings.Fields(m[1])
		if len(f) < 2 {
			return
		}
		if _, ok := cmds[f[1]]; !ok && !strings.HasPrefix(f[1], "-") {
			return
		}
		out = append(out, docLine{fmt.Sprintf("%s:%d", filepath.Base(path), lineNo), m[1]})
	}
	inFence := false
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if fenceRE.MatchString(l) {
			inFence = !inFence
			continue
		}
		if inFence {
			start := i
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "   ") && strings.TrimSpace(lines[i+1]) != "" && !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "#") {
				i++
				l = strings.TrimSuffix(strings.TrimSpace(l), "\\") + " " + strings.TrimSpace(lines[i])
			}
			if c := strings.Index(l, " #"); c >= 0 {
				l = l[:c]
			}
			add(start+1, l)
			continue
		}
		for _, m := range inlineRE.FindAllStringSubmatch(l, -1) {
			add(i+1, m[1])
		}
	}
	return out
}

var (
	flagsGroupRE  = regexp.MustCompile(`\[[^\]]*\bflags\]`)      // "[flags]", "[C3 flags]"
	spacedAltRE   = regexp.MustCompile(`\[([^\]]* \| [^\]]*)\]`) // "[--queries 1000 | --clients 1]"
	placeholderRE = regexp.MustCompile(`<([^>]*)>`)              // "<index|search>", "<the running stack>"
)

// expandSynopsis turns a synopsis into the command lines it stands for:
// "[x]" is taken as given, "[flags]" and "..." are dropped, a word "a|b"
// (or "<a|b>") gives one line per alternative, as does "[x y | z]", and a
// "<placeholder>" becomes the word PLACEHOLDER.
func expandSynopsis(s string) [][]string {
	if m := spacedAltRE.FindStringSubmatchIndex(s); m != nil {
		var out [][]string
		for _, alt := range strings.Split(s[m[2]:m[3]], " | ") {
			out = append(out, expandSynopsis(s[:m[0]]+alt+s[m[1]:])...)
		}
		return out
	}
	s = flagsGroupRE.ReplaceAllString(s, "")
	s = placeholderRE.ReplaceAllStringFunc(s, func(p string) string {
		if strings.Contains(p, "|") {
			return strings.Trim(p, "<>")
		}
		return "PLACEHOLDER"
	})
	s = strings.NewReplacer("[", "", "]", "").Replace(s)
	lines := [][]string{nil}
	for _, w := range strings.Fields(s) {
		if w == "..." {
			continue
		}
		alts := []string{w}
		if strings.Contains(w, "|") {
			alts = strings.Split(w, "|")
		}
		var next [][]string
		for _, l := range lines {
			for _, a := range alts {
				next = append(next, append(append([]string(nil), l...), a))
			}
		}
		lines = next
	}
	return lines
}

// optionalRE is one innermost optional part of a synopsis: "[--users N]".
var optionalRE = regexp.MustCompile(`\[[^\[\]]*\]`)

// shortestSynopsis drops every optional part ("[...]") of a synopsis: the
// command line as a newcomer types it first, where every default applies.
func shortestSynopsis(s string) string {
	for optionalRE.MatchString(s) {
		s = optionalRE.ReplaceAllString(s, "")
	}
	return s
}

// synopsisForms is every command line a synopsis stands for, in its full
// form (the optional parts as given) and in its shortest form (without
// them), each once.
func synopsisForms(s string) [][]string {
	var out [][]string
	seen := map[string]bool{}
	for _, form := range []string{s, shortestSynopsis(s)} {
		for _, args := range expandSynopsis(form) {
			if key := strings.Join(args, " "); !seen[key] {
				seen[key] = true
				out = append(out, args)
			}
		}
	}
	return out
}

// Every `baedal …` command line in README.md, BENCHMARKS.md and docs/*.md parses: its
// command, flags, flag values and arguments are accepted (the commands stop
// after parsing, so nothing starts). Each line is run as written and in its
// shortest form, without its optional parts: defaults must make that one
// valid too (`baedal feed seed --preset experiment` once failed with "users:
// got 0" while `... --users 1000` passed).
func TestDocumentedCommandLinesParse(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append([]string{"../../README.md", "../../BENCHMARKS.md"}, files...)
	ctx := flaghelp.WithParseOnly(context.Background())
	checked := 0
	for _, f := range files {
		for _, dl := range documentedCommandLines(t, f) {
			for _, args := range synopsisForms(dl.text) {
				checked++
				var stderr strings.Builder
				if code := run(ctx, args[1:], io.Discard, &stderr); code != 0 {
					t.Errorf("%s: %q (as %q) does not parse: exit %d: %s", dl.where, dl.text, strings.Join(args, " "), code, strings.TrimSpace(stderr.String()))
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("checked only %d command lines; is the extraction broken?", checked)
	}
	t.Logf("%d documented command lines parse", checked)
}

func TestShortestSynopsis(t *testing.T) {
	for in, want := range map[string]string{
		"baedal feed seed --preset experiment|social [--users 1000] [--reset]": "baedal feed seed --preset experiment;baedal feed seed --preset social",
		"baedal links mode [--set old-only|dual-write]":                        "baedal links mode",
		"baedal bench search [--queries 1000 | --clients 1] [C3 flags]":        "baedal bench search",
		"baedal up [--a [--b]] --c":                                            "baedal up --c",
	} {
		var s []string
		for _, l := range expandSynopsis(shortestSynopsis(in)) {
			s = append(s, strings.Join(l, " "))
		}
		if strings.Join(s, ";") != want {
			t.Errorf("shortest form of %q = %q, want %q", in, s, want)
		}
	}
}

func TestExpandSynopsis(t *testing.T) {
	for in, want := range map[string]string{
		"baedal bench all|search [--profile quick|full] [flags] ...":    "baedal bench all --profile quick;baedal bench all --profile full;baedal bench search --profile quick;baedal bench search --profile full",
		"baedal bench <index|links> --state-dir <the stack>":            "baedal bench index --state-dir PLACEHOLDER;baedal bench links --state-dir PLACEHOLDER",
		"baedal bench search [--queries 1000 | --clients 1] [C3 flags]": "baedal bench search --queries 1000;baedal bench search --clients 1",
	} {
		var s []string
		for _, l := range expandSynopsis(in) {
			s = append(s, strings.Join(l, " "))
		}
		if strings.Join(s, ";") != want {
			t.Errorf("expandSynopsis(%q) = %q", in, s)
		}
	}
}
