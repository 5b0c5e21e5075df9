package feedbench

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/internal/stacktest"
)

// BenchmarkReadUserAConcurrent is the benchmark's 50-client read of user A
// (GET /api/v1/feeds over loopback HTTP, server and clients in this process)
// for one strategy at a time, small enough to profile:
//
//	go test ./feed/feedbench -run '^$' -bench ReadUserAConcurrent/hybrid -benchtime 5s -cpuprofile /tmp/cpu.out
//	go tool pprof -top /tmp/cpu.out
//
// It reports requests per second; with 2 CPUs RunParallel runs 50 clients.
func BenchmarkReadUserAConcurrent(b *testing.B) {
	st := stacktest.Require(b)
	cfg := Defaults()
	cfg.PostgresURL, cfg.RedisAddr = st.PostgresURL, st.RedisAddr
	ns := stacktest.Namespace(b)
	cfg.DatabasePrefix, cfg.KeyPrefix = ns, ns+":"
	cfg.EnsureDefaults()
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, PoolSize: 128})
	defer rdb.Close()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second,
		DialContext: (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
	}}
	defer client.CloseIdleConnections()
	// Deployments start once, outside the sub-benchmarks: their functions
	// run again for every b.N the framework tries.
	seed := feed.SeedConfig{Preset: feed.PresetExperiment, Users: cfg.Users, Seed: 1, Now: time.Now(), Reset: true}
	for _, strategy := range []feed.Strategy{feed.StrategyPush, feed.StrategyHybrid} {
		d, ids, err := startDeployment(ctx, cfg, strategy, seed, rdb, io.Discard)
		if d != nil {
			defer d.close(cfg, rdb)
		}
		if err != nil {
			b.Fatal(err)
		}
		path := d.base + "/api/v1/feeds?user-id=" + strconv.FormatInt(ids.UserA, 10)
		if err := getJSON(ctx, client, path, nil); err != nil {
			b.Fatal(err)
		}
		b.Run(string(strategy), func(b *testing.B) {
			b.SetParallelism((cfg.Clients + 1) / 2)
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := getJSON(ctx, client, path, nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
		})
	}
}
