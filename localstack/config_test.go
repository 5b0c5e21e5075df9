package localstack

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"empty state dir", func(c *Config) { c.StateDir = "" }, "state-dir"},
		{"privileged port base", func(c *Config) { c.PortBase = 80 }, "port-base"},
		{"two nodes", func(c *Config) { c.OpenSearchNodes = 2 }, "opensearch-nodes"},
		{"heap without unit", func(c *Config) { c.OpenSearchHeap = "512" }, "opensearch-heap"},
		{"too many replicas", func(c *Config) { c.RedisReplicas = 9 }, "redis-replicas"},
		{"tiny timeout", func(c *Config) { c.StartTimeout = time.Second }, "start-timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Defaults()
			tc.edit(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.HasPrefix(err.Error(), tc.field+":") {
				t.Fatalf("Validate() = %v, want an error starting with %q", err, tc.field+":")
			}
		})
	}
	good := Defaults()
	if err := good.Validate(); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
}

// planPorts refuses a plan whose redis port is held. Other test packages
// start servers on free ports at the same time, so another port of the
// plan may be taken too, and planPorts may name that one first: the test
// then tries another base, a few times.
func TestPlanPortsRefusesAPortInUse(t *testing.T) {
	var err error
	for range 5 {
		taken, perr := pickFreePort(map[int]bool{}, ephemeralPortLow())
		if perr != nil {
			t.Fatal(perr)
		}
		// Hold the port that the redis offset (379) lands on.
		base := taken - 379
		if base < 1024 {
			t.Skip("kernel gave a port too low to use as an offset target")
		}
		l, lerr := listenLoopback(taken)
		if lerr != nil {
			continue // taken by another process since it was picked
		}
		_, err = planPorts(base, 1, 0, false, 0)
		l.Close()
		switch {
		case err != nil && strings.Contains(err.Error(), "(redis)"):
			return
		case err == nil || !strings.Contains(err.Error(), "already in use"):
			t.Fatalf("planPorts = %v, want an error naming the redis port", err)
		}
	}
	t.Fatalf("every base collided with another process's port; last: %v", err)
}

func TestRedisConfigKeepsAcceptedWrites(t *testing.T) {
	conf := redisConfig(1234, "/d", 0)
	for _, want := range []string{"bind 127.0.0.1", "appendonly yes", "appendfsync everysec", "port 1234"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("redis.conf lacks %q", want)
		}
	}
	if strings.Contains(conf, "replicaof") {
		t.Error("a primary must not have replicaof")
	}
	if !strings.Contains(redisConfig(1, "/d", 99), "replicaof 127.0.0.1 99\n") {
		t.Error("a replica must follow its primary")
	}
}

func TestPlanPortsPicksFreePortsOutsideTheEphemeralRange(t *testing.T) {
	plan, err := planPorts(0, 3, 2, true, 6)
	if err != nil {
		t.Fatal(err)
	}
	all := []int{plan.api, plan.redis, plan.linksOld, plan.postgres}
	all = append(all, plan.redisReplica...)
	for _, n := range plan.openSearch {
		all = append(all, n.httpPort, n.transportPort)
	}
	for _, n := range plan.redisCluster {
		all = append(all, n.port, n.busPort)
	}
	if len(all) != 24 {
		t.Fatalf("planned %d ports, want 24 (12 of the stack, 6 cluster nodes with their bus ports)", len(all))
	}
	seen := map[int]bool{}
	for _, port := range all {
		if port < freePortLow || port >= ephemeralPortLow() {
			t.Errorf("port %d is outside %d..%d", port, freePortLow, ephemeralPortLow()-1)
		}
		if seen[port] {
			t.Errorf("port %d planned twice", port)
		}
		seen[port] = true
	}
}

func TestParseRedisClusterSpec(t *testing.T) {
	good := map[string]RedisClusterSpec{"3": {3, 0}, "3,1": {3, 1}, " 6, 2": {6, 2}}
	for in, want := range good {
		got, err := ParseRedisClusterSpec(in)
		if err != nil || got != want {
			t.Errorf("ParseRedisClusterSpec(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	if n := (RedisClusterSpec{3, 1}).Nodes(); n != 6 {
		t.Errorf("3 masters with 1 replica each = %d nodes, want 6", n)
	}
	for _, bad := range []string{"", "2", "3,3", "x", "3,x", "17"} {
		if _, err := ParseRedisClusterSpec(bad); err == nil || !strings.Contains(err.Error(), "redis-cluster") {
			t.Errorf("ParseRedisClusterSpec(%q) = %v, want an error naming redis-cluster", bad, err)
		}
	}
}

func TestRedisClusterConfigIsClusterModeWithAOF(t *testing.T) {
	conf := redisClusterConfig(redisClusterNode{name: "redis-cluster-1", port: 1234, busPort: 5678}, "/d")
	for _, want := range []string{"bind 127.0.0.1", "appendonly yes", "port 1234", "cluster-enabled yes", "cluster-port 5678"} {
		if !strings.Contains(conf, want+"\n") {
			t.Errorf("cluster node redis.conf lacks %q", want)
		}
	}
}
