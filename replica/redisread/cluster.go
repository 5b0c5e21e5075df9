package redisread

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
)

// DefaultTopologyInterval is how often a Cluster reads the cluster's
// shards again (CLUSTER SLOTS) when no read found the topology stale
// first.
const DefaultTopologyInterval = 5 * time.Second

// Cluster routes reads that tolerate replica lag on a Redis Cluster to the
// replicas of each key's shard, ranked per shard by the configured policy:
// go-redis's ClusterClient chooses the node of a command itself and offers
// no hook that sees the slot's nodes, so Cluster keeps one ReadClient per
// shard (its master and replicas, from CLUSTER SLOTS) and sends each
// command to the ReadClient of its key's master, as the ClusterClient's own
// slot map names it (MasterForKey, kept current on MOVED by go-redis).
//
// Client returns a *redis.Client whose commands and pipelines never touch a
// socket of their own: a go-redis hook takes them, groups them by shard and
// runs each group as one pipeline through that shard's ReadClient (the
// groups of a pipeline concurrently), so code written against one Redis
// (the feed's batched reads, the link store's GET) reads per shard
// unchanged. Commands that are not single-key reads, keys whose master is
// not a known shard (a failover, resharding) and replies that say the
// topology moved (MOVED, ASK, CLUSTERDOWN) go to the ClusterClient, which
// reads from masters; the last two also make Cluster read the topology
// again.
//
// Replica connections send READONLY on connect. Per-shard policies are not
// exported as Prometheus metrics (their series would come and go with the
// topology); Status reports every replica of every shard.
type Cluster struct {
	cc  *redis.ClusterClient
	rc  backend.RedisConfig
	cfg Config
	log *slog.Logger

	mu      sync.RWMutex
	shards  map[string]*shard // by master address
	virtual *redis.Client

	stale            chan struct{} // a read found the topology stale
	clusterFallbacks atomic.Uint64
	stop             context.CancelFunc
	done             sync.WaitGroup
}

// shard is one master and its replicas, and the ReadClient over them.
type shard struct {
	master   string
	replicas []string // sorted
	reads    *ReadClient
}

// OpenCluster reads the cluster's shards through cc and starts refreshing
// them every DefaultTopologyInterval. rc supplies the credentials, TLS and
// timeouts of the per-node clients. Close stops it.
func OpenCluster(ctx context.Context, cc *redis.ClusterClient, rc backend.RedisConfig, cfg Config, log *slog.Logger) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cluster{cc: cc, rc: rc, cfg: cfg.WithDefaults(), log: log, shards: map[string]*shard{}, stale: make(chan struct{}, 1)}
	if err := c.refresh(ctx); err != nil {
		return nil, err
	}
	c.virtual = redis.NewClient(&redis.Options{Addr: "redisread.cluster.invalid:0", MaxRetries: -1})
	c.virtual.AddHook(routeHook{c})
	loopCtx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.done.Add(1)
	go c.refreshLoop(loopCtx)
	return c, nil
}

// Client returns the client whose reads Cluster routes per shard. Use it for
// reads only: a write sent through it goes to the key's master through the
// ClusterClient, but without the ordering a single connection gives.
func (c *Cluster) Client() *redis.Client { return c.virtual }

// Close stops the topology refresh and closes every per-node client.
func (c *Cluster) Close() error {
	c.stop()
	c.done.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.shards {
		s.close()
	}
	c.shards = map[string]*shard{}
	return c.virtual.Close()
}

// refreshLoop reads the topology every DefaultTopologyInterval, or at once
// when a read found it stale.
func (c *Cluster) refreshLoop(ctx context.Context) {
	defer c.done.Done()
	t := time.NewTicker(DefaultTopologyInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-c.stale:
			c.cc.ReloadState(ctx)
		}
		if err := c.refresh(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("redis cluster reads: read the topology", "err", err)
		}
	}
}

// markStale asks the refresh loop to read the topology now.
func (c *Cluster) markStale() {
	select {
	case c.stale <- struct{}{}:
	default:
	}
}

