// Package localstack finds, installs, starts and stops the local servers
// baedal runs on: OpenSearch (one node or a 3-node cluster, started from the
// Maven Central jars by the launcher in opensearch/), Redis 7 (a primary and
// optional read replicas) and PostgreSQL 15, all bound to 127.0.0.1 on
// baedal's own ports.
//
// Invariant: everything a stack starts is recorded, with its PID and start
// time, in the state file of its state directory before Up returns, and Down
// stops exactly those processes and nothing else.
package localstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stateFile is the file in the state directory that describes a running stack.
const stateFile = "stack.json"

// ErrAlreadyRunning is returned by Up when the state directory already has a
// running stack.
var ErrAlreadyRunning = errors.New("localstack: a stack is already running")

// ErrNotRunning is returned when the state directory has no running stack.
var ErrNotRunning = errors.New("localstack: no stack is running")

// State describes a started stack: where each server listens and which
// processes belong to it. The file is written 0600 because PostgresURL holds
// the stack's generated password.
type State struct {
	StateDir          string   `json:"state_dir"`
	OpenSearchURLs    []string `json:"opensearch_urls"`
	RedisAddr         string   `json:"redis_addr"`
	RedisReplicaAddrs []string `json:"redis_replica_addrs,omitempty"`
	LinksOldRedisAddr string   `json:"links_old_redis_addr,omitempty"`
	// RedisClusterAddrs are the nodes of the local Redis Cluster (started
	// with --redis-cluster), masters first; empty without one.
	RedisClusterAddrs []string `json:"redis_cluster_addrs,omitempty"`
	// RedisClusterMasters is how many of RedisClusterAddrs were formed as
	// masters (a failover may have moved that role since).
	RedisClusterMasters int       `json:"redis_cluster_masters,omitempty"`
	PostgresURL         string    `json:"postgres_url"`
	APIAddr             string    `json:"api_addr"`
	Processes           []Process `json:"processes"`
	StartedAt           time.Time `json:"started_at"`
}

// ports is the port plan of one stack.
type ports struct {
	api          int
	openSearch   []openSearchNode
	redis        int
	redisReplica []int
	linksOld     int
	redisCluster []redisClusterNode
	postgres     int
}

// planPorts lays the ports out from the base, or picks free ones when base
// is 0. It fails naming the first port already in use.
func planPorts(base, nodes, replicas int, linksOld bool, clusterNodes int) (ports, error) {
	var p ports
	picked, ephemeralLow := map[int]bool{}, ephemeralPortLow()
	next := func(offset int, what string) (int, error) {
		if base == 0 {
			return pickFreePort(picked, ephemeralLow)
		}
		port := base + offset
		if err := checkPortFree(port); err != nil {
			return 0, fmt.Errorf("localstack: port %d (%s) is already in use: another baedal stack or server holds it; stop it or pick another --port-base: %w", port, what, err)
		}
		return port, nil
	}
	var err error
	if p.api, err = next(80, "baedal api"); err != nil {
		return p, err
	}
	for i := 0; i < nodes; i++ {
		n := openSearchNode{name: "opensearch-" + strconv.Itoa(i+1)}
		if n.httpPort, err = next(200+i, n.name+" http"); err != nil {
			return p, err
		}
		if n.transportPort, err = next(300+i, n.name+" transport"); err != nil {
			return p, err
		}
		p.openSearch = append(p.openSearch, n)
	}
	if p.redis, err = next(379, "redis"); err != nil {
		return p, err
	}
	for i := 0; i < replicas; i++ {
		port, err := next(380+i, "redis replica "+strconv.Itoa(i+1))
		if err != nil {
			return p, err
		}
		p.redisReplica = append(p.redisReplica, port)
	}
	if linksOld {
		if p.linksOld, err = next(390, "redis-links-old"); err != nil {
			return p, err
		}
	}
	if p.postgres, err = next(432, "postgres"); err != nil {
		return p, err
	}
	for i := 0; i < clusterNodes; i++ {
		n := redisClusterNode{name: "redis-cluster-" + strconv.Itoa(i+1)}
		if n.port, err = next(440+i, n.name); err != nil {
			return p, err
		}
		if n.busPort, err = next(500+i, n.name+" cluster bus"); err != nil {
			return p, err
		}
		p.redisCluster = append(p.redisCluster, n)
	}
	return p, nil
}

