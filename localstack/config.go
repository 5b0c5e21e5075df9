package localstack

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// DefaultPortBase is the first port of the default stack. Every component
// listens at a fixed offset from it (see Ports), far from the engines' own
// defaults so a user's existing servers are untouched.
const DefaultPortBase = 19000

// Config says where the stack keeps its state and how big it is.
// The zero value is not valid; call Defaults first or bind Flags.
type Config struct {
	// StateDir holds the state file, data directories and logs.
	StateDir string
	// PortBase is the first port; 0 picks free ports from the kernel.
	PortBase int
	// OpenSearchNodes is 1 (single node) or 3 (a real cluster on loopback).
	OpenSearchNodes int
	// OpenSearchHeap is the JVM heap per node, e.g. "512m".
	OpenSearchHeap string
	// OpenSearchWithoutHotPlugin starts the last N nodes without the
	// baedal-hot plugin: a cluster that lacks it, where the hot layout is
	// unavailable and the others serve (tests; trying it out).
	OpenSearchWithoutHotPlugin int
	// OpenSearchSettings are extra OpenSearch settings (KEY=VALUE) for
	// every node, applied last (fault tests shorten fault detection).
	OpenSearchSettings []string
	// RedisReplicas is the number of read replicas of the primary Redis.
	RedisReplicas int
	// LinksOldRedis starts a second, separate Redis: the old store of the
	// link store's migration (old Redis, old format → new Redis, new format).
	LinksOldRedis bool
	// RedisCluster, when it has masters, starts a Redis Cluster beside the
	// single Redis: that many masters with their replicas, on loopback.
	RedisCluster RedisClusterSpec
	// StartTimeout bounds the wait for every component to become healthy.
	StartTimeout time.Duration
	// LauncherDir is the Maven module that starts OpenSearch; empty means
	// "opensearch/" in the nearest parent directory that has one.
	LauncherDir string
	// Install allows installing missing Debian packages with apt-get (root only).
	Install bool
}

// Defaults returns the configuration of the default stack: state in .baedal/
// (or $BAEDAL_STATE_DIR), one OpenSearch node with a 512 MB heap.
func Defaults() Config {
	dir := os.Getenv("BAEDAL_STATE_DIR")
	if dir == "" {
		dir = ".baedal"
	}
	return Config{
		StateDir:        dir,
		PortBase:        DefaultPortBase,
		OpenSearchNodes: 1,
		OpenSearchHeap:  "512m",
		StartTimeout:    3 * time.Minute,
		Install:         true,
	}
}

// Flags binds the configuration to command-line flags.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.StateDir, "state-dir", c.StateDir, "directory for the stack's state, data and logs (env BAEDAL_STATE_DIR)")
	fs.IntVar(&c.PortBase, "port-base", c.PortBase, "first port of the stack; 0 picks free ports")
	fs.IntVar(&c.OpenSearchNodes, "opensearch-nodes", c.OpenSearchNodes, "OpenSearch nodes to start: 1 or 3")
	fs.StringVar(&c.OpenSearchHeap, "opensearch-heap", c.OpenSearchHeap, "JVM heap per OpenSearch node, e.g. 512m or 1g")
	fs.IntVar(&c.OpenSearchWithoutHotPlugin, "opensearch-without-hot-plugin", c.OpenSearchWithoutHotPlugin, "start the last N OpenSearch nodes without the baedal-hot plugin (the hot layout is then unavailable)")
	fs.IntVar(&c.RedisReplicas, "redis-replicas", c.RedisReplicas, "Redis read replicas to start beside the primary (0-8)")
	fs.Func("redis-cluster", "start a Redis Cluster beside the single Redis: MASTERS[,REPLICAS_PER_MASTER], e.g. 3,1", func(s string) error {
		spec, err := ParseRedisClusterSpec(s)
		if err != nil {
			return err
		}
		c.RedisCluster = spec
		return nil
	})
	fs.BoolVar(&c.LinksOldRedis, "links-old-redis", c.LinksOldRedis, "start a second Redis as the link store migration's old store")
	fs.DurationVar(&c.StartTimeout, "start-timeout", c.StartTimeout, "how long to wait for every component to become healthy")
	fs.StringVar(&c.LauncherDir, "launcher-dir", c.LauncherDir, "the OpenSearch launcher's Maven module (default: ./opensearch in this or a parent directory)")
	fs.BoolVar(&c.Install, "install", c.Install, "install missing Debian packages with apt-get when running as root")
}

var heapPattern = regexp.MustCompile(`^[0-9]+[mMgG]$`)

// Validate reports the first invalid field by name.
func (c *Config) Validate() error {
	var errs []error
	if c.StateDir == "" {
		errs = append(errs, errors.New("state-dir: must not be empty"))
	}
	if c.PortBase != 0 && (c.PortBase < 1024 || c.PortBase > 65000) {
		errs = append(errs, fmt.Errorf("port-base: got %d, allowed: 0 (pick free ports) or 1024..65000", c.PortBase))
	}
	if c.OpenSearchNodes != 1 && c.OpenSearchNodes != 3 {
		errs = append(errs, fmt.Errorf("opensearch-nodes: got %d, allowed: 1, 3", c.OpenSearchNodes))
	}
	if c.OpenSearchWithoutHotPlugin < 0 || c.OpenSearchWithoutHotPlugin > c.OpenSearchNodes {
		errs = append(errs, fmt.Errorf("opensearch-without-hot-plugin: got %d, allowed: 0..%d (the nodes started)", c.OpenSearchWithoutHotPlugin, c.OpenSearchNodes))
	}
	if !heapPattern.MatchString(c.OpenSearchHeap) {
		errs = append(errs, fmt.Errorf("opensearch-heap: got %q, allowed: a size like 256m, 512m, 1g", c.OpenSearchHeap))
	}
	if c.RedisReplicas < 0 || c.RedisReplicas > 8 {
		errs = append(errs, fmt.Errorf("redis-replicas: got %d, allowed: 0..8", c.RedisReplicas))
	}
	if err := c.RedisCluster.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.StartTimeout < 5*time.Second {
		errs = append(errs, fmt.Errorf("start-timeout: got %s, must be at least 5s", c.StartTimeout))
	}
	return errors.Join(errs...)
}

// absStateDir returns the state directory as an absolute path, so PIDs and
// logs recorded in it stay valid whatever the working directory.
func (c *Config) absStateDir() (string, error) {
	return filepath.Abs(c.StateDir)
}
