package backend

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/osapi"
)

// OpenSearchVersion asks the first of cfg.URLs for its version (GET /):
// "3.8.0" for OpenSearch, with the distribution prefixed when it is not
// "opensearch".
func OpenSearchVersion(ctx context.Context, cfg OpenSearchConfig) (string, error) {
	client, err := OpenOpenSearch(cfg)
	if err != nil {
		return "", err
	}
	var info struct {
		Version struct {
			Distribution string `json:"distribution"`
			Number       string `json:"number"`
		} `json:"version"`
	}
	if err := osapi.New(client).Do(ctx, http.MethodGet, "/", nil, &info); err != nil {
		return "", fmt.Errorf("backend: opensearch version from %s: %w", cfg.URLs[0], err)
	}
	if d := info.Version.Distribution; d != "" && d != "opensearch" {
		return d + " " + info.Version.Number, nil
	}
	return info.Version.Number, nil
}

// RedisVersion asks the Redis at cfg.Addr for its version (INFO server).
func RedisVersion(ctx context.Context, cfg RedisConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	rdb, err := NewRedis(cfg, cfg.Addr)
	if err != nil {
		return "", err
	}
	defer rdb.Close()
	return redisVersion(ctx, rdb, RedactRedisAddr(cfg.Addr))
}

func redisVersion(ctx context.Context, rdb redis.UniversalClient, addr string) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("backend: redis version from %s: %w", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("backend: redis version from %s: no redis_version in INFO server", addr)
}

// PostgresVersion asks the PostgreSQL at cfg.URL for its version
// (SHOW server_version).
func PostgresVersion(ctx context.Context, cfg PostgresConfig) (string, error) {
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	pc, err := pgx.ParseConfig(cfg.URL)
	if err != nil {
		return "", fmt.Errorf("postgres-url: cannot parse: %s", redactedError(err, cfg.URL))
	}
	pc.ConnectTimeout = cfg.ConnectTimeout
	conn, err := pgx.ConnectConfig(ctx, pc)
	if err != nil {
		return "", fmt.Errorf("backend: postgres version: %s", redactedError(err, cfg.URL))
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("backend: postgres version: %s", redactedError(err, cfg.URL))
	}
	return v, nil
}
