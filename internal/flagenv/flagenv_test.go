package flagenv

import (
	"flag"
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
