package flaghelp

import (
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func newTestCommand() *Command {
	c := New("thing", "baedal thing [flags] ARG", "Do the thing.", "baedal thing --b-flag 2 x")
	c.Group("beta", func(fs *flag.FlagSet) {
		fs.Int("b-flag", 1, "b's flag")
		fs.Duration("a-timeout", time.Second, "a timeout")
	})
	c.Group("alpha", func(fs *flag.FlagSet) { fs.String("z-name", "", "a name") })
	c.FS.Bool("verbose", false, "say more")
	c.Group("beta", func(fs *flag.FlagSet) { fs.String("c-mode", "fast", "the mode") })
	return c
}

func TestGroupsKeepBindingOrderAndSortWithin(t *testing.T) {
	got := newTestCommand().Groups()
	want := []Group{{"beta", []string{"a-timeout", "b-flag", "c-mode"}}, {"alpha", []string{"z-name"}}, {General, []string{"verbose"}}}
	if len(got) != len(want) {
		t.Fatalf("groups %v, want %v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || strings.Join(got[i].Flags, ",") != strings.Join(want[i].Flags, ",") {
			t.Errorf("group %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestHelpOnDashH(t *testing.T) {
	for _, arg := range []string{"-h", "--help", "-help"} {
		c := newTestCommand()
		var out strings.Builder
		c.Out = &out
		_, err := c.Parse([]string{"x", arg})
		if !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%s: err %v, want flag.ErrHelp", arg, err)
		}
		h := out.String()
		for _, want := range []string{
			"usage: baedal thing [flags] ARG\n\nDo the thing.\n",
			"\nbeta flags:\n  --a-timeout duration\n        a timeout (default 1s)\n  --b-flag int\n        b's flag (default 1)\n  --c-mode string\n        the mode (default \"fast\")\n",
			"\nalpha flags:\n  --z-name string\n        a name\n",
			"\ngeneral flags:\n  --verbose\n        say more\n",
			"\nexample:\n  baedal thing --b-flag 2 x\n",
			"BAEDAL_REDIS_ADDR",
		} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: help lacks %q:\n%s", arg, want, h)
			}
		}
	}
}

func TestParseErrorsNameTheHelp(t *testing.T) {
	c := newTestCommand()
	if _, err := c.Parse([]string{"--nope"}); err == nil || !strings.Contains(err.Error(), "see baedal thing -h") {
		t.Errorf("unknown flag: %v", err)
	}
	if err := newTestCommand().ParseNoArgs([]string{"extra"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments: extra") {
		t.Errorf("positional to a command without: %v", err)
	}
	t.Setenv("BAEDAL_B_FLAG", "7")
	c = newTestCommand()
	pos, err := c.Parse([]string{"x", "--c-mode", "slow"})
	if err != nil || len(pos) != 1 || c.FS.Lookup("b-flag").Value.String() != "7" {
		t.Errorf("env: pos %v err %v b-flag %s", pos, err, c.FS.Lookup("b-flag").Value)
	}
}

func TestParseOnly(t *testing.T) {
	if ParseOnly(context.Background()) || !ParseOnly(WithParseOnly(context.Background())) {
		t.Error("ParseOnly does not follow WithParseOnly")
	}
}
