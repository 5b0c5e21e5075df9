package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisClusterSpec is the size of a local Redis Cluster: Masters primaries
// (at least 3, as redis-cli --cluster create requires) with
// ReplicasPerMaster replicas each. The zero value means no cluster.
type RedisClusterSpec struct {
	Masters           int
	ReplicasPerMaster int
}

// Nodes is the number of redis-server processes of the cluster.
func (s RedisClusterSpec) Nodes() int { return s.Masters * (1 + s.ReplicasPerMaster) }

// String is the flag form, "3,1"; empty for no cluster.
func (s RedisClusterSpec) String() string {
	if s.Masters == 0 {
		return ""
	}
	return strconv.Itoa(s.Masters) + "," + strconv.Itoa(s.ReplicasPerMaster)
}

// ParseRedisClusterSpec reads "MASTERS[,REPLICAS_PER_MASTER]", e.g. "3" or
// "3,1".
func ParseRedisClusterSpec(s string) (RedisClusterSpec, error) {
	var spec RedisClusterSpec
	mastersText, replicasText, hasReplicas := strings.Cut(strings.TrimSpace(s), ",")
	masters, err := strconv.Atoi(strings.TrimSpace(mastersText))
	if err != nil {
		return spec, fmt.Errorf("redis-cluster: got %q, want MASTERS[,REPLICAS_PER_MASTER] such as 3 or 3,1", s)
	}
	spec.Masters = masters
	if hasReplicas {
		if spec.ReplicasPerMaster, err = strconv.Atoi(strings.TrimSpace(replicasText)); err != nil {
			return spec, fmt.Errorf("redis-cluster: got %q, want MASTERS[,REPLICAS_PER_MASTER] such as 3 or 3,1", s)
		}
	}
	return spec, spec.Validate()
}

// Validate names what is out of range.
func (s RedisClusterSpec) Validate() error {
	if s.Masters == 0 && s.ReplicasPerMaster == 0 {
		return nil
	}
	if s.Masters < 3 || s.Masters > 16 {
		return fmt.Errorf("redis-cluster: got %d masters, allowed: 3..16 (redis-cli --cluster create needs at least 3)", s.Masters)
	}
	if s.ReplicasPerMaster < 0 || s.ReplicasPerMaster > 2 {
		return fmt.Errorf("redis-cluster: got %d replicas per master, allowed: 0..2", s.ReplicasPerMaster)
	}
	return nil
}

// redisClusterNode is the port plan of one cluster node: its client port
// and its cluster bus port (planned too, since the default, port+10000, may
// fall on a port another program holds).
type redisClusterNode struct {
	name          string
	port, busPort int
}

// redisClusterConfig renders the redis.conf of a cluster node: the single
// Redis's settings (loopback, AOF everysec) plus cluster mode. A short node
// timeout makes a replica take over within seconds of its master's death.
func redisClusterConfig(n redisClusterNode, dir string) string {
	return redisConfig(n.port, dir, 0) + fmt.Sprintf(`cluster-enabled yes
cluster-config-file nodes.conf
cluster-port %d
cluster-node-timeout 3000
cluster-require-full-coverage yes
`, n.busPort)
}

// startRedisClusterNode writes a node's config under stateDir/<name> and
// starts it.
func startRedisClusterNode(stateDir string, n redisClusterNode) (Process, error) {
	dir := filepath.Join(stateDir, n.name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Process{}, err
	}
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(redisClusterConfig(n, dir)), 0o644); err != nil {
		return Process{}, err
	}
	return startProcess(n.name, exec.Command("redis-server", confPath), filepath.Join(stateDir, "logs", n.name+".log"))
}

// clusterPortsFile records the ports a cluster was formed on. A cluster's
// nodes.conf names its peers by address, so its data is kept across a
// `down` and `up` only when the ports are the same (a fixed --port-base);
// otherwise the nodes start empty and the cluster is formed again.
const clusterPortsFile = "redis-cluster-ports"

func clusterPortsLine(nodes []redisClusterNode) string {
	var parts []string
	for _, n := range nodes {
		parts = append(parts, fmt.Sprintf("%d/%d", n.port, n.busPort))
	}
	return strings.Join(parts, " ") + "\n"
}

