package redisread

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/replica"
)

// The shared test stack has no Redis replicas, so this package starts a
// dedicated stack with two (once, for all its tests) and stops it in TestMain.
var replicaStack struct {
	once sync.Once
	dir  string
	st   *localstack.State
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dir := replicaStack.dir; dir != "" {
		if err := localstack.Down(dir, os.Stderr); err != nil {
			fmt.Fprintf(os.Stderr, "redisread: stop the replica stack in %s: %v\n", dir, err)
		}
		if code == 0 {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "redisread: kept the replica stack's logs in %s/logs\n", dir)
		}
	}
	os.Exit(code)
}

// requireReplicaStack returns a running stack with a Redis primary and two
// replicas, or fails (CI) / skips (locally).
func requireReplicaStack(t *testing.T) *localstack.State {
	t.Helper()
	replicaStack.once.Do(func() {
		dir, err := os.MkdirTemp("", "baedal-redisread-")
		if err != nil {
			replicaStack.err = err
			return
		}
		replicaStack.dir = dir
		if err := os.Chmod(dir, 0o755); err != nil { // postgres runs as the postgres user
			replicaStack.err = err
			return
		}
		cfg := localstack.Defaults()
		cfg.StateDir, cfg.PortBase, cfg.RedisReplicas, cfg.OpenSearchHeap = dir, 0, 2, "256m"
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		replicaStack.st, replicaStack.err = localstack.Up(ctx, cfg, os.Stderr)
	})
	if replicaStack.err != nil {
		testenv.Unavailable(t, replicaStack.err)
	}
	return replicaStack.st
}

func testRedisConfig(st *localstack.State) backend.RedisConfig {
	rc := backend.Defaults().Redis
	rc.Addr = st.RedisAddr
	rc.ReplicaAddrs = st.RedisReplicaAddrs
	rc.ReadTimeout = time.Second
	rc.DialTimeout = 500 * time.Millisecond
	return rc
}

// openWithKey opens a ReadClient with cfg (closed when the test ends),
// writes key = "v" through its primary and waits until the 3 replicas
// (the stack's two and an extra one) have it.
func openWithKey(t *testing.T, ctx context.Context, rc backend.RedisConfig, cfg Config, key string) *ReadClient {
	t.Helper()
	c, err := Open(rc, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Primary().Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := c.Primary().Wait(ctx, 3, 10*time.Second).Result(); err != nil || n < 3 {
		t.Fatalf("WAIT for 3 replicas: %d, %v", n, err)
	}
	return c
}

// commandCalls returns INFO commandstats calls of cmd on one server.
func commandCalls(t *testing.T, ctx context.Context, addr, cmd string) uint64 {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats on %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if strings.HasPrefix(line, "cmdstat_"+cmd+":") {
			return parseCommandStats(line, nil).calls
		}
	}
	return 0
}

func TestReadsGoToReplicasAndWritesToPrimary(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := stacktest.Namespace(t)
	for _, policy := range replica.PolicyNames {
		t.Run(string(policy), func(t *testing.T) {
			c, err := Open(testRedisConfig(st), Config{Policy: replica.Config{Policy: policy}, Path: "test-" + string(policy)}, nil, prometheus.NewRegistry())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			key := ns + ":" + string(policy)
			if err := c.Primary().Set(ctx, key, "v-"+string(policy), time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if n, err := c.Primary().Wait(ctx, 2, 5*time.Second).Result(); err != nil || n != 2 {
				t.Fatalf("WAIT for 2 replicas: %d, %v", n, err)
			}
			getsBefore := map[string]uint64{st.RedisAddr: commandCalls(t, ctx, st.RedisAddr, "get")}
			for _, a := range st.RedisReplicaAddrs {
				getsBefore[a] = commandCalls(t, ctx, a, "get")
			}
			const reads = 60
			used := map[string]int{}
			for range reads {
				var addr string
				err := c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
					addr = rdb.Options().Addr
					v, err := rdb.Get(ctx, key).Result()
					if err == nil && v != "v-"+string(policy) {
						return fmt.Errorf("got %q", v)
					}
					return err
				})
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				used[addr]++
			}
			if used[st.RedisAddr] != 0 {
				t.Fatalf("%d reads went to the primary, want 0 (used: %v)", used[st.RedisAddr], used)
			}
			// The servers' own counters agree: GETs ran on the replicas.
			if d := commandCalls(t, ctx, st.RedisAddr, "get") - getsBefore[st.RedisAddr]; d != 0 {
				t.Fatalf("primary ran %d GETs, want 0", d)
			}
			var onReplicas uint64
			for _, a := range st.RedisReplicaAddrs {
				onReplicas += commandCalls(t, ctx, a, "get") - getsBefore[a]
			}
			if onReplicas != reads {
				t.Fatalf("replicas ran %d GETs, want %d", onReplicas, reads)
			}
			if policy == replica.PolicyRoundRobin && (used[st.RedisReplicaAddrs[0]] != reads/2 || used[st.RedisReplicaAddrs[1]] != reads/2) {
				t.Fatalf("round-robin split %v, want %d on each replica", used, reads/2)
			}
			// A write on a replica is refused: the client must use Primary.
			err = c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error { return rdb.Set(ctx, key, "x", 0).Err() })
			if err == nil || !strings.Contains(err.Error(), "READONLY") {
				t.Fatalf("SET through Do: %v, want a READONLY reply from a replica", err)
			}
		})
	}
}

