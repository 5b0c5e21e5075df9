package feedbench

import (
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/feed"
	"github.com/baedal/baedal/internal/stacktest"
)

// BenchmarkReadUserAConcurrent is the benchmark's 50-client read of user A
// (GET /api/v1/feeds over loopback HTTP, server and clients in this process)
// for one strategy at a time, small enough to profile:
//
//	go test ./benchmarks/feedbench -run '^$' -bench ReadUserAConcurrent/hybrid -benchtime 5s -cpuprofile /tmp/cpu.out
//	go tool pprof -top /tmp/cpu.out
//
// The clients are the lean keep-alive client of `baedal bench feed`
// (sub-benchmarks push, hybrid; push-floor and hybrid-floor read the
// strategy's page of user A served fixed, serveFloor) or net/http's
// (push-nethttp, hybrid-nethttp);
// push-batch=off, hybrid-batch=64x2 and the like read with the lean client
// from services with other read batching settings (feed.Config.ReadBatch,
// ReadBatchesInFlight) on the same data, to compare them in one run:
//
//	go test ./benchmarks/feedbench -run '^$' -bench 'ReadUserAConcurrent/hybrid-batch' -benchtime 3s -count 3
//
// It reports requests per second, the median and 99th percentile request
// time, and the CPU time per request of this process (clients and server)
// and of redis-server, which depend much less on what else the machine runs;
// with 2 CPUs RunParallel runs 50 clients. Batching runs also report the
// mean reads per pipeline.
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
		d, ids, err := startDeployment(ctx, cfg, strategy, "", seed, rdb, io.Discard)
		if d != nil {
			defer d.close(cfg, rdb)
		}
		if err != nil {
			b.Fatal(err)
		}
		path := compatFeedURL(d.base, ids.UserA)
		if err := getJSON(ctx, client, path, nil); err != nil {
			b.Fatal(err)
		}
		req, err := newLeanRequest(path)
		if err != nil {
			b.Fatal(err)
		}
		type benchClient struct {
			name string
			// read returns a function reading the feed once, for one
			// goroutine, and a function releasing what it holds.
			read func() (func() error, func())
			// reg, if not nil, is the service's registry: the run reports
			// its read commands per pipeline.
			reg *prometheus.Registry
		}
		lean := func(name string, req leanRequest) benchClient {
			return benchClient{name: name, read: func() (func() error, func()) {
				c := newLeanConn(req.addr, 30*time.Second)
				return func() error { return leanReadFeed(ctx, c, req) }, c.close
			}}
		}
		floorBase, stopFloor, err := serveFloor(ctx, d.base, ids.UserA)
		defer stopFloor()
		if err != nil {
			b.Fatal(err)
		}
		floorReq, err := newLeanRequest(compatFeedURL(floorBase, ids.UserA))
		if err != nil {
			b.Fatal(err)
		}
		clients := []benchClient{
			lean(string(strategy), req),
			lean(string(strategy)+"-floor", floorReq),
			{name: string(strategy) + "-nethttp", read: func() (func() error, func()) {
				return func() error { return getJSON(ctx, client, path, nil) }, func() {}
			}},
		}
		// The same data served by services with other read batching:
		// <strategy>-batch=off reads one command per call of the read
		// function (the behaviour before batching), -batch=MxN sends up to M
		// reads per pipeline, N pipelines at once.
		for _, v := range []struct {
			name            string
			batch, inFlight int
		}{{"off", -1, 1}, {"64x1", 64, 1}, {"64x2", 64, 2}, {"64x4", 64, 4}} {
			fcfg := d.svc.Config()
			fcfg.ReadBatch, fcfg.ReadBatchesInFlight = v.batch, v.inFlight
			reg := prometheus.NewRegistry()
			svc, err := feed.NewService(fcfg, d.db, rdb, nil, reg)
			if err != nil {
				b.Fatal(err)
			}
			base, stop, err := serve(ctx, svc)
			defer stop()
			if err != nil {
				b.Fatal(err)
			}
			vreq, err := newLeanRequest(compatFeedURL(base, ids.UserA))
			if err != nil {
				b.Fatal(err)
			}
			c := lean(string(strategy)+"-batch="+v.name, vreq)
			c.reg = reg
			clients = append(clients, c)
		}
		for _, cl := range clients {
			b.Run(cl.name, func(b *testing.B) {
				b.SetParallelism((cfg.Clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				cpu0, redis0 := processCPU(b), redisCPU(b, rdb)
				reads0, pipes0 := batchStats(b, cl.reg)
				var mu sync.Mutex
				var latencies []time.Duration
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					read, done := cl.read()
					defer done()
					var own []time.Duration
					for pb.Next() {
						t0 := time.Now()
						if err := read(); err != nil {
							b.Error(err)
							return
						}
						own = append(own, time.Since(t0))
					}
					mu.Lock()
					latencies = append(latencies, own...)
					mu.Unlock()
				})
				elapsed := time.Since(start)
				slices.Sort(latencies)
				if n := len(latencies); n > 0 {
					b.ReportMetric(float64(latencies[n/2].Microseconds())/1000, "p50-ms")
					b.ReportMetric(float64(latencies[n*99/100].Microseconds())/1000, "p99-ms")
				}
				cpu, redisUsed := processCPU(b)-cpu0, redisCPU(b, rdb)-redis0
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "go-cpu-us/req")
				b.ReportMetric(float64(redisUsed.Microseconds())/float64(b.N), "redis-cpu-us/req")
				if reads, pipes := batchStats(b, cl.reg); pipes > pipes0 {
					b.ReportMetric((reads-reads0)/float64(pipes-pipes0), "reads/pipeline")
				}
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

// batchStats returns the reads and pipelines the batcher of the
// service with registry reg sent so far (0, 0 for a nil registry or no
// batching).
func batchStats(b *testing.B, reg *prometheus.Registry) (reads float64, pipelines uint64) {
	if reg == nil {
		return 0, 0
	}
	families, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "baedal_feed_read_batch_reads" {
			for _, m := range f.GetMetric() {
				reads += m.GetHistogram().GetSampleSum()
				pipelines += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return reads, pipelines
}