// prepareRedisClusterDirs reports whether the cluster recorded in stateDir
// was formed on exactly these nodes (keep it), and otherwise empties the
// nodes' directories so they can form a new cluster.
func prepareRedisClusterDirs(stateDir string, nodes []redisClusterNode) (formed bool, err error) {
	raw, err := os.ReadFile(filepath.Join(stateDir, clusterPortsFile))
	if err == nil && string(raw) == clusterPortsLine(nodes) {
		return true, nil
	}
	if err := os.Remove(filepath.Join(stateDir, clusterPortsFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	entries, err := os.ReadDir(stateDir)
	if err != nil {
		return false, err
	}
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), "redis-cluster-") {
			if err := os.RemoveAll(filepath.Join(stateDir, e.Name())); err != nil {
				return false, fmt.Errorf("localstack: empty the old cluster node dir %s: %w", e.Name(), err)
			}
		}
	}
	return false, nil
}

// formRedisCluster runs redis-cli --cluster create over the started nodes:
// the first Masters addresses become masters, the rest their replicas.
func formRedisCluster(ctx context.Context, stateDir string, spec RedisClusterSpec, nodes []redisClusterNode) error {
	args := []string{"--cluster", "create"}
	for _, n := range nodes {
		args = append(args, redisAddr(n.port))
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(spec.ReplicasPerMaster), "--cluster-yes")
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "redis-cli", args...).CombinedOutput()
	logPath := filepath.Join(stateDir, "logs", "redis-cluster-create.log")
	_ = os.WriteFile(logPath, out, 0o644)
	if err != nil {
		return fmt.Errorf("localstack: redis-cli %s: %w (output in %s)\n%s", strings.Join(args, " "), err, logPath, indent(lastLines(string(out), 12)))
	}
	return os.WriteFile(filepath.Join(stateDir, clusterPortsFile), []byte(clusterPortsLine(nodes)), 0o644)
}

