package linkstore

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/stacktest"
)

func TestConfigFlagsAndValidate(t *testing.T) {
	cases := map[string][]string{
		"links-codec":          {"--links-codec=proto+lz4"},
		"links-key-format":     {"--links-key-format=base64"},
		"links-ttl":            {"--links-ttl=10ms"},
		"links-old-namespace":  {"--links-migrate", "--links-old-key-format=raw"},
		"links-old-redis-addr": {"--links-old-redis-addr=nohost"},
		"links-shadow-workers": {"--links-shadow-workers=0"},
		"links-max-lifetime":   {"--links-max-lifetime=10ms"},
		"links-app-schemes":    {"--links-app-schemes=baedal,javascript"},
	}
	for flagName, args := range cases {
		cfg := DefaultConfig()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		cfg.Flags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), flagName) {
			t.Errorf("%v: Validate() = %v, want an error naming %s", args, err, flagName)
		}
	}
	cfg := DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg.Flags(fs)
	if err := fs.Parse([]string{"--links-migrate"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults with --links-migrate: %v", err)
	}
	if cfg.Old.Codec != CodecJSONRaw || cfg.New.Codec != CodecProtoS2Dict {
		t.Fatalf("default codecs old %s new %s", cfg.Old.Codec, cfg.New.Codec)
	}
}

func TestOpenWithSecondRedisAddress(t *testing.T) {
	rdb := testRedis(t)
	ns := stacktest.Namespace(t)
	cfg := DefaultConfig()
	cfg.New.Namespace = ns + ":new:"
	cfg.Old.Namespace = ns + ":old:"
	cfg.OldRedisAddr = rdb.Options().Addr // a second client, as for another Redis
	t.Cleanup(func() { deleteNamespace(rdb, ns) })
	svc, closeOld, err := Open(context.Background(), cfg, backend.Defaults().Redis, rdb, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeOld()
	defer svc.Close()
	if svc.Mode() != ModeOldOnly || svc.Old() == nil {
		t.Fatalf("mode %s, old store %v; want old-only with an old store", svc.Mode(), svc.Old())
	}
	rec := liveRecords(testSeed, 1)[0]
	if err := svc.Create(context.Background(), &rec); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(context.Background(), cfg.Old.Namespace+rec.ClickID.String()).Result(); n != 1 {
		t.Fatal("old-only Create did not write the old store's text key")
	}
}
