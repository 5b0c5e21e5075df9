package bench

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestConfigFlagsAndDefaults(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("bench search", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if c != (Config{Profile: ProfileQuick, Seed: 1, ReportDir: "reports"}) {
		t.Errorf("defaults %+v", c)
	}
	if got := c.RoundsFor(2, 8); got != 2 {
		t.Errorf("quick RoundsFor(2, 8) = %d", got)
	}
	if err := fs.Parse([]string{"--profile", "full", "--rounds", "5", "--seed", "42", "--report-dir", "/tmp/r"}); err != nil {
		t.Fatal(err)
	}
	if c != (Config{Profile: ProfileFull, Rounds: 5, Seed: 42, ReportDir: "/tmp/r"}) {
		t.Errorf("parsed %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if got := c.RoundsFor(2, 8); got != 5 {
		t.Errorf("RoundsFor with --rounds 5 = %d", got)
	}
	c.Rounds = 0
	if got := c.RoundsFor(2, 8); got != 8 {
		t.Errorf("full RoundsFor(2, 8) = %d", got)
	}
}

func TestConfigValidateNamesTheFlag(t *testing.T) {
	for _, c := range []struct {
		config Config
		want   []string
	}{
		{Config{Profile: "medium"}, []string{"--profile", "quick, full", `"medium"`}},
		{Config{Rounds: -1}, []string{"--rounds", "-1", "0", "1000"}},
		{Config{Rounds: 5000}, []string{"--rounds", "5000"}},
	} {
		err := c.config.Validate()
		if err == nil {
			t.Errorf("%+v: no error", c.config)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%+v: error %q lacks %q", c.config, err, w)
			}
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}
