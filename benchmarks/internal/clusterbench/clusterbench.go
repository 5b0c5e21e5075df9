// Package clusterbench is what `bench feed` and `bench links` share for
// their --redis-cluster MASTERS run: a local Redis Cluster of that many
// masters (no replicas: the figures are the masters' balance and the
// workload's speed, which replicas change neither), started on free
// loopback ports with localstack.UpRedisCluster in a temporary directory and
// stopped by PID (localstack.Down) at the end, and the balance of the
// masters: each master's share of the commands processed and of the memory
// used over the run, the largest share over the smallest.
//
// Operations are INFO stats total_commands_processed deltas between two
// snapshots (they include the few INFO calls of the snapshots themselves,
// the same on every master). Memory is INFO memory used_memory_dataset at
// the end minus the same node's when the cluster was just formed and empty
// (its empty baseline), so Redis's fixed overhead does not hide the data's
// imbalance. used_memory_dataset leaves out what does not belong to the data
// (client query and output buffers, the AOF buffers, the replication
// backlog): those depend on the moment of the snapshot, and with a few MB of
// data per master they moved used_memory's share from 1.15 to 1.38 between
// two runs of the same code. used_memory's share is reported beside it.
package clusterbench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/localstack"
)

// TargetShareMaxOverMin is the target of both balance ratios (issue 17):
// the busiest or fullest master at most 1.2 times the least.
const TargetShareMaxOverMin = 1.2

// Cluster is a running local Redis Cluster started by Start.
type Cluster struct {
	dir    string
	addrs  []string
	Client *redis.ClusterClient
	// empty is each master's memory right after the cluster formed.
	empty map[string]Node
}

// Start starts a cluster of masters masters (no replicas) in a temporary
// directory and records each master's empty memory. Call Stop even on
// error when the returned cluster is not nil.
func Start(ctx context.Context, masters int, progress io.Writer) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "baedal-bench-redis-cluster-")
	if err != nil {
		return nil, fmt.Errorf("clusterbench: temp dir: %w", err)
	}
	st, err := localstack.UpRedisCluster(ctx, dir, localstack.RedisClusterSpec{Masters: masters}, 2*time.Minute)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("clusterbench: start a Redis Cluster of %d masters: %w", masters, err)
	}
	c := &Cluster{dir: dir, addrs: st.RedisClusterAddrs}
	for _, p := range st.Processes {
		fmt.Fprintf(progress, "started %s pid %d\n", p.Component, p.PID)
	}
	c.Client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.addrs, DialTimeout: 2 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, PoolSize: 128})
	snap, err := c.Snapshot(ctx)
	if err != nil {
		return c, err
	}
	if len(snap) != masters {
		return c, fmt.Errorf("clusterbench: the cluster on %v has %d masters, want %d", c.addrs, len(snap), masters)
	}
	c.empty = snap
	return c, nil
}

// Stop closes the client and stops every node by its recorded PID.
func (c *Cluster) Stop(progress io.Writer) {
	if c.Client != nil {
		c.Client.Close()
	}
	if err := localstack.Down(c.dir, progress); err != nil {
		fmt.Fprintf(progress, "clusterbench: stop the Redis Cluster in %s: %v\n", c.dir, err)
		return
	}
	os.RemoveAll(c.dir)
}

// Node is one master's counters at a snapshot.
type Node struct {
	Commands      int64
	UsedMemory    int64
	DatasetMemory int64 // used_memory_dataset
}

// Snapshot reads every master's total_commands_processed, used_memory and
// used_memory_dataset, by master address.
func (c *Cluster) Snapshot(ctx context.Context) (map[string]Node, error) {
	out := map[string]Node{}
	var mu sync.Mutex
	err := c.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		info, err := m.Info(ctx, "stats", "memory").Result()
		if err != nil {
			return fmt.Errorf("clusterbench: INFO stats memory on %s: %w", m.Options().Addr, err)
		}
		cmds, err := infoInt(info, "total_commands_processed")
		if err != nil {
			return fmt.Errorf("clusterbench: %s: %w", m.Options().Addr, err)
		}
		mem, err := infoInt(info, "used_memory")
		if err != nil {
			return fmt.Errorf("clusterbench: %s: %w", m.Options().Addr, err)
		}
		dataset, err := infoInt(info, "used_memory_dataset")
		if err != nil {
			return fmt.Errorf("clusterbench: %s: %w", m.Options().Addr, err)
		}
		mu.Lock()
		out[m.Options().Addr] = Node{Commands: cmds, UsedMemory: mem, DatasetMemory: dataset}
		mu.Unlock()
		return nil
	})
	return out, err
}

