package redisread

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/replica"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_get:calls=10,usec=50,usec_per_call=5.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_zrevrange:calls=4,usec=100,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=700,usec_per_call=100.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_PING:calls=3,usec=3,usec_per_call=1.00\r\n" +
		"cmdstat_broken:calls=x,usec=9\r\n" +
		"not a stat line\r\n"
	got := parseCommandStats(info, samplerCommands)
	want := commandTotals{calls: 14, usec: 150}
	if got != want {
		t.Fatalf("parseCommandStats = %+v, want %+v (info and ping skipped, broken line ignored)", got, want)
	}
	if got := parseCommandStats(info, nil); got.calls != 24 || got.usec != 853 {
		t.Fatalf("without skip: got %+v, want calls 24 usec 853", got)
	}
}

func FuzzParseCommandStats(f *testing.F) {
	f.Add("cmdstat_get:calls=10,usec=50,usec_per_call=5.00\r\n")
	f.Add("cmdstat_:calls=,usec=\n")
	f.Add("cmdstat_x:calls=18446744073709551615,usec=1\ncmdstat_y:calls=1,usec=1\n")
	f.Add(":::,,,===")
	f.Fuzz(func(t *testing.T, info string) {
		got := parseCommandStats(info, samplerCommands)
		if !strings.Contains(info, "cmdstat_") && got != (commandTotals{}) {
			t.Fatalf("no cmdstat_ line but got %+v", got)
		}
	})
}

func TestEstimate(t *testing.T) {
	prev := commandTotals{calls: 1000, usec: 10_000}
	cur := commandTotals{calls: 3000, usec: 50_000} // 2000 calls, 40000 µs → 20 µs each
	est, ok := estimate(prev, cur, 500*time.Millisecond)
	if !ok {
		t.Fatal("estimate: ok false for growing counters")
	}
	if est.serviceTime != 20*time.Microsecond {
		t.Errorf("service time = %s, want 20µs", est.serviceTime)
	}
	if est.rate != 4000 {
		t.Errorf("rate = %v, want 4000/s", est.rate)
	}
	for name, c := range map[string]commandTotals{
		"no new calls":     {calls: 1000, usec: 10_000},
		"counter reset":    {calls: 10, usec: 5},
		"usec went back":   {calls: 2000, usec: 9_000},
		"calls went back":  {calls: 999, usec: 20_000},
		"reset both to 0s": {},
	} {
		if _, ok := estimate(prev, c, time.Second); ok {
			t.Errorf("%s: estimate ok, want not ok", name)
		}
	}
}

func TestServerFailed(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"nil", ctx, nil, false},
		{"redis nil", ctx, redis.Nil, false},
		{"wrapped redis nil", ctx, fmt.Errorf("get: %w", redis.Nil), false},
		{"wrong type reply", ctx, replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{"loading", ctx, replyError("LOADING Redis is loading the dataset in memory"), true},
		{"masterdown", ctx, replyError("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), true},
		{"busy script", ctx, replyError("BUSY Redis is busy running a script."), true},
		{"max clients", ctx, replyError("ERR max number of clients reached"), true},
		{"connection refused", ctx, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, true},
		{"eof", ctx, io.EOF, true},
		{"caller cancelled", cancelled, context.Canceled, false},
	}
	for _, c := range cases {
		if got := serverFailed(c.ctx, c.err); got != c.want {
			t.Errorf("%s: serverFailed(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// replyError is a Redis error reply, as go-redis returns it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// The Redis path ejects stalled replicas unless told otherwise; a negative
// SlowFactor turns it off, an explicit one is kept.
func TestConfigSlowFactorDefault(t *testing.T) {
	for _, c := range []struct{ set, want float64 }{{0, DefaultSlowFactor}, {-1, -1}, {4, 4}} {
		if got := (Config{Policy: replica.Config{SlowFactor: c.set}}).WithDefaults().Policy.SlowFactor; got != c.want {
			t.Errorf("SlowFactor %v: WithDefaults gives %v, want %v", c.set, got, c.want)
		}
	}
}

// --…-psi-rank turns peak cost off, also when the flags were bound from
// the defaults (which turn it on).
func TestPsiRankFlagUndoesPeakCost(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("redisread", flag.ContinueOnError)
	c.Flags(fs, "r-")
	if !c.WithDefaults().Policy.PeakCost {
		t.Fatal("default: PeakCost off, want on")
	}
	// A peak-cost flag would be overridden by psi-rank's value: only one
	// knob is offered.
	if fs.Lookup("r-peak-cost") != nil {
		t.Fatal("a -r-peak-cost flag is offered, which WithDefaults ignores")
	}
	if err := fs.Parse([]string{"-r-psi-rank"}); err != nil {
		t.Fatal(err)
	}
	if c.WithDefaults().Policy.PeakCost {
		t.Fatal("-r-psi-rank: PeakCost still on")
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{SampleInterval: time.Millisecond}, "SampleInterval"},
		{Config{SampleTimeout: -time.Second}, "SampleTimeout"},
		{Config{EjectedPingInterval: time.Millisecond}, "EjectedPingInterval: got 1ms, allowed: 0 (off) or at least 5ms"},
		{Config{EjectedPingInterval: -time.Second}, "EjectedPingInterval"},
		{Config{Policy: replica.Config{Policy: "fastest"}}, "allowed: c3, round-robin, random, lowest-ping"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error naming %q", c.cfg, err, c.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v, want valid (defaults)", err)
	}
	if err := (Config{SampleInterval: -1}).Validate(); err != nil {
		t.Errorf("negative SampleInterval (off): %v, want valid", err)
	}
}

func TestNoReplicasReadsThePrimary(t *testing.T) {
	// No server needed: the primary address is unreachable and the error
	// must come from it, with no policy involved.
	primary := redis.NewClient(&redis.Options{Addr: deadAddr(t), DialTimeout: time.Second, MaxRetries: -1})
	defer primary.Close()
	c, err := New(primary, nil, Config{}, nil, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var used string
	err = c.Do(context.Background(), func(ctx context.Context, rdb *redis.Client) error {
		used = rdb.Options().Addr
		return nil
	})
	if err != nil || used != primary.Options().Addr {
		t.Fatalf("Do without replicas ran on %q (err %v), want the primary %q", used, err, primary.Options().Addr)
	}
	if c.Policy() != nil || len(c.Status().Replicas) != 0 {
		t.Fatalf("no replicas but a policy or replica status: %+v", c.Status())
	}
}

func TestMetricsAreRegisteredPerReplica(t *testing.T) {
	primary := redis.NewClient(&redis.Options{Addr: deadAddr(t), MaxRetries: -1})
	r1 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	r2 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:2", MaxRetries: -1})
	defer primary.Close()
	defer r1.Close()
	defer r2.Close()
	reg := prometheus.NewRegistry()
	c, err := New(primary, []*redis.Client{r1, r2}, Config{SampleInterval: -1, Path: "feed"}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// 9 per-replica metrics and 4 ejection causes × 2 replicas + the
	// fallback counter.
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range families {
		n += len(f.GetMetric())
	}
	if n != 27 {
		t.Fatalf("collected %d metrics, want 27", n)
	}
	// The same path twice on one registry is refused with the path named.
	_, err = New(primary, []*redis.Client{r1, r2}, Config{SampleInterval: -1, Path: "feed"}, nil, reg)
	if err == nil || !strings.Contains(err.Error(), `"feed"`) {
		t.Fatalf("second registration of path feed: %v, want an error naming it", err)
	}
}

// deadAddr returns a loopback address nothing listens on.
func deadAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
