package localstack

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisConfig renders a redis.conf. AOF with appendfsync everysec makes an
// accepted event survive a restart of the server (at most ~1 s on power loss).
// set-max-intset-entries 16384 keeps a set of integers (the feed's followee
// sets: user ids) an intset up to 16,384 members instead of 512: 10,000
// followees take 20 KB instead of 517 KB, and on a Redis Cluster that one key
// no longer outweighs its master's share of the data. SADD into an intset
// moves up to 64 KB; SISMEMBER is a binary search.
func redisConfig(port int, dir string, primaryPort int) string {
	conf := fmt.Sprintf(`port %d
bind 127.0.0.1
protected-mode yes
daemonize no
dir %s
logfile ""
save ""
appendonly yes
appendfsync everysec
maxclients 4096
set-max-intset-entries 16384
hash-max-listpack-entries 1024
hash-max-listpack-value 4096
`, port, dir)
	if primaryPort != 0 {
		conf += fmt.Sprintf("replicaof 127.0.0.1 %d\nreplica-read-only yes\n", primaryPort)
	}
	return conf
}

// startRedis writes a config under stateDir/<name> and starts redis-server.
func startRedis(stateDir, name string, port, primaryPort int) (Process, error) {
	dir := filepath.Join(stateDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Process{}, err
	}
	confPath := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confPath, []byte(redisConfig(port, dir, primaryPort)), 0o644); err != nil {
		return Process{}, err
	}
	cmd := exec.Command("redis-server", confPath)
	return startProcess(name, cmd, filepath.Join(stateDir, "logs", name+".log"))
}

// waitRedis waits until the server answers PING and, for a replica, until its
// link to the primary is up.
func waitRedis(ctx context.Context, p Process, addr string, replica bool) error {
	return waitFor(ctx, p, func(ctx context.Context) error { return probeRedis(ctx, addr, replica) })
}

// probeRedis checks PING and, for a replica, its link to the primary.
func probeRedis(ctx context.Context, addr string, replica bool) error {
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	defer client.Close()
	if err := client.Ping(ctx).Err(); err != nil {
		return err
	}
	if !replica {
		return nil
	}
	info, err := client.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !containsLine(info, "master_link_status:up") {
		return fmt.Errorf("replica link to primary is not up")
	}
	return nil
}

func redisAddr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
