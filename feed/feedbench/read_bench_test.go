package feedbench

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
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
// The clients are the lean keep-alive client of `baedal bench feed`
// (sub-benchmarks push, hybrid) or net/http's (push-nethttp, hybrid-nethttp).
// It reports requests per second and the CPU time per request of this
// process (clients and server) and of redis-server, which depend much less on
// what else the machine runs; with 2 CPUs RunParallel runs 50 clients.
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
		req, err := newLeanRequest(path)
		if err != nil {
			b.Fatal(err)
		}
		clients := []struct {
			name string
			// read returns a function reading the feed once, for one
			// goroutine, and a function releasing what it holds.
			read func() (func() error, func())
		}{
			{string(strategy), func() (func() error, func()) {
				c := newLeanConn(req.addr, 30*time.Second)
				return func() error { return leanReadFeed(ctx, c, req) }, c.close
			}},
			{string(strategy) + "-nethttp", func() (func() error, func()) {
				return func() error { return getJSON(ctx, client, path, nil) }, func() {}
			}},
		}
		for _, cl := range clients {
			b.Run(cl.name, func(b *testing.B) {
				b.SetParallelism((cfg.Clients + 1) / 2)
				cpu0, redis0 := processCPU(b), redisCPU(b, rdb)
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					read, done := cl.read()
					defer done()
					for pb.Next() {
						if err := read(); err != nil {
							b.Error(err)
							return
						}
					}
				})
				elapsed := time.Since(start)
				cpu, redisUsed := processCPU(b)-cpu0, redisCPU(b, rdb)-redis0
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "go-cpu-us/req")
				b.ReportMetric(float64(redisUsed.Microseconds())/float64(b.N), "redis-cpu-us/req")
			})
		}
	}
}

// processCPU returns the user and system CPU time this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// redisCPU returns the user and system CPU time redis-server used so far
// (INFO cpu).
func redisCPU(b *testing.B, rdb *redis.Client) time.Duration {
	info, err := rdb.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, value, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			total += v
		}
	}
	return time.Duration(total * float64(time.Second))
}