// infoInt reads an integer field of an INFO reply.
func infoInt(info, field string) (int64, error) {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("INFO has no %s line", field)
}

// Balance is the `redis_cluster` object of a summary, beside the
// benchmark's own cluster figures.
type Balance struct {
	Masters int `json:"masters"`
	// Largest master's share of the commands processed between the two
	// snapshots over the smallest's.
	OpsShareMaxOverMin float64 `json:"ops_share_max_over_min"`
	// OpsShareRounds, when the benchmark measured rounds, is the same
	// share over each round's commands alone, with its t interval: the
	// share moves between runs of the same code (1.16–1.38 in one week),
	// so it is judged on that interval, not as an exact count.
	OpsShareRounds *bench.RoundRatios `json:"ops_share_max_over_min_rounds,omitempty"`
	// Largest master's share of used_memory_dataset (at the end, minus its
	// empty baseline) over the smallest's; the same for used_memory.
	MemoryShareMaxOverMin     float64 `json:"memory_share_max_over_min"`
	UsedMemoryShareMaxOverMin float64 `json:"used_memory_share_max_over_min"`
	// Per master, by address: commands in the run, used_memory_dataset and
	// used_memory above the empty baseline.
	OpsByMaster        map[string]int64 `json:"ops_by_master"`
	MemoryByMaster     map[string]int64 `json:"memory_by_master"`
	UsedMemoryByMaster map[string]int64 `json:"used_memory_by_master"`
	// LargestKeysByMaster is each master's largest keys (LargestKeys), so
	// that a memory imbalance can be traced to the keys that make it.
	LargestKeysByMaster map[string][]KeyMemory `json:"largest_keys_by_master,omitempty"`
}

// ReportedLargestKeys is how many of each master's largest keys a summary
// names.
const ReportedLargestKeys = 3

// KeyMemory is one key and its MEMORY USAGE in bytes.
type KeyMemory struct {
	Key   string `json:"key"`
	Bytes int64  `json:"bytes"`
}

// LargestKeys scans every master and returns its n largest keys by MEMORY
// USAGE (SAMPLES 0: every element counted), largest first, by master
// address. It reads every key once: call it after the workload.
func (c *Cluster) LargestKeys(ctx context.Context, n int) (map[string][]KeyMemory, error) {
	out := map[string][]KeyMemory{}
	var mu sync.Mutex
	err := c.Client.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		var top []KeyMemory
		iter := m.Scan(ctx, 0, "*", 1000).Iterator()
		var batch []string
		measure := func() error {
			pipe := m.Pipeline()
			sizes := make([]*redis.IntCmd, len(batch))
			for i, k := range batch {
				sizes[i] = pipe.MemoryUsage(ctx, k, 0)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("clusterbench: MEMORY USAGE on %s: %w", m.Options().Addr, err)
			}
			for i, k := range batch {
				if b, err := sizes[i].Result(); err == nil { // redis.Nil: deleted since the SCAN
					top = append(top, KeyMemory{Key: k, Bytes: b})
				}
			}
			slices.SortFunc(top, func(a, b KeyMemory) int { return cmp.Compare(b.Bytes, a.Bytes) })
			top = top[:min(len(top), n)]
			batch = batch[:0]
			return nil
		}
		for iter.Next(ctx) {
			if batch = append(batch, iter.Val()); len(batch) == 1000 {
				if err := measure(); err != nil {
					return err
				}
			}
		}
		if err := iter.Err(); err != nil {
			return fmt.Errorf("clusterbench: SCAN on %s: %w", m.Options().Addr, err)
		}
		if err := measure(); err != nil {
			return err
		}
		mu.Lock()
		out[m.Options().Addr] = top
		mu.Unlock()
		return nil
	})
	return out, err
}

