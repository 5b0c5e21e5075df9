package localstack

import (
	"context"
	"errors"
	"fmt"
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
