package backend

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// UnavailableError marks an error of a backend that cannot answer now: it
// could not be dialled, its connection pool timed out waiting, or it said it
// is loading or has no primary. It implements api.BackendUnavailable, so
// every route answers it 503 with Retry-After naming the backend.
type UnavailableError struct {
	Backend string // "redis", "postgresql"
	Err     error
}

func (e *UnavailableError) Error() string { return e.Backend + " unavailable: " + e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// UnavailableBackend names the backend (api.BackendUnavailable).
func (e *UnavailableError) UnavailableBackend() string { return e.Backend }

// redisDialer dials like go-redis's default (timeout, keep-alive, TLS when
// tlsCfg is set: go-redis leaves TLS to a custom dialer) and marks a failed
// dial as Redis being unavailable.
func redisDialer(timeout time.Duration, tlsCfg *tls.Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, &UnavailableError{Backend: "redis", Err: err}
		}
		if tlsCfg == nil {
			return c, nil
		}
		cfg := tlsCfg
		if cfg.ServerName == "" {
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		// A handshake that fails is a configuration error (a wrong CA,
		// a server without TLS), not an unavailable Redis.
		tc := tls.Client(c, cfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("backend: redis TLS handshake with %s: %w", addr, err)
		}
		return tc, nil
	}
}

// redisUnavailableHook marks the command errors that mean Redis cannot
// answer now (pool timeout, LOADING, MASTERDOWN, TRYAGAIN, a read-only
// replica during a failover) as UnavailableError. Other errors, redis.Nil
// included, are left as they are.
type redisUnavailableHook struct{}

func (redisUnavailableHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (redisUnavailableHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if redisUnavailable(err) {
			err = &UnavailableError{Backend: "redis", Err: err}
			cmd.SetErr(err)
		}
		return err
	}
}

func (redisUnavailableHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if redisUnavailable(err) {
			err = &UnavailableError{Backend: "redis", Err: err}
			for _, c := range cmds {
				if redisUnavailable(c.Err()) {
					c.SetErr(&UnavailableError{Backend: "redis", Err: c.Err()})
				}
			}
		}
		return err
	}
}

func redisUnavailable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) {
		return false
	}
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return false // marked already (a failed dial)
	}
	if errors.Is(err, redis.ErrPoolTimeout) {
		return true
	}
	msg := err.Error()
	for _, prefix := range []string{"LOADING ", "MASTERDOWN ", "TRYAGAIN ", "READONLY ", "CLUSTERDOWN "} {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}

// postgresDialer wraps pgx's dial function so that a failed dial marks
// PostgreSQL as unavailable.
func postgresDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, &UnavailableError{Backend: "postgresql", Err: err}
		}
		return c, nil
	}
}
