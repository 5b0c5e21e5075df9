package bench

import (
	"flag"
	"fmt"
)

// Config holds the flags every benchmark command shares, so that all
// benchmarks take the same --profile, --rounds, --seed and --report-dir.
// A benchmark embeds it in its own config and calls Flags and Validate.
// The zero value is valid: quick profile, profile-chosen rounds, seed 1,
// reports in "reports".
type Config struct {
	Profile   Profile // run size: quick (default) or full
	Rounds    int     // interleaved ABBA rounds; 0 means the benchmark's default for the profile
	Seed      int64   // seed of every generated data set and random choice; 0 means 1
	ReportDir string  // directory of <name>.html and <name>.json; "" means "reports"
}

// Defaults for a zero Config.
const (
	DefaultReportDir = "reports"
	DefaultSeed      = 1
)

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.Profile == "" {
		c.Profile = ProfileQuick
	}
	if c.Seed == 0 {
		c.Seed = DefaultSeed
	}
	if c.ReportDir == "" {
		c.ReportDir = DefaultReportDir
	}
	return c
}

// Validate reports the first invalid field, naming its flag and the
// allowed values.
func (c Config) Validate() error {
	c = c.WithDefaults()
	if _, err := ParseProfile(string(c.Profile)); err != nil {
		return fmt.Errorf("--profile: %w", err)
	}
	if c.Rounds < 0 || c.Rounds > 1000 {
		return fmt.Errorf("bench: --rounds is %d, want 0 (the profile's default) to 1000", c.Rounds)
	}
	return nil
}

// Flags binds the fields to fs as --profile, --rounds, --seed and
// --report-dir, with the defaults filled in.
func (c *Config) Flags(fs *flag.FlagSet) {
	*c = c.WithDefaults()
	fs.Var(&c.Profile, "profile", "run size: quick (small, for CI and laptops) or full (the published figures)")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "interleaved ABBA rounds of baseline and ours (0: the profile's default)")
	fs.Int64Var(&c.Seed, "seed", c.Seed, "seed of generated data and random choices")
	fs.StringVar(&c.ReportDir, "report-dir", c.ReportDir, "directory for <name>.html and <name>.json")
}

// RoundsFor returns Rounds when set, otherwise quick or full by profile.
func (c Config) RoundsFor(quick, full int) int {
	if c.Rounds > 0 {
		return c.Rounds
	}
	return Pick(c.WithDefaults().Profile, quick, full)
}
