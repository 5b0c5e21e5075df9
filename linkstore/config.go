package linkstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
)

// Config is the click store of `baedal serve`: the new store (always), and
// an old store to migrate from when OldRedisAddr or Migrate is set.
type Config struct {
	New StoreConfig
	Old StoreConfig
	// Migrate enables the migration modes with the old store on the same
	// Redis as the new one (under Old.Namespace) unless OldRedisAddr names
	// another Redis.
	Migrate      bool
	OldRedisAddr string
	Service      ServiceConfig
}

// DefaultConfig: new store proto+s2+dict with raw keys; old store as stored
// today (json-raw values, text UUID keys).
func DefaultConfig() Config {
	return Config{
		New:     StoreConfig{}.WithDefaults(),
		Old:     StoreConfig{Codec: CodecJSONRaw, KeyFormat: KeyFormatNameText}.WithDefaults(),
		Service: DefaultServiceConfig(),
	}
}

// Flags binds every setting: --links-codec, --links-ttl, ...,
// --links-migrate, --links-old-redis-addr, --links-old-codec, ...
func (c *Config) Flags(fs *flag.FlagSet) {
	c.New.Flags(fs, "links-")
	c.Old.Flags(fs, "links-old-")
	fs.BoolVar(&c.Migrate, "links-migrate", c.Migrate, "serve clicks with the migration modes from the old store (--links-old-*) to the new one")
	fs.StringVar(&c.OldRedisAddr, "links-old-redis-addr", c.OldRedisAddr, "the old store's Redis, host:port or a redis[s]:// URL, with --redis-* credentials and TLS unless the URL has its own (implies --links-migrate; default: the same Redis)")
	c.Service.Flags(fs)
}

// Validate names the first invalid flag.
func (c Config) Validate() error {
	var errs []error
	if err := c.New.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("links-%w", err))
	}
	if c.migrating() {
		if err := c.Old.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("links-old-%w", err))
		}
		if oldCfg, newCfg := c.Old.WithDefaults(), c.New.WithDefaults(); c.OldRedisAddr == "" && oldCfg.Namespace == newCfg.Namespace && sameKeys(oldCfg, newCfg) {
			errs = append(errs, errors.New("links-old-namespace: old and new store share one Redis with the same layout and key format; give them different --links-old-namespace / --links-namespace, layouts or key formats"))
		}
		if c.OldRedisAddr != "" && backend.CheckRedisAddr(c.OldRedisAddr) != nil {
			errs = append(errs, fmt.Errorf("links-old-redis-addr: %w", backend.CheckRedisAddr(c.OldRedisAddr)))
		}
	}
	errs = append(errs, c.Service.Validate())
	return errors.Join(errs...)
}

func (c Config) migrating() bool { return c.Migrate || c.OldRedisAddr != "" }

// sameKeys reports whether two stores in one namespace would write the
// same keys: the keys layout's keys depend on the key format, the
// bucketed layout's on the bucket settings (both under "b:").
func sameKeys(a, b StoreConfig) bool {
	if a.Layout != b.Layout {
		return false
	}
	if a.Layout == LayoutBucketed {
		return true
	}
	return a.KeyFormat == b.KeyFormat
}

// withLifetime sets the stores' MaxLifetime from the service's
// --links-max-lifetime, unless set.
func (c Config) withLifetime() Config {
	if c.Service.MaxLifetime != 0 {
		for _, st := range []*StoreConfig{&c.New, &c.Old} {
			if st.MaxLifetime == 0 {
				st.MaxLifetime = c.Service.MaxLifetime
			}
		}
	}
	return c
}

// Open builds the service on the new store's primary. newReader may be nil
// (read from the primary) or the S3 replica reader. rc gives the timeouts of
// the old store's Redis client (credentials, TLS) when OldRedisAddr is set; close that client
// with the returned func after Service.Close.
func Open(ctx context.Context, cfg Config, rc backend.RedisConfig, primary redis.UniversalClient, newReader Reader, log *slog.Logger, reg prometheus.Registerer) (*Service, func(), error) {
	cfg = cfg.withLifetime()
	if err := cfg.Validate(); err != nil {
		return nil, nil, err
	}
	newStore, err := NewStore(ctx, cfg.New, primary, newReader, log)
	if err != nil {
		return nil, nil, fmt.Errorf("linkstore: new store: %w", err)
	}
	closeOld := func() {}
	var oldStore *Store
	if cfg.migrating() {
		oldClient := primary
		if cfg.OldRedisAddr != "" {
			if oldClient, err = backend.NewRedisNode(rc, cfg.OldRedisAddr); err != nil {
				return nil, nil, fmt.Errorf("links-old-redis-addr: %w", err)
			}
			closeOld = func() { oldClient.Close() }
		}
		if oldStore, err = NewStore(ctx, cfg.Old, oldClient, nil, log); err != nil {
			closeOld()
			return nil, nil, fmt.Errorf("linkstore: old store: %w", err)
		}
	}
	svc, err := NewService(ctx, cfg.Service, oldStore, newStore, primary, log, reg)
	if err != nil {
		closeOld()
		return nil, nil, err
	}
	return svc, closeOld, nil
}