func TestSamplerFeedsServiceTimeQueueAndPing(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Open(testRedisConfig(st), Config{SampleInterval: 20 * time.Millisecond}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := stacktest.Namespace(t)
	if err := c.Primary().Set(ctx, key, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// Keep both replicas busy so every sample sees new commands.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		for _, addr := range st.RedisReplicaAddrs {
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			rdb.Get(ctx, key)
			rdb.Close()
		}
		status := c.Status()
		ready := true
		for _, r := range status.Replicas {
			ready = ready && r.ServiceTime > 0 && r.Ping > 0
		}
		if ready {
			for _, r := range status.Replicas {
				if r.ServiceTime > 10*time.Millisecond || r.Ping > time.Second {
					t.Fatalf("replica %s: service time %s, ping %s: implausible for an idle loopback server", r.Addr, r.ServiceTime, r.Ping)
				}
			}
			return
		}
	}
	t.Fatalf("after 3s the sampler has not reported service time and ping for every replica: %+v", c.Status().Replicas)
}

func TestDownReplicaIsSkippedAndReadRetried(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := stacktest.Namespace(t)
	primary := redis.NewClient(&redis.Options{Addr: st.RedisAddr})
	defer primary.Close()
	if err := primary.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := primary.Wait(ctx, 2, 5*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	dead := deadAddr(t)
	for _, policy := range replica.PolicyNames {
		t.Run(string(policy), func(t *testing.T) {
			// Replica 0 is down (connection refused); the live replicas follow.
			rc := testRedisConfig(st)
			rc.ReplicaAddrs = append([]string{dead}, st.RedisReplicaAddrs...)
			c, err := Open(rc, Config{Policy: replica.Config{Policy: policy}, SampleInterval: -1}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			const reads = 30
			var sawDead int
			for i := range reads {
				var tried []string
				err := c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
					tried = append(tried, rdb.Options().Addr)
					v, err := rdb.Get(ctx, key).Result()
					if err == nil && v != "v" {
						return fmt.Errorf("got %q, want v", v)
					}
					return err
				})
				if err != nil {
					t.Fatalf("read %d failed although two replicas are up: %v (tried %v)", i, err, tried)
				}
				last := tried[len(tried)-1]
				if last == dead || last == st.RedisAddr {
					t.Fatalf("read %d answered by %s, want a live replica (tried %v)", i, last, tried)
				}
				if tried[0] == dead {
					sawDead++
				}
			}
			if sawDead == 0 {
				t.Fatalf("the down replica was never tried: the test proved nothing")
			}
			stats := c.Status().Replicas
			if stats[0].Failures == 0 || stats[0].Outstanding != 0 {
				t.Fatalf("down replica: %d failures, %d outstanding; want failures > 0 and 0 outstanding", stats[0].Failures, stats[0].Outstanding)
			}
			// After failing it backs off: far fewer first tries than its share.
			if sawDead > reads/3 {
				t.Fatalf("down replica was tried first %d of %d times, want it backed off (≤ %d)", sawDead, reads, reads/3)
			}
		})
	}
}

