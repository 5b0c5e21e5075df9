package localstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
)

// TestStackStartsHealthyAndStopsExactlyItsProcesses starts a stack of its own
// (not the shared test stack) because starting and stopping is what it tests.
func TestStackStartsHealthyAndStopsExactlyItsProcesses(t *testing.T) {
	dir := t.TempDir()
	// PostgreSQL runs as the postgres user, which must reach the state dir.
	if err := os.Chmod(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Defaults()
	cfg.StateDir = dir
	cfg.PortBase = 0
	cfg.RedisReplicas = 1
	cfg.LinksOldRedis = true
	cfg.RedisCluster = RedisClusterSpec{Masters: 3, ReplicasPerMaster: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// Another program takes the first plan's Redis port between the plan
	// and Redis's start: Up must start again on other ports.
	var taken net.Listener
	testHookPlanned = func(attempt int, plan ports) {
		if attempt == 1 {
			var err error
			if taken, err = listenLoopback(plan.redis); err != nil {
				t.Errorf("take the planned redis port: %v", err)
			}
		}
	}
	defer func() { testHookPlanned = nil }()
	var progress bytes.Buffer
	st, err := Up(ctx, cfg, io.MultiWriter(os.Stderr, &progress))
	if taken != nil {
		defer taken.Close()
	}
	if err != nil {
		testenv.Unavailable(t, err)
	}
	if taken == nil || st.RedisAddr == taken.Addr().String() || !strings.Contains(progress.String(), "starting again on other ports (attempt 2 of 3)") {
		t.Errorf("Up did not start again on other ports after its planned redis port was taken; redis at %s, progress:\n%s", st.RedisAddr, progress.String())
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = Down(dir, os.Stderr)
		}
	}()

	if got := len(st.Processes); got != 11 {
		t.Fatalf("started %d processes, want 11 (opensearch, redis, replica, links' old redis, 6 redis cluster nodes, postgres)", got)
	}
	checkRedisCluster(ctx, t, st, 3, 1)
	for _, h := range st.Health(ctx) {
		if !h.Healthy {
			t.Errorf("%s is not healthy: %s (log %s)", h.Component, h.Error, h.Log)
		}
	}
	info, err := os.Stat(filepath.Join(dir, stateFile))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("state file must exist with mode 0600 (it holds the postgres password): %v %v", info, err)
	}

	if _, err := Up(ctx, cfg, os.Stderr); !errors.Is(err, ErrAlreadyRunning) {
		t.Errorf("second Up = %v, want ErrAlreadyRunning", err)
	}

	// A process we did not start must survive Down.
	bystander := exec.Command("sleep", "60")
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	defer bystander.Process.Kill()

	var out bytes.Buffer
	if err := Down(dir, &out); err != nil {
		t.Fatalf("Down: %v", err)
	}
	stopped = true
	for _, p := range st.Processes {
		if p.Alive() {
			t.Errorf("%s (pid %d) still alive after Down", p.Component, p.PID)
		}
	}
	if err := syscall.Kill(bystander.Process.Pid, 0); err != nil {
		t.Errorf("Down killed a process it did not start: %v", err)
	}
	if _, err := Load(dir); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Load after Down = %v, want ErrNotRunning", err)
	}
}

// checkRedisCluster checks the stack's cluster from the outside: every node
// in it, the masters and replicas counted from CLUSTER NODES, and a write
// to keys of many slots through a cluster client.
func checkRedisCluster(ctx context.Context, t *testing.T, st *State, masters, replicasPerMaster int) {
	t.Helper()
	if got, want := len(st.RedisClusterAddrs), masters*(1+replicasPerMaster); got != want {
		t.Fatalf("state records %d cluster nodes, want %d", got, want)
	}
	rdb := redis.NewClient(&redis.Options{Addr: st.RedisClusterAddrs[0], ReadTimeout: 2 * time.Second})
	defer rdb.Close()
	nodes, err := rdb.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER NODES on %s: %v", st.RedisClusterAddrs[0], err)
	}
	gotMasters, gotReplicas := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) < 3:
			t.Errorf("unexpected CLUSTER NODES line %q", line)
		case strings.Contains(fields[2], "master"):
			gotMasters++
		case strings.Contains(fields[2], "slave"):
			gotReplicas++
		}
	}
	if gotMasters != masters || gotReplicas != masters*replicasPerMaster {
		t.Errorf("cluster has %d masters and %d replicas, want %d and %d:\n%s", gotMasters, gotReplicas, masters, masters*replicasPerMaster, nodes)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: st.RedisClusterAddrs, ReadTimeout: 2 * time.Second})
	defer cc.Close()
	for i := 0; i < 50; i++ {
		key := fmt.Sprintf("localstack-test-%d", i)
		if err := cc.Set(ctx, key, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s through the cluster: %v", key, err)
		}
	}
	var sizes atomic.Int64
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.DBSize(ctx).Result()
		if n == 0 {
			t.Errorf("master %s holds none of 50 keys spread over slots", m.Options().Addr)
		}
		sizes.Add(n)
		return err
	})
	if err != nil || sizes.Load() < 50 {
		t.Errorf("masters hold %d keys (err %v), want at least 50", sizes.Load(), err)
	}
}