// refresh reads CLUSTER SLOTS and replaces the shards whose master or
// replicas changed. A replaced shard's clients are closed a little later,
// so reads that still hold it finish.
func (c *Cluster) refresh(ctx context.Context) error {
	slots, err := c.cc.ClusterSlots(ctx).Result()
	if err != nil {
		return fmt.Errorf("redisread: CLUSTER SLOTS: %w", err)
	}
	want := map[string][]string{}
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		master := s.Nodes[0].Addr
		reps := want[master]
		for _, n := range s.Nodes[1:] {
			if !slices.Contains(reps, n.Addr) {
				reps = append(reps, n.Addr)
			}
		}
		slices.Sort(reps)
		want[master] = reps
	}
	c.mu.RLock()
	var changed []string
	for master, reps := range want {
		if s, ok := c.shards[master]; !ok || !slices.Equal(s.replicas, reps) {
			changed = append(changed, master)
		}
	}
	removed := 0
	for master := range c.shards {
		if _, ok := want[master]; !ok {
			removed++
		}
	}
	c.mu.RUnlock()
	if len(changed) == 0 && removed == 0 {
		return nil
	}
	built := map[string]*shard{}
	for _, master := range changed {
		s, err := c.openShard(master, want[master])
		if err != nil {
			for _, b := range built {
				b.close()
			}
			return err
		}
		built[master] = s
	}
	c.mu.Lock()
	var old []*shard
	next := make(map[string]*shard, len(want))
	for master := range want {
		if s, ok := built[master]; ok {
			next[master] = s
		} else {
			next[master] = c.shards[master]
		}
	}
	for master, s := range c.shards {
		if next[master] != s {
			old = append(old, s)
		}
	}
	c.shards = next
	c.mu.Unlock()
	if len(old) > 0 {
		time.AfterFunc(30*time.Second, func() {
			for _, s := range old {
				s.close()
			}
		})
	}
	c.log.Info("redis cluster reads: topology", "shards", len(next), "changed", len(changed))
	return nil
}

