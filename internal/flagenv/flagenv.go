// Package flagenv lets every command-line flag also be set by an environment
// variable: flag "redis-addr" reads BAEDAL_REDIS_ADDR.
//
// Invariant: a flag given on the command line always wins over the environment.
package flagenv

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// Name returns the environment variable for a flag: prefix + "_" + the flag
// name in upper case with dashes as underscores.
func Name(prefix, flagName string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Apply sets every flag of fs that was not given on the command line from its
// environment variable, if that is set. Call it after fs.Parse. An invalid
// value is an error naming the variable.
func Apply(fs *flag.FlagSet, prefix string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || given[f.Name] {
			return
		}
		name := Name(prefix, f.Name)
		if v, ok := os.LookupEnv(name); ok {
			if serr := fs.Set(f.Name, v); serr != nil {
				err = fmt.Errorf("env %s: invalid value %q: %w", name, v, serr)
			}
		}
	})
	return err
}

// ParseAnywhere parses args with fs, flags and positional arguments in any
// order ("q=pizza --layout nested" and "--layout nested q=pizza" are the
// same), and returns the positional arguments in order. flag.Parse stops at
// the first positional argument; this parses on after it. "--" ends the
// flags: everything after it is positional.
func ParseAnywhere(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