// TestLauncherFailsLoudly checks the OpenSearch launcher refuses a missing
// plugin class and a bad port instead of starting a crippled node.
func TestLauncherFailsLoudly(t *testing.T) {
	jdk, err := FindJDK(21)
	if err != nil {
		testenv.Unavailable(t, err)
	}
	dir, err := FindLauncherDir("")
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildLauncher(context.Background(), dir, jdk, os.Stderr); err != nil {
		testenv.Unavailable(t, err)
	}
	home := t.TempDir()
	base := []string{"-cp", filepath.Join(dir, launcherJar) + ":" + filepath.Join(dir, "target", "lib", "*"), "dev.baedal.opensearch.Launcher",
		"--node-name", "t", "--home", home, "--data-path", filepath.Join(home, "data"), "--transport-port", "0"}
	cases := []struct {
		name, want string
		args       []string
	}{
		{"missing plugin class", "com.example.Missing", []string{"--http-port", "0", "--extra-plugin-class", "com.example.Missing"}},
		{"bad port", "--http-port", []string{"--http-port", "abc"}},
		{"unknown argument", "--bogus", []string{"--http-port", "0", "--bogus", "1"}},
		{"unknown plugin to leave out", "allowed: transport-netty4", []string{"--http-port", "0", "--without-plugin", "baedal-cold"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(jdk, "bin", "java"), append(base, tc.args...)...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("launcher exited with %v, want a non-zero exit; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Fatalf("output does not name %q:\n%s", tc.want, out)
			}
		})
	}
}

// TestLauncherLoadsExactlyOneHotPluginJar checks what a stale plugin jar
// used to break: after BuildLauncher, target/lib holds one baedal-hot jar,
// at the version baedal speaks (layout.HotPluginVersion, so the pom and Go
// agree), and a launcher whose classpath holds a second one (an older
// build's) refuses to start, naming both, instead of loading either.
func TestLauncherLoadsExactlyOneHotPluginJar(t *testing.T) {
	jdk, err := FindJDK(21)
	if err != nil {
		testenv.Unavailable(t, err)
	}
	dir, err := FindLauncherDir("")
	if err != nil {
		t.Fatal(err)
	}
	if err := BuildLauncher(context.Background(), dir, jdk, os.Stderr); err != nil {
		testenv.Unavailable(t, err)
	}
	jars, err := filepath.Glob(filepath.Join(dir, "target", "lib", "baedal-hot-*.jar"))
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "target", "lib", "baedal-hot-"+layout.HotPluginVersion+".jar")
	if len(jars) != 1 || jars[0] != want {
		t.Fatalf("target/lib holds the baedal-hot jars %v, want exactly %s", jars, want)
	}

	stale := filepath.Join(t.TempDir(), "baedal-hot-0.0.1-stale.jar")
	raw, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stale, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(jdk, "bin", "java"), "-cp",
		filepath.Join(dir, launcherJar)+":"+filepath.Join(dir, "target", "lib", "*")+":"+stale, "dev.baedal.opensearch.Launcher",
		"--node-name", "t", "--home", home, "--data-path", filepath.Join(home, "data"), "--http-port", "0", "--transport-port", "0")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Fatalf("launcher with two baedal-hot jars exited with %v, want exit code 3; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "more than one jar") || !strings.Contains(string(out), filepath.Base(stale)) || !strings.Contains(string(out), filepath.Base(want)) {
		t.Fatalf("output does not name both jars:\n%s", out)
	}
}