// openShard builds the clients and the ReadClient of one shard.
func (c *Cluster) openShard(master string, replicas []string) (*shard, error) {
	primary, err := backend.NewRedisNode(c.rc, master)
	if err != nil {
		return nil, err
	}
	clients := make([]*redis.Client, 0, len(replicas))
	closeAll := func() {
		primary.Close()
		for _, r := range clients {
			r.Close()
		}
	}
	for _, addr := range replicas {
		r, err := backend.NewRedisReadOnlyNode(c.rc, addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		clients = append(clients, r)
	}
	cfg := c.cfg
	cfg.Path = c.cfg.Path + "@" + master
	reads, err := New(primary, clients, cfg, c.log, nil)
	if err != nil {
		closeAll()
		return nil, err
	}
	reads.owned = true
	return &shard{master: master, replicas: replicas, reads: reads}, nil
}

func (s *shard) close() { _ = s.reads.Close() }

// singleKeyReads are the read commands Cluster routes by their first
// argument; any other command goes to the ClusterClient.
var singleKeyReads = map[string]bool{
	"get": true, "mget": true, "exists": true, "strlen": true, "getrange": true, "ttl": true, "pttl": true, "type": true,
	"zrange": true, "zrevrange": true, "zrangebyscore": true, "zrevrangebyscore": true, "zcard": true, "zscore": true, "zmscore": true,
	"smembers": true, "sismember": true, "smismember": true, "scard": true,
	"hget": true, "hmget": true, "hgetall": true, "hexists": true, "hlen": true,
	"xrange": true, "xrevrange": true, "xlen": true,
}

// route runs cmds: grouped by the shard of their key, each group as one
// pipeline on that shard's best replica (the groups concurrently), the
// rest on the ClusterClient. It returns the first command's error, as a
// pipeline's Exec does.
func (c *Cluster) route(ctx context.Context, cmds []redis.Cmder) error {
	groups := map[*shard][]redis.Cmder{}
	var direct []redis.Cmder
	c.mu.RLock()
	for _, cmd := range cmds {
		args := cmd.Args()
		key, ok := "", len(args) >= 2 && singleKeyReads[strings.ToLower(cmd.Name())]
		if ok {
			key, ok = args[1].(string)
		}
		var s *shard
		if ok {
			if m, err := c.cc.MasterForKey(ctx, key); err == nil {
				s = c.shards[m.Options().Addr]
			}
		}
		if s == nil {
			if ok {
				c.markStale() // a single-key read whose master is no known shard
			}
			direct = append(direct, cmd)
			continue
		}
		groups[s] = append(groups[s], cmd)
	}
	c.mu.RUnlock()

	var wg sync.WaitGroup
	var redo sync.Mutex
	for s, group := range groups {
		run := func() {
			moved := s.run(ctx, group)
			if len(moved) > 0 {
				c.markStale()
				redo.Lock()
				direct = append(direct, moved...)
				redo.Unlock()
			}
		}
		if len(groups) == 1 {
			run()
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()
	if len(direct) > 0 {
		c.clusterFallbacks.Add(uint64(len(direct)))
		pipe := c.cc.Pipeline()
		for _, cmd := range direct {
			cmd.SetErr(nil)
			_ = pipe.Process(ctx, cmd)
		}
		_, _ = pipe.Exec(ctx) // the errors are in the commands
	}
	return firstCmdError(cmds)
}

// run sends group as one pipeline through the shard's ReadClient (best
// replica first, the next on a server failure, the master last) and returns
// the commands whose reply says the slot is served elsewhere now.
func (s *shard) run(ctx context.Context, group []redis.Cmder) (moved []redis.Cmder) {
	err := s.reads.Do(ctx, func(ctx context.Context, rdb *redis.Client) error {
		pipe := rdb.Pipeline()
		for _, cmd := range group {
			_ = pipe.Process(ctx, cmd)
		}
		_, _ = pipe.Exec(ctx)
		for _, cmd := range group {
			if err := cmd.Err(); serverFailed(ctx, err) {
				return err // the next server runs the whole group again
			}
		}
		return nil
	})
	if err != nil && errors.Is(err, ErrAllFailed) {
		for _, cmd := range group {
			if serverFailed(ctx, cmd.Err()) {
				cmd.SetErr(err)
			}
		}
	}
	for _, cmd := range group {
		if err := cmd.Err(); err != nil && topologyMoved(err) {
			moved = append(moved, cmd)
		}
	}
	return moved
}

// topologyMoved says whether err is a reply that the key's slot is served
// by another node now, or not at all for a moment.
func topologyMoved(err error) bool {
	for _, prefix := range []string{"MOVED", "ASK", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	return false
}

func firstCmdError(cmds []redis.Cmder) error {
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			return err
		}
	}
	return nil
}

// ClusterStatus is a snapshot of the per-shard read paths. Its Status
// lists every shard's replicas together (Share over all replica reads;
// Primary the masters, comma-separated; PrimaryReads summed), for views
// made for one replica set; Shards has each shard's own.
type ClusterStatus struct {
	Status
	Shards []Status `json:"shards"`
	// ClusterFallbacks counts commands sent to the ClusterClient (masters):
	// not single-key reads, or their shard was unknown or had moved.
	ClusterFallbacks uint64 `json:"cluster_fallbacks"`
}

// Status returns every shard's status, ordered by master address.
func (c *Cluster) Status() ClusterStatus {
	c.mu.RLock()
	st := ClusterStatus{Status: Status{Path: c.cfg.Path, Policy: string(c.cfg.Policy.Policy)}, ClusterFallbacks: c.clusterFallbacks.Load()}
	for _, s := range c.shards {
		st.Shards = append(st.Shards, s.reads.Status())
	}
	c.mu.RUnlock()
	slices.SortFunc(st.Shards, func(a, b Status) int { return strings.Compare(a.Primary, b.Primary) })
	var masters []string
	var chosen uint64
	for _, s := range st.Shards {
		masters = append(masters, s.Primary)
		st.PrimaryReads += s.PrimaryReads
		for _, r := range s.Replicas {
			chosen += r.Chosen
			st.Replicas = append(st.Replicas, r)
		}
	}
	st.Primary = strings.Join(masters, ",")
	for i := range st.Replicas {
		st.Replicas[i].Share = 0
		if chosen > 0 {
			st.Replicas[i].Share = float64(st.Replicas[i].Chosen) / float64(chosen)
		}
	}
	return st
}

// routeHook hands the virtual client's commands and pipelines to route;
// its dialer refuses, so nothing it does reaches a socket of its own.
type routeHook struct{ c *Cluster }

var errVirtualClient = errors.New("redisread: the cluster read client has no connection of its own")

func (h routeHook) DialHook(redis.DialHook) redis.DialHook {
	return func(context.Context, string, string) (net.Conn, error) { return nil, errVirtualClient }
}

func (h routeHook) ProcessHook(redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { return h.c.route(ctx, []redis.Cmder{cmd}) }
}

func (h routeHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { return h.c.route(ctx, cmds) }
}
