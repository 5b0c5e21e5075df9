// Package flaghelp is the help of baedal's commands: a synopsis, the flags
// grouped by the component that binds them (sorted by name within a group),
// one example, and how flags map to environment variables. It also parses:
// flags anywhere among the positional arguments, then BAEDAL_* variables.
//
// Invariant: every flag of a Command's FlagSet is listed in exactly one
// group; flags bound outside Group are listed under "general". `-h` and
// `--help` print the help to Out and return flag.ErrHelp, which the binary
// turns into exit status 0.
package flaghelp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/baedal/baedal/internal/flagenv"
)

// EnvPrefix is the prefix of the environment variable of every flag.
const EnvPrefix = "BAEDAL"

// General is the group of flags not bound inside Group.
const General = "general"

// Command is one command's flags and help.
type Command struct {
	FS *flag.FlagSet
	// Synopsis is the usage line, e.g. "baedal serve [flags]".
	Synopsis string
	// Summary says what the command does, in a sentence or two.
	Summary string
	// Subcommands, when set, are listed as "name  what it does".
	Subcommands [][2]string
	// Example is one command line that runs as written.
	Example string
	// Notes end the help (after the flags), e.g. exit statuses.
	Notes string
	// Out receives the help on -h (default os.Stdout).
	Out io.Writer

	groups []Group
}

// Group is a component's flags, by name.
type Group struct {
	Name  string
	Flags []string
}

// New returns a command whose FlagSet prints nothing by itself: Parse
// prints the help on -h and returns errors that name the command.
func New(name, synopsis, summary, example string) *Command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return &Command{FS: fs, Synopsis: synopsis, Summary: summary, Example: example}
}

// Group binds a component's flags and lists them under name. Calling it
// twice with one name adds to the same group.
func (c *Command) Group(name string, bind func(fs *flag.FlagSet)) {
	before := map[string]bool{}
	c.FS.VisitAll(func(f *flag.Flag) { before[f.Name] = true })
	bind(c.FS)
	var added []string
	c.FS.VisitAll(func(f *flag.Flag) {
		if !before[f.Name] {
			added = append(added, f.Name)
		}
	})
	for i := range c.groups {
		if c.groups[i].Name == name {
			c.groups[i].Flags = append(c.groups[i].Flags, added...)
			sort.Strings(c.groups[i].Flags)
			return
		}
	}
	sort.Strings(added)
	c.groups = append(c.groups, Group{Name: name, Flags: added})
}

// Groups returns the groups in the order they were bound, then General for
// flags bound outside Group; empty groups are left out.
func (c *Command) Groups() []Group {
	seen := map[string]bool{}
	var out []Group
	for _, g := range c.groups {
		for _, f := range g.Flags {
			seen[f] = true
		}
		if len(g.Flags) > 0 {
			out = append(out, g)
		}
	}
	var rest []string
	c.FS.VisitAll(func(f *flag.Flag) {
		if !seen[f.Name] {
			rest = append(rest, f.Name)
		}
	})
	if len(rest) > 0 {
		for i := range out {
			if out[i].Name == General {
				out[i].Flags = append(append([]string(nil), out[i].Flags...), rest...)
				sort.Strings(out[i].Flags)
				return out
			}
		}
		out = append(out, Group{Name: General, Flags: rest}) // VisitAll is sorted
	}
	return out
}

// WriteHelp writes the help.
func (c *Command) WriteHelp(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n", c.Synopsis)
	if c.Summary != "" {
		fmt.Fprintf(w, "\n%s\n", c.Summary)
	}
	if len(c.Subcommands) > 0 {
		fmt.Fprintln(w, "\nsubcommands:")
		width := 0
		for _, s := range c.Subcommands {
			width = max(width, len(s[0]))
		}
		for _, s := range c.Subcommands {
			fmt.Fprintf(w, "  %-*s  %s\n", width, s[0], s[1])
		}
	}
	for _, g := range c.Groups() {
		fmt.Fprintf(w, "\n%s flags:\n", g.Name)
		for _, name := range g.Flags {
			writeFlag(w, c.FS.Lookup(name))
		}
	}
	if c.Example != "" {
		fmt.Fprintf(w, "\nexample:\n  %s\n", c.Example)
	}
	if c.Notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.Notes))
	}
	if len(c.groups) > 0 || c.hasFlags() {
		fmt.Fprintf(w, "\nEvery flag can also be set by an environment variable (--redis-addr is %s);\na flag on the command line wins.\n", flagenv.Name(EnvPrefix, "redis-addr"))
	}
}

func (c *Command) hasFlags() bool {
	n := 0
	c.FS.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// writeFlag writes one flag as flag.PrintDefaults does, with two dashes.
func writeFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	if typ == "value" { // a flag.Func or flag.Var: say what it takes
		typ = "string"
		if strings.HasPrefix(usage, "comma-separated") {
			typ = "list"
		}
	}
	line := "  --" + f.Name
	if typ != "" {
		line += " " + typ
	}
	usage = strings.ReplaceAll(usage, "\n", "\n        ")
	if !isZeroValue(f) {
		if typ == "string" {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		} else {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
	}
	fmt.Fprintf(w, "%s\n        %s\n", line, usage)
}

// isZeroValue reports whether the flag's default is its type's zero value,
// which the help leaves out (as flag.PrintDefaults does).
func isZeroValue(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return true
	}
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	v, ok := z.Interface().(flag.Value)
	if !ok {
		return false
	}
	defer func() { _ = recover() }() // a Value whose String needs a non-nil field
	return f.DefValue == v.String()
}

// Parse parses args, flags and positional arguments in any order, then
// fills flags not given from BAEDAL_* variables, and returns the positional
// arguments. On -h or --help it writes the help to c.Out and returns
// flag.ErrHelp. Other errors name the command and point to its help.
func (c *Command) Parse(args []string) ([]string, error) {
	positional, err := flagenv.ParseAnywhere(c.FS, args)
	if errors.Is(err, flag.ErrHelp) {
		out := c.Out
		if out == nil {
			out = os.Stdout
		}
		c.WriteHelp(out)
		return nil, flag.ErrHelp
	}
	if err != nil {
		return nil, fmt.Errorf("%w (see %s -h)", err, c.name())
	}
	return positional, flagenv.Apply(c.FS, EnvPrefix)
}

// ParseNoArgs is Parse for a command that takes no positional arguments.
func (c *Command) ParseNoArgs(args []string) error {
	positional, err := c.Parse(args)
	if err != nil {
		return err
	}
	if len(positional) > 0 {
		return fmt.Errorf("unexpected arguments: %s (see %s -h)", strings.Join(positional, " "), c.name())
	}
	return nil
}

func (c *Command) name() string { return "baedal " + c.FS.Name() }

type parseOnlyKey struct{}

// WithParseOnly returns a context under which a command stops once its
// flags and arguments are parsed and checked, before it opens a connection
// or starts anything (tests check that documented command lines parse).
func WithParseOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, parseOnlyKey{}, true)
}

// ParseOnly reports whether ctx asks commands to stop after parsing.
func ParseOnly(ctx context.Context) bool {
	v, _ := ctx.Value(parseOnlyKey{}).(bool)
	return v
}