func TestAllReplicasDownFallsBackToPrimary(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	key := stacktest.Namespace(t)
	rc := testRedisConfig(st)
	rc.ReplicaAddrs = []string{deadAddr(t), deadAddr(t)}
	c, err := Open(rc, Config{SampleInterval: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Primary().Set(ctx, key, "p", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	var v string
	err = c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
		var err error
		v, err = rdb.Get(ctx, key).Result()
		return err
	})
	if err != nil || v != "p" {
		t.Fatalf("read with every replica down: %q, %v; want p from the primary", v, err)
	}
	if n := c.Status().PrimaryReads; n != 1 {
		t.Fatalf("primary reads = %d, want 1", n)
	}
	// redis.Nil is an answer, not a failure: it is returned as is.
	err = c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error { return rdb.Get(ctx, key+":missing").Err() })
	if !errors.Is(err, redis.Nil) {
		t.Fatalf("missing key: %v, want redis.Nil", err)
	}

	noFallback, err := Open(rc, Config{SampleInterval: -1, NoPrimaryFallback: true}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer noFallback.Close()
	err = noFallback.Do(ctx, func(ctx context.Context, rdb *redis.Client) error { return rdb.Get(ctx, key).Err() })
	if !errors.Is(err, ErrAllFailed) || !strings.Contains(err.Error(), rc.ReplicaAddrs[0]) || !strings.Contains(err.Error(), rc.ReplicaAddrs[1]) {
		t.Fatalf("NoPrimaryFallback with every replica down: %v, want ErrAllFailed naming both replicas", err)
	}
}

// TestKilledReplicaMidLoadLosesNoRead starts one more real replica of the
// stack's primary, reads through it under load, SIGKILLs it, and checks that
// every read still succeeds (retried on the live replica).
func TestKilledReplicaMidLoadLosesNoRead(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extra := startExtraReplica(t, st.RedisAddr)
	key := stacktest.Namespace(t)
	rc := testRedisConfig(st)
	rc.ReplicaAddrs = []string{extra.addr, st.RedisReplicaAddrs[0]}
	c := openWithKey(t, ctx, rc, Config{Policy: replica.Config{Policy: replica.PolicyRoundRobin}, SampleInterval: -1}, key)
	var (
		mu     sync.Mutex
		reads  int
		errs   []error
		killed = make(chan struct{})
		wg     sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := 0
			for after < 50 {
				select {
				case <-killed:
					after++
				default:
				}
				err := c.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
					v, err := rdb.Get(ctx, key).Result()
					if err == nil && v != "v" {
						return fmt.Errorf("got %q", v)
					}
					return err
				})
				mu.Lock()
				reads++
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(extra.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	extra.wait()
	close(killed)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d reads failed after SIGKILL of a replica, first: %v", len(errs), reads, errs[0])
	}
	if f := c.Status().Replicas[0].Failures; f == 0 {
		t.Fatalf("killed replica has 0 failures: it was not in use when killed (reads %d)", reads)
	}
}

type extraReplica struct {
	addr string
	pid  int
	wait func()
}

// startExtraReplica runs one more redis-server replica of primary on a free
// loopback port, without persistence, and stops it when the test ends.
func startExtraReplica(t *testing.T, primary string) extraReplica {
	t.Helper()
	host, port, _ := strings.Cut(primary, ":")
	addr := deadAddr(t)
	_, myPort, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	cmd := exec.Command("redis-server", "--port", myPort, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--replicaof", host, port, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		testenv.Unavailable(t, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
	})
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := rdb.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("extra replica on %s (pid %s) did not sync: %v", addr, strconv.Itoa(cmd.Process.Pid), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return extraReplica{addr: addr, pid: cmd.Process.Pid, wait: func() { <-done }}
}

// TestReadHedgesAStoppedReplica reads through Read from a real replica that
// is stopped (SIGSTOP) mid-run: every read that went to it first is hedged
// to the live replica and answers long before the read timeout.
func TestReadHedgesAStoppedReplica(t *testing.T) {
	st := requireReplicaStack(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	extra := startExtraReplica(t, st.RedisAddr)
	key := stacktest.Namespace(t)
	rc := testRedisConfig(st)
	rc.ReplicaAddrs = []string{extra.addr, st.RedisReplicaAddrs[0]}
	c := openWithKey(t, ctx, rc, Config{Policy: replica.Config{Policy: replica.PolicyRoundRobin}, SampleInterval: -1,
		Hedge: replica.HedgeConfig{Budget: 0.05, MinSamples: 5, MinDelay: 20 * time.Millisecond, Suspect: -1}}, key)
	get := func() (string, error) {
		return Read(ctx, c, func(ctx context.Context, rdb *redis.Client) (string, error) {
			return rdb.Get(ctx, key).Result()
		})
	}
	for range 20 { // both replicas answer: the hedger learns their p95
		if v, err := get(); err != nil || v != "v" {
			t.Fatalf("warm-up read: %q, %v", v, err)
		}
	}
	if err := syscall.Kill(extra.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(extra.pid, syscall.SIGCONT)
	for i := range 6 { // round-robin: 3 go to the stopped replica first
		start := time.Now()
		v, err := get()
		if took := time.Since(start); err != nil || v != "v" || took > 500*time.Millisecond {
			t.Fatalf("read %d with a replica stopped: %q, %v after %s; want the value well within the 1s read timeout", i, v, err, took)
		}
	}
	hs := c.Status().Hedges
	if hs == nil || hs.Hedges < 3 || hs.HedgeWins < 3 {
		t.Fatalf("hedge stats %+v, want at least 3 hedges won (one per read sent to the stopped replica)", hs)
	}
}

// TestStoppedReplicaDoesNotHoldBackTheOthersSamples stops (SIGSTOP) one of
// two real replicas: its PING waits out the sample timeout, and the live
// replica must still be pinged every sample interval meanwhile.
func TestStoppedReplicaDoesNotHoldBackTheOthersSamples(t *testing.T) {
	st := requireReplicaStack(t)
	extra := startExtraReplica(t, st.RedisAddr)
	rc := testRedisConfig(st)
	rc.ReplicaAddrs = []string{extra.addr, st.RedisReplicaAddrs[0]}
	c, err := Open(rc, Config{SampleInterval: 20 * time.Millisecond, SampleTimeout: 5 * time.Second}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pings := func() (stopped, live uint64) {
		s := c.Status().Replicas
		return s[0].Pings, s[1].Pings
	}
	deadline := time.Now().Add(5 * time.Second)
	for stopped, live := pings(); stopped == 0 || live == 0; stopped, live = pings() {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %d and %d pings observed, want both replicas pinged", stopped, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(extra.pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(extra.pid, syscall.SIGCONT)
	time.Sleep(50 * time.Millisecond) // the stopped replica's sample in flight now waits
	stoppedBefore, liveBefore := pings()
	time.Sleep(time.Second)
	stoppedAfter, liveAfter := pings()
	// 50 intervals of 20 ms; a loaded machine may lose some ticks.
	if liveAfter-liveBefore < 10 {
		t.Errorf("live replica: %d pings in 1s while the other was stopped, want at least 10 (one per 20 ms interval, with slack)", liveAfter-liveBefore)
	}
	if stoppedAfter != stoppedBefore {
		t.Errorf("stopped replica: pings went from %d to %d while it was stopped", stoppedBefore, stoppedAfter)
	}
}

// TestEjectedReplicaIsBackSoonAfterItsStall stops (SIGSTOP) one of two
// real replicas under reads for 300 ms. C3 ejects it for its silence, for
// 5 s. The sampler then PINGs it every EjectedPingInterval, and two pings
// once it runs again bring it back early. With the ejected pings off, the
// next sample is 10 s away and it is still out 1.5 s after it runs again.
// The ping gate is set so high that no ping counts as slow: what is tested
// is how often an ejected replica is pinged, on a machine whose load may
// slow any ping.
func TestEjectedReplicaIsBackSoonAfterItsStall(t *testing.T) {
	st := requireReplicaStack(t)
	extra := startExtraReplica(t, st.RedisAddr)
	key := stacktest.Namespace(t)
	rc := testRedisConfig(st)
	rc.ReplicaAddrs = []string{extra.addr, st.RedisReplicaAddrs[0]}
	for _, tc := range []struct {
		name         string
		ejectedPings time.Duration
		wantBack     bool
	}{{"pinged every 20ms", 20 * time.Millisecond, true}, {"ejected pings off", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// A short DecayTime: a slow first read (a dial) would otherwise
			// price a replica out for seconds, every reader would end up
			// on the stopped one, and with no other replica answering its
			// silence would count for nothing.
			policy := replica.Config{EjectTime: 5 * time.Second, DecayTime: 50 * time.Millisecond, PingGate: 1000}
			c := openWithKey(t, ctx, rc, Config{Policy: policy, SampleInterval: 10 * time.Second, EjectedPingInterval: tc.ejectedPings}, key)
			readCtx, stopReads := context.WithCancel(ctx)
			var readers sync.WaitGroup
			for range 16 {
				readers.Add(1)
				go func() {
					defer readers.Done()
					for readCtx.Err() == nil {
						Read(readCtx, c, func(ctx context.Context, rdb *redis.Client) (string, error) {
							return rdb.Get(ctx, key).Result()
						})
					}
				}()
			}
			defer func() { stopReads(); readers.Wait() }()
			deadline := time.Now().Add(10 * time.Second)
			for s := c.Status().Replicas; s[0].Chosen < 100 || s[1].Chosen < 100; s = c.Status().Replicas {
				if time.Now().After(deadline) {
					t.Fatalf("after 10s of reads: %d and %d reads, want both replicas reading", s[0].Chosen, s[1].Chosen)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := syscall.Kill(extra.pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			ejected := !c.Status().Replicas[0].EjectedUntil.IsZero()
			if err := syscall.Kill(extra.pid, syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			if !ejected {
				t.Fatalf("after 300ms stopped under reads: replica not ejected: %+v", c.Status().Replicas[0])
			}
			resumed := time.Now()
			for time.Since(resumed) < 1500*time.Millisecond && !c.Status().Replicas[0].EjectedUntil.IsZero() {
				time.Sleep(10 * time.Millisecond)
			}
			if back := c.Status().Replicas[0].EjectedUntil.IsZero(); back != tc.wantBack {
				t.Errorf("%s after it runs again: back %t, want %t (%+v)", time.Since(resumed).Round(time.Millisecond), back, tc.wantBack, c.Status().Replicas[0])
			}
		})
	}
}