// waitRedisCluster waits until every node says the cluster is ok, with all
// 16384 slots assigned and served and every node known, and until the
// first node sees the planned masters and replicas (redis-cli may return
// before a replica has taken its role), each replica's link to its master
// up.
func waitRedisCluster(ctx context.Context, addrs []string, spec RedisClusterSpec) error {
	var last error
	for {
		last = nil
		for _, a := range addrs {
			if err := probeRedisClusterNode(ctx, a, len(addrs)); err != nil {
				last = err
				break
			}
		}
		if last == nil {
			last = probeRedisClusterRoles(ctx, addrs[0], spec)
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("localstack: redis cluster not ok: %w (last probe: %v)", ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// probeRedisClusterNode checks one node's CLUSTER INFO: state ok, 16384
// slots assigned and ok, and the whole cluster known (nodes > 0).
func probeRedisClusterNode(ctx context.Context, addr string, nodes int) error {
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer client.Close()
	info, err := client.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	want := []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_slots_ok:16384"}
	if nodes > 0 {
		want = append(want, "cluster_known_nodes:"+strconv.Itoa(nodes))
	}
	for _, line := range want {
		if !containsLine(info, line) {
			return fmt.Errorf("%s: CLUSTER INFO lacks %q", addr, line)
		}
	}
	return nil
}

// probeRedisClusterRoles checks that the node at addr sees spec.Masters
// masters that serve slots and as many replicas as planned, each replica
// with its link to its master up.
func probeRedisClusterRoles(ctx context.Context, addr string, spec RedisClusterSpec) error {
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer client.Close()
	nodes, err := client.ClusterNodes(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER NODES: %w", addr, err)
	}
	masters, replicas := 0, 0
	var replicaAddrs []string
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 {
			continue
		}
		switch flags := fields[2]; {
		case strings.Contains(flags, "master") && len(fields) > 8:
			masters++
		case strings.Contains(flags, "slave"):
			replicas++
			replicaAddrs = append(replicaAddrs, strings.SplitN(fields[1], "@", 2)[0])
		}
	}
	if masters != spec.Masters || replicas != spec.Masters*spec.ReplicasPerMaster {
		return fmt.Errorf("%s sees %d masters serving slots and %d replicas, want %d and %d", addr, masters, replicas, spec.Masters, spec.Masters*spec.ReplicasPerMaster)
	}
	for _, a := range replicaAddrs {
		if err := probeRedis(ctx, a, true); err != nil {
			return fmt.Errorf("cluster replica %s: %w", a, err)
		}
	}
	return nil
}

// UpRedisCluster starts only a Redis Cluster of spec in stateDir, on free
// ports, and records it like Up records a stack (so Load, Health, Kill and
// Down work on it), then waits until every slot is served. Fault tests that
// kill a node start a cluster of their own this way, leaving the shared
// test stack's alone. The caller stops it with Down.
func UpRedisCluster(ctx context.Context, stateDir string, spec RedisClusterSpec, timeout time.Duration) (*State, error) {
	if spec.Masters == 0 {
		return nil, errors.New("localstack: UpRedisCluster needs masters (e.g. 3,1)")
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return nil, err
	}
	if st, err := Load(stateDir); err == nil {
		return st, fmt.Errorf("%w in %s (%s)", ErrAlreadyRunning, stateDir, st.describeProcesses())
	}
	if err := os.MkdirAll(filepath.Join(stateDir, "logs"), 0o755); err != nil {
		return nil, fmt.Errorf("localstack: create state dir %s: %w", stateDir, err)
	}
	picked, high := map[int]bool{}, ephemeralPortLow()
	var nodes []redisClusterNode
	for i := 0; i < spec.Nodes(); i++ {
		n := redisClusterNode{name: "redis-cluster-" + strconv.Itoa(i+1)}
		if n.port, err = pickFreePort(picked, high); err != nil {
			return nil, err
		}
		if n.busPort, err = pickFreePort(picked, high); err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	st := &State{StateDir: stateDir, RedisClusterMasters: spec.Masters, StartedAt: time.Now().UTC()}
	fail := func(err error) (*State, error) {
		st.stopAll(io.Discard)
		os.Remove(filepath.Join(stateDir, stateFile))
		return nil, err
	}
	if _, err := prepareRedisClusterDirs(stateDir, nodes); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for _, n := range nodes {
		p, err := startRedisClusterNode(stateDir, n)
		if err != nil {
			return fail(err)
		}
		st.Processes = append(st.Processes, p)
		st.RedisClusterAddrs = append(st.RedisClusterAddrs, redisAddr(n.port))
		if err := st.save(); err != nil {
			return fail(err)
		}
	}
	for i, p := range st.Processes {
		if err := waitRedis(ctx, p, st.RedisClusterAddrs[i], false); err != nil {
			return fail(fmt.Errorf("localstack: %s did not start: %w (log: %s)\n%s", p.Component, err, p.Log, indent(lastLines(tailFile(p.Log, 4096), 12))))
		}
	}
	if err := formRedisCluster(ctx, stateDir, spec, nodes); err != nil {
		return fail(err)
	}
	if err := waitRedisCluster(ctx, st.RedisClusterAddrs, spec); err != nil {
		return fail(err)
	}
	return st, nil
}

// RestartRedisClusterNode starts a stopped cluster node again with its
// recorded command line and data directory (its nodes.conf makes it rejoin
// the cluster: a former master as a replica of the node that took over),
// records its new PID and waits until it answers PING.
func (st *State) RestartRedisClusterNode(ctx context.Context, component string) error {
	i := -1
	for j, p := range st.Processes {
		if p.Component == component {
			i = j
		}
	}
	if i < 0 || !strings.HasPrefix(component, "redis-cluster-") {
		return fmt.Errorf("localstack: no Redis Cluster node %s in %s", component, st.StateDir)
	}
	old := st.Processes[i]
	if old.Alive() {
		return fmt.Errorf("localstack: %s (pid %d) is still running", component, old.PID)
	}
	if len(old.Argv) == 0 {
		return fmt.Errorf("localstack: %s was recorded without its command line", component)
	}
	p, err := startProcess(component, exec.Command(old.Argv[0], old.Argv[1:]...), filepath.Join(st.StateDir, "logs", component+".log"))
	if err != nil {
		return err
	}
	st.Processes[i] = p
	if err := st.save(); err != nil {
		return err
	}
	return waitRedis(ctx, p, st.RedisClusterAddrs[indexSuffix(component)], false)
}