// freePortLow is the lowest port a stack with --port-base 0 picks. Its ports
// lie above the default stack's and below the kernel's ephemeral range: a
// port from that range (what a bind to port 0 returns) can be taken as the
// source port of any outgoing connection in the seconds before the server
// that was planned on it binds it. That made a 3-node cluster fail to start
// in CI, its third node unable to bind its transport port.
const freePortLow = 20000

// pickFreePort returns a port that is free now, not in picked, from
// freePortLow up to high (excluded), and adds it to picked.
func pickFreePort(picked map[int]bool, high int) (int, error) {
	low := freePortLow
	for try := 0; try < 100; try++ {
		port := low + rand.IntN(high-low)
		if !picked[port] && checkPortFree(port) == nil {
			picked[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("localstack: no free port found in %d..%d after 100 tries; pick a --port-base", low, high-1)
}

// ephemeralPortLow is the first port of the kernel's ephemeral range, or
// Linux's default when the range cannot be read or leaves too little room
// above freePortLow.
func ephemeralPortLow() int {
	const linuxDefault = 32768
	raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return linuxDefault
	}
	fields := strings.Fields(string(raw))
	if len(fields) == 0 {
		return linuxDefault
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil || low < freePortLow+1000 {
		return linuxDefault
	}
	return low
}

func checkPortFree(port int) error {
	l, err := listenLoopback(port)
	if err != nil {
		return err
	}
	return l.Close()
}

// Up installs what is missing, starts every server, waits until each is
// healthy and records the stack in its state directory. On any failure it
// stops what it started and returns an error naming the component and its log.
// With free ports (PortBase 0), a start that finds a port taken is tried again
// on other ports, up to three times.
func Up(ctx context.Context, cfg Config, progress io.Writer) (*State, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	stateDir, err := cfg.absStateDir()
	if err != nil {
		return nil, err
	}
	if st, err := Load(stateDir); err == nil {
		return st, fmt.Errorf("%w in %s (%s); use `baedal status`, `baedal down`, or another --state-dir", ErrAlreadyRunning, stateDir, st.describeProcesses())
	}
	if err := EnsurePackages(ctx, cfg.Install, progress); err != nil {
		return nil, err
	}
	jdk, err := FindJDK(21)
	if err != nil {
		return nil, err
	}
	launcherDir, err := FindLauncherDir(cfg.LauncherDir)
	if err != nil {
		return nil, err
	}
	if err := BuildLauncher(ctx, launcherDir, jdk, progress); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("localstack: create state dir %s: %w", stateDir, err)
	}
	password, err := readOrCreatePassword(stateDir)
	if err != nil {
		return nil, err
	}
	if err := initPostgres(ctx, stateDir, password); err != nil {
		return nil, err
	}
	// Free ports are only free when picked: another program can bind one
	// before the server planned on it does. Such a start is tried again on
	// other ports; a fixed --port-base is not, since its ports cannot move.
	const attempts = 3
	for attempt := 1; ; attempt++ {
		plan, err := planPorts(cfg.PortBase, cfg.OpenSearchNodes, cfg.RedisReplicas, cfg.LinksOldRedis, cfg.RedisCluster.Nodes())
		if err != nil {
			return nil, err
		}
		if testHookPlanned != nil {
			testHookPlanned(attempt, plan)
		}
		st, err := start(ctx, cfg, stateDir, jdk, launcherDir, password, plan, progress)
		if err == nil || cfg.PortBase != 0 || attempt == attempts || !errors.Is(err, errPortTaken) {
			return st, err
		}
		fmt.Fprintf(progress, "a planned port was taken before its server bound it; starting again on other ports (attempt %d of %d): %v\n", attempt+1, attempts, err)
	}
}

// testHookPlanned, when set by a test, sees each port plan before its start.
var testHookPlanned func(attempt int, plan ports)

// errPortTaken marks a start that failed because a server found its port
// taken.
var errPortTaken = errors.New("a port was already in use")

// start starts every server of plan, waits until each is healthy and
// records the stack. On any failure it stops what it started.
func start(ctx context.Context, cfg Config, stateDir, jdk, launcherDir, password string, plan ports, progress io.Writer) (*State, error) {
	st := &State{
		StateDir:    stateDir,
		RedisAddr:   redisAddr(plan.redis),
		PostgresURL: postgresURL(plan.postgres, password, Database),
		APIAddr:     "127.0.0.1:" + strconv.Itoa(plan.api),
		StartedAt:   time.Now().UTC(),
	}
	type waiter struct {
		proc Process
		wait func(context.Context) error
	}
	var waiters []waiter
	fail := func(err error) (*State, error) {
		st.stopAll(io.Discard)
		os.Remove(filepath.Join(stateDir, stateFile))
		return nil, err
	}
	record := func(p Process, err error, wait func(context.Context, Process) error) error {
		if err != nil {
			return err
		}
		st.Processes = append(st.Processes, p)
		waiters = append(waiters, waiter{proc: p, wait: func(ctx context.Context) error { return wait(ctx, p) }})
		// Record before waiting, so a crash of `up` still lets `down` find it.
		return st.save()
	}

	fmt.Fprintf(progress, "starting OpenSearch (%d node(s)), Redis (%d replica(s)) and PostgreSQL in %s\n", cfg.OpenSearchNodes, cfg.RedisReplicas, stateDir)
	if cfg.RedisCluster.Masters > 0 {
		fmt.Fprintf(progress, "and a Redis Cluster of %d nodes\n", cfg.RedisCluster.Nodes())
	}
	for i, node := range plan.openSearch {
		url := "http://127.0.0.1:" + strconv.Itoa(node.httpPort)
		st.OpenSearchURLs = append(st.OpenSearchURLs, url)
		withoutHot := i >= len(plan.openSearch)-cfg.OpenSearchWithoutHotPlugin
		p, err := startOpenSearchNode(stateDir, jdk, launcherDir, cfg.OpenSearchHeap, node, plan.openSearch, withoutHot, cfg.OpenSearchSettings)
		if err := record(p, err, func(ctx context.Context, p Process) error { return waitOpenSearch(ctx, p, url, cfg.OpenSearchNodes) }); err != nil {
			return fail(err)
		}
	}
	p, err := startRedis(stateDir, "redis", plan.redis, 0)
	if err := record(p, err, func(ctx context.Context, p Process) error { return waitRedis(ctx, p, st.RedisAddr, false) }); err != nil {
		return fail(err)
	}
	for i, port := range plan.redisReplica {
		addr := redisAddr(port)
		st.RedisReplicaAddrs = append(st.RedisReplicaAddrs, addr)
		p, err := startRedis(stateDir, "redis-replica-"+strconv.Itoa(i+1), port, plan.redis)
		if err := record(p, err, func(ctx context.Context, p Process) error { return waitRedis(ctx, p, addr, true) }); err != nil {
			return fail(err)
		}
	}
	if plan.linksOld != 0 {
		st.LinksOldRedisAddr = redisAddr(plan.linksOld)
		p, err := startRedis(stateDir, "redis-links-old", plan.linksOld, 0)
		if err := record(p, err, func(ctx context.Context, p Process) error { return waitRedis(ctx, p, st.LinksOldRedisAddr, false) }); err != nil {
			return fail(err)
		}
	}
	clusterFormed := false
	if len(plan.redisCluster) > 0 {
		if clusterFormed, err = prepareRedisClusterDirs(stateDir, plan.redisCluster); err != nil {
			return fail(err)
		}
		st.RedisClusterMasters = cfg.RedisCluster.Masters
	}
	for _, n := range plan.redisCluster {
		addr := redisAddr(n.port)
		st.RedisClusterAddrs = append(st.RedisClusterAddrs, addr)
		p, err := startRedisClusterNode(stateDir, n)
		if err := record(p, err, func(ctx context.Context, p Process) error { return waitRedis(ctx, p, addr, false) }); err != nil {
			return fail(err)
		}
	}
	p, err = startPostgres(stateDir, plan.postgres)
	if err := record(p, err, func(ctx context.Context, p Process) error { return waitPostgres(ctx, p, plan.postgres, password) }); err != nil {
		return fail(err)
	}

	// The first server to fail ends the wait for the others; otherwise the
	// nodes of a cluster that lost one would wait for it until StartTimeout.
	timeoutCtx, cancelTimeout := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancelTimeout()
	waitCtx, stopWaiting := context.WithCancelCause(timeoutCtx)
	defer stopWaiting(nil)
	errs := make([]error, len(waiters))
	var wg sync.WaitGroup
	for i, w := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := w.wait(waitCtx)
			if err == nil || context.Cause(waitCtx) == errOtherFailed {
				return
			}
			log := tailFile(w.proc.Log, 4096)
			if strings.Contains(log, "Address already in use") {
				err = fmt.Errorf("%w: %w", errPortTaken, err)
			}
			what := "did not become healthy within " + cfg.StartTimeout.String()
			if !w.proc.Alive() {
				what = "exited while starting"
			}
			errs[i] = fmt.Errorf("localstack: %s %s: %w (log: %s)\n%s",
				w.proc.Component, what, err, w.proc.Log, indent(lastLines(log, 12)))
			stopWaiting(errOtherFailed)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fail(err)
	}
	if len(plan.redisCluster) > 0 {
		if !clusterFormed {
			fmt.Fprintf(progress, "forming the Redis Cluster (%d masters, %d replica(s) each) on %v\n", cfg.RedisCluster.Masters, cfg.RedisCluster.ReplicasPerMaster, st.RedisClusterAddrs)
			if err := formRedisCluster(timeoutCtx, stateDir, cfg.RedisCluster, plan.redisCluster); err != nil {
				return fail(err)
			}
		}
		if err := waitRedisCluster(timeoutCtx, st.RedisClusterAddrs, cfg.RedisCluster); err != nil {
			return fail(err)
		}
	}
	observe(ctx, st)
	return st, nil
}

type observerKey struct{}

// WithObserver returns a context under which Up and UseOrStart call see
// with the stack they return, while it runs: `baedal bench` asks the
// servers of the stack a benchmark started for their versions this way.
func WithObserver(ctx context.Context, see func(*State)) context.Context {
	return context.WithValue(ctx, observerKey{}, see)
}

func observe(ctx context.Context, st *State) {
	if see, ok := ctx.Value(observerKey{}).(func(*State)); ok && see != nil {
		see(st)
	}
}

// errOtherFailed ends the wait for the servers still starting once one failed.
var errOtherFailed = errors.New("another server failed to start")

// waitFor polls probe until it succeeds, the process dies or ctx ends.
func waitFor(ctx context.Context, p Process, probe func(context.Context) error) error {
	var last error
	for {
		if !p.Alive() {
			if last != nil {
				return fmt.Errorf("process %d exited (last probe: %v)", p.PID, last)
			}
			return fmt.Errorf("process %d exited", p.PID)
		}
		if last = probe(ctx); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last probe: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Load reads the stack recorded in stateDir. It returns ErrNotRunning when
// there is none or when none of its processes is alive any more.
func Load(stateDir string) (*State, error) {
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(abs, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNotRunning, abs)
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("localstack: read %s: %w", filepath.Join(abs, stateFile), err)
	}
	for _, p := range st.Processes {
		if p.Alive() {
			return &st, nil
		}
	}
	return nil, fmt.Errorf("%w in %s (its processes have exited)", ErrNotRunning, abs)
}

// Down stops every process recorded in stateDir: OpenSearch and Redis with
// SIGTERM, PostgreSQL with SIGINT (fast shutdown), then SIGKILL after a grace
// period. It removes the state file only when all of them are gone.
func Down(stateDir string, progress io.Writer) error {
	st, err := Load(stateDir)
	if err != nil {
		if errors.Is(err, ErrNotRunning) {
			abs, _ := filepath.Abs(stateDir)
			os.Remove(filepath.Join(abs, stateFile))
		}
		return err
	}
	if err := st.stopAll(progress); err != nil {
		return err
	}
	// A foreground `up` removes the file too when it sees its stack stop.
	if err := os.Remove(filepath.Join(st.StateDir, stateFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// stopAll stops the foreground server first (it drains requests while its
// backends still answer), then every server in parallel.
func (st *State) stopAll(progress io.Writer) error {
	for _, p := range st.Processes {
		if p.Component == serveComponent && p.PID != os.Getpid() {
			if err := p.Stop(syscall.SIGTERM, 30*time.Second); err != nil {
				return err
			}
			fmt.Fprintf(progress, "stopped %s (pid %d)\n", p.Component, p.PID)
		}
	}
	errs := make([]error, len(st.Processes))
	var wg sync.WaitGroup
	for i, p := range st.Processes {
		if p.PID == os.Getpid() || p.Component == serveComponent {
			continue // the foreground `up` stops itself after calling Down
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sig := syscall.SIGTERM
			if p.Component == "postgres" {
				sig = syscall.SIGINT
			}
			if !p.Alive() {
				return
			}
			if errs[i] = p.Stop(sig, 30*time.Second); errs[i] == nil {
				fmt.Fprintf(progress, "stopped %s (pid %d)\n", p.Component, p.PID)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (st *State) save() error {
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(st.StateDir, stateFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(st.StateDir, stateFile))
}

func (st *State) describeProcesses() string {
	var parts []string
	for _, p := range st.Processes {
		if p.Alive() {
			parts = append(parts, fmt.Sprintf("%s pid %d", p.Component, p.PID))
		}
	}
	return strings.Join(parts, ", ")
}

// readOrCreatePassword keeps the PostgreSQL password across restarts of the
// same state directory (the data directory was initialised with it).
func readOrCreatePassword(stateDir string) (string, error) {
	path := filepath.Join(stateDir, "postgres.password")
	if raw, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	pw, err := newPassword()
	if err != nil {
		return "", err
	}
	return pw, os.WriteFile(path, []byte(pw+"\n"), 0o600)
}

func containsLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == line {
			return true
		}
	}
	return false
}

func indent(s string) string {
	if s == "" {
		return ""
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// serveComponent names the foreground `baedal up` server in the state file.
const serveComponent = "baedal-serve"

// AddSelf records the calling process as part of the stack (the foreground
// `baedal up` server), so `baedal down` from another terminal stops it too.
func (st *State) AddSelf() error {
	component := serveComponent
	pid := os.Getpid()
	ticks, err := processStartTicks(pid)
	if err != nil {
		return err
	}
	st.Processes = append(st.Processes, Process{Component: component, PID: pid, StartTicks: ticks})
	return st.save()
}

// RedactedPostgresURL is PostgresURL with the password masked, for printing.
func (st *State) RedactedPostgresURL() string {
	u, err := url.Parse(st.PostgresURL)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

func listenLoopback(port int) (net.Listener, error) {
	return net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
}

// UseOrStart returns the stack running in stateDir, or starts a temporary
// one (single node, free ports) that the returned stop function stops and
// removes. Benchmarks use it so they run with or without `baedal up`.
func UseOrStart(ctx context.Context, stateDir string, progress io.Writer) (*State, func(), error) {
	if st, err := Load(stateDir); err == nil {
		observe(ctx, st)
		return st, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "baedal-bench-")
	if err != nil {
		return nil, nil, err
	}
	// PostgreSQL runs as the postgres user, which must reach the directory.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, nil, err
	}
	cfg := Defaults()
	cfg.StateDir, cfg.PortBase = dir, 0
	st, err := Up(ctx, cfg, progress)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return st, func() {
		_ = Down(dir, progress)
		os.RemoveAll(dir)
	}, nil
}