// Balance compares the snapshots before and after the workload.
func (c *Cluster) Balance(before, after map[string]Node) (Balance, error) {
	b := Balance{Masters: len(after), OpsByMaster: map[string]int64{}, MemoryByMaster: map[string]int64{}, UsedMemoryByMaster: map[string]int64{}}
	var ops, mem, used []float64
	for addr, a := range after {
		bf, ok := before[addr]
		if !ok {
			return b, fmt.Errorf("clusterbench: master %s is in the last snapshot only (a failover during the run?)", addr)
		}
		b.OpsByMaster[addr] = a.Commands - bf.Commands
		b.MemoryByMaster[addr] = a.DatasetMemory - c.empty[addr].DatasetMemory
		b.UsedMemoryByMaster[addr] = a.UsedMemory - c.empty[addr].UsedMemory
		ops = append(ops, float64(b.OpsByMaster[addr]))
		mem = append(mem, float64(b.MemoryByMaster[addr]))
		used = append(used, float64(b.UsedMemoryByMaster[addr]))
	}
	var err error
	if b.OpsShareMaxOverMin, err = maxOverMin(ops); err != nil {
		return b, fmt.Errorf("clusterbench: operations per master %v: %w", b.OpsByMaster, err)
	}
	if b.MemoryShareMaxOverMin, err = maxOverMin(mem); err != nil {
		return b, fmt.Errorf("clusterbench: used_memory_dataset above empty per master %v: %w", b.MemoryByMaster, err)
	}
	if b.UsedMemoryShareMaxOverMin, err = maxOverMin(used); err != nil {
		return b, fmt.Errorf("clusterbench: used_memory above empty per master %v: %w", b.UsedMemoryByMaster, err)
	}
	return b, nil
}

// OpsShare is the largest master's share of the commands processed
// between two snapshots over the smallest's (Balance's
// OpsShareMaxOverMin alone), for a round of a benchmark.
func OpsShare(before, after map[string]Node) (float64, error) {
	var ops []float64
	for addr, a := range after {
		bf, ok := before[addr]
		if !ok {
			return 0, fmt.Errorf("clusterbench: master %s is in the last snapshot only (a failover during the run?)", addr)
		}
		ops = append(ops, float64(a.Commands-bf.Commands))
	}
	return maxOverMin(ops)
}

// maxOverMin is max(v)/min(v), rounded to 4 places; an error when a value
// is not positive (the ratio is then undefined).
func maxOverMin(v []float64) (float64, error) {
	if len(v) == 0 {
		return 0, errors.New("no masters")
	}
	lo, hi := v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	if lo <= 0 {
		return 0, fmt.Errorf("smallest is %.0f, want > 0", lo)
	}
	return float64(int64(hi/lo*10000+0.5)) / 10000, nil
}

// Targets adds the two balance targets to t. The commands' share is judged
// on its rounds' interval around the point when the benchmark measured
// rounds (OpsShareRounds), else on the point alone. The memory share is a
// state of the data set the seed generated, measured once at the end, and
// is judged on its point.
func (b Balance) Targets(t bench.Targets) {
	opsCI := bench.Exact(b.OpsShareMaxOverMin)
	if b.OpsShareRounds != nil {
		opsCI = b.OpsShareRounds.IntervalAround(b.OpsShareMaxOverMin)
	}
	t["redis_cluster.ops_share_max_over_min"] = bench.AtMost(TargetShareMaxOverMin).Evaluate(b.OpsShareMaxOverMin, opsCI)
	t["redis_cluster.memory_share_max_over_min"] = bench.AtMost(TargetShareMaxOverMin).Evaluate(b.MemoryShareMaxOverMin, bench.Exact(b.MemoryShareMaxOverMin))
}

// Table is the report's per-master table.
func (b Balance) Table() *bench.Table {
	t := &bench.Table{Header: []string{"master", "commands in the run", "used_memory_dataset above empty (B)", "used_memory above empty (B)", "largest keys (B)"}}
	for _, addr := range slices.Sorted(maps.Keys(b.OpsByMaster)) {
		var largest []string
		for _, k := range b.LargestKeysByMaster[addr] {
			largest = append(largest, fmt.Sprintf("%s %d", k.Key, k.Bytes))
		}
		t.Rows = append(t.Rows, []string{addr, strconv.FormatInt(b.OpsByMaster[addr], 10), strconv.FormatInt(b.MemoryByMaster[addr], 10),
			strconv.FormatInt(b.UsedMemoryByMaster[addr], 10), strings.Join(largest, ", ")})
	}
	return t
}
