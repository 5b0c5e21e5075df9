package flagenv

import (
	"flag"
	"io"
	"strings"
	"testing"
)

func TestApplyEnvFillsOnlyFlagsNotGiven(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	addr := fs.String("redis-addr", "default", "")
	size := fs.Int("pool-size", 1, "")
	if err := fs.Parse([]string{"-pool-size", "7"}); err != nil {
		t.Fatal(err)
	}
	t.Setenv("BAEDAL_REDIS_ADDR", "127.0.0.1:1")
	t.Setenv("BAEDAL_POOL_SIZE", "99")
	if err := Apply(fs, "BAEDAL"); err != nil {
		t.Fatal(err)
	}
	if *addr != "127.0.0.1:1" {
		t.Errorf("redis-addr = %q, want the env value", *addr)
	}
	if *size != 7 {
		t.Errorf("pool-size = %d, want the command-line value 7", *size)
	}
}

func TestApplyEnvNamesTheVariableOnBadValue(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Int("pool-size", 1, "")
	_ = fs.Parse(nil)
	t.Setenv("BAEDAL_POOL_SIZE", "many")
	err := Apply(fs, "BAEDAL")
	if err == nil || !strings.Contains(err.Error(), "BAEDAL_POOL_SIZE") {
		t.Fatalf("err = %v, want one naming BAEDAL_POOL_SIZE", err)
	}
}

func TestParseAnywhereTakesFlagsInAnyPosition(t *testing.T) {
	cases := []struct {
		args       []string
		layout     string
		json       bool
		positional string
	}{
		{[]string{"q=pizza", "lat=37.5", "--layout", "nested"}, "nested", false, "q=pizza lat=37.5"},
		{[]string{"--layout", "nested", "q=pizza", "--json", "lat=37.5"}, "nested", true, "q=pizza lat=37.5"},
		{[]string{"q=pizza", "--layout=nested", "--json"}, "nested", true, "q=pizza"},
		{[]string{"--json", "--", "--layout", "x"}, "split", true, "--layout x"},
		{nil, "split", false, ""},
	}
	for _, tc := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		layout := fs.String("layout", "split", "")
		asJSON := fs.Bool("json", false, "")
		pos, err := ParseAnywhere(fs, tc.args)
		if err != nil || *layout != tc.layout || *asJSON != tc.json || strings.Join(pos, " ") != tc.positional {
			t.Errorf("%q: layout %q json %v positional %q err %v; want %q %v %q", tc.args, *layout, *asJSON, pos, err, tc.layout, tc.json, tc.positional)
		}
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("n", 0, "")
	if _, err := ParseAnywhere(fs, []string{"x", "--n", "abc"}); err == nil {
		t.Error("a bad flag value after a positional argument was accepted")
	}
}
