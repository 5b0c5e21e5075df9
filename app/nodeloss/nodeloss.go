// Package nodeloss is the node-loss scenario: the whole server on an
// OpenSearch cluster of its own (3 nodes, or 1), searches on every layout at
// a steady rate and change events flowing, then, for each victim in turn, a
// SIGKILL of one OpenSearch node (a data node, or the elected cluster
// manager: on one node, the node), a data node frozen with SIGSTOP past
// fault detection, or every node killed at once; an outage, a restart on the
// nodes' own data (or SIGCONT) and the wait for green and for every hot
// table to equal its copy. A last case rolls the cluster from one build of
// the baedal-hot plugin to another, one node at a time (upgrade.go). It counts every search's answer by phase and
// layout, stale hot hits among them, times the way back, and at the end
// checks that every accepted event reached every layout, that the layouts
// answer alike, and that every node's baedal-hot table holds exactly the hot
// rows and tombstones of the events' states (its checked `_status`). TestNodeLoss asserts on its Result;
// `baedal bench search --opensearch-nodes 3 --kill-node-after 20s` prints
// it as a JSON summary.
//
// Invariant: Run stops, by PID, every process it started (the cluster and
// the server) before it returns, and never touches another stack.
package nodeloss

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/baedal/baedal/app"
	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// Victim says which node a case kills.
type Victim string

// The victims.
const (
	// DataNode is the node, other than the elected cluster manager, that
	// holds the most primaries of the layouts' indices.
	DataNode Victim = "data_node"
	// ClusterManager is the elected cluster manager.
	ClusterManager Victim = "cluster_manager"
	// PausedDataNode is DataNode frozen with SIGSTOP for the outage, longer
	// than the cluster's fault detection (shortened to about 9 s when a run
	// has this victim), so the cluster removes it and writes go on without
	// it; then SIGCONT. It missed operations while frozen: none of its
	// stale rows may be served, while it is out or after it is back.
	PausedDataNode Victim = "paused_data_node"
	// WholeCluster is every node SIGKILLed at once and restarted on its
	// data (a full cluster restart): hot tombstones must survive it.
	WholeCluster Victim = "whole_cluster"
	// RollingUpgrade is a rolling upgrade of the baedal-hot plugin between
	// two builds (upgrade.go): every node restarted on a "previous" build,
	// then each in turn on the current one. While the versions differ the
	// hot layout answers 503 and searches naming no layout run on split;
	// after, the hot layout serves again from tables rebuilt on the new
	// build. Only on 3 nodes.
	RollingUpgrade Victim = "rolling_upgrade"
)

// faultDetection shortens OpenSearch's fault detection (default: about 30 s
// to remove a silent node) for runs that pause a node, so a pause of
// Config.Outage outlasts it.
var faultDetection = []string{
	"cluster.fault_detection.follower_check.interval=1s", "cluster.fault_detection.follower_check.timeout=2s",
	"cluster.fault_detection.follower_check.retry_count=3", "cluster.fault_detection.leader_check.interval=1s",
	"cluster.fault_detection.leader_check.timeout=2s", "cluster.fault_detection.leader_check.retry_count=3",
}

// Config shapes a run. Zero fields take the defaults of Defaults.
type Config struct {
	// Nodes of the cluster: 3 (default) or 1 (then the only victim is
	// ClusterManager, the node itself).
	Nodes int
	// Shops in the generated catalog.
	Shops int
	// Seed of the catalog and of the event stream.
	Seed uint64
	// SearchEvery is the period of each search client (one for the default
	// layout and one per layout, each one search at a time).
	SearchEvery time.Duration
	// EventEvery is the period of the event load, EventsPerTick each.
	EventEvery    time.Duration
	EventsPerTick int
	// Before is the load before the first kill; Outage how long each
	// victim stays down (PauseOutage for PausedDataNode: longer than the
	// shortened fault detection); After the load after the cluster is
	// green again.
	Before, Outage, PauseOutage, After time.Duration
	// Victims are the cases, in order, on the same cluster.
	Victims []Victim
	// GreenTimeout bounds the wait for green after a restart;
	// CatchUpTimeout the wait for every layout to hold every event.
	GreenTimeout, CatchUpTimeout time.Duration
	// Progress receives the stack's start-up output and one line per step.
	Progress io.Writer
}

// Defaults is the CI size: 60 shops, ~20 searches/s, ~10 events/s, 2 s
// before, 8 s outages (15 s pauses), 2 s after; a data node killed, the
// cluster manager killed, a data node paused, the whole cluster killed, a
// rolling upgrade of the baedal-hot plugin; up to 4 minutes for green (a
// loaded 2-core machine recovered a replica in 30 s to over 2 minutes).
func Defaults() Config {
	return Config{
		Nodes: 3, Shops: 60, Seed: 23, SearchEvery: 150 * time.Millisecond, EventEvery: 200 * time.Millisecond, EventsPerTick: 2,
		Before: 2 * time.Second, Outage: 8 * time.Second, PauseOutage: 15 * time.Second, After: 2 * time.Second,
		Victims:      []Victim{DataNode, ClusterManager, PausedDataNode, WholeCluster, RollingUpgrade},
		GreenTimeout: 4 * time.Minute, CatchUpTimeout: 2 * time.Minute,
	}
}

// Counts are the answers of one layout's searches in one phase.
type Counts struct {
	OK int `json:"ok"`
	// Refused503 counts 503s with Retry-After; Errors500 every 5xx but
	// those; Other every other answer (4xx, a 503 without Retry-After,
	// no answer at all).
	Refused503 int                  `json:"refused_503"`
	Errors500  int                  `json:"errors_500"`
	Other      int                  `json:"other"`
	Latency    bench.LatencySummary `json:"latency"`
	// Fallbacks counts 200s answered by another layout than meant.
	Fallbacks int `json:"fallbacks"`
	// AnsweredBy counts 200s by the layout that answered them.
	AnsweredBy map[string]int `json:"answered_by"`
	// StaleHits counts hot-layout hits older than the same shop's version
	// that an earlier search of the same client showed, in a search that
	// started at least staleGrace after that one ended, or older than the
	// shop's delete that the shop-head index was seen holding as long
	// before (a deleted shop shown; searchLoad.stale, watchDeletes).
	StaleHits int `json:"stale_hits"`
	// RolledBack counts the hits that would be stale but whose older
	// version is what the shop-head index's primary holds when the hit is
	// seen: the newer one came from a bulk that was never acknowledged and
	// that a primary failover rolled back (docs/hot-layout.md, "What is not
	// guaranteed"). Reported, not a failure.
	RolledBack int `json:"rolled_back"`
	lat        *bench.LatencyRecorder
}

// String is "200×n 503×n 5xx×n other×n fallbacks×n stale×n rolled_back×n p99 Xms".
func (c *Counts) String() string {
	return fmt.Sprintf("200×%d 503×%d 5xx×%d other×%d fallbacks×%d stale×%d rolled_back×%d p99 %.0fms",
		c.OK, c.Refused503, c.Errors500, c.Other, c.Fallbacks, c.StaleHits, c.RolledBack, c.Latency.P99Ms)
}

// Labels returns the search clients of the case, sorted: "default" (no
// layout named) and each layout the cluster ran.
func (c *CaseResult) Labels() []string {
	seen := map[string]bool{}
	for _, m := range c.Searches {
		for label := range m {
			seen[label] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Phases of a case.
const (
	PhaseBefore  = "before"  // the load before the kill
	PhaseOutage  = "outage"  // the node is down
	PhaseRestart = "restart" // from the restart until green
	PhaseAfter   = "after"   // green again
)

// CaseResult is one victim's outage.
type CaseResult struct {
	Victim Victim `json:"victim"`
	Node   string `json:"node"`
	// SecondsToRejoin is from the restart until the cluster had every node
	// again; SecondsToGreen until it was green.
	SecondsToRejoin float64 `json:"seconds_to_rejoin"`
	SecondsToGreen  float64 `json:"seconds_to_green"`
	// SecondsToConsistent is from the restart (or SIGCONT) until every data
	// node's hot table was ready and equal to its copy (the plugin's checked
	// status); 0 without the hot layout.
	SecondsToConsistent float64 `json:"seconds_to_consistent,omitempty"`
	// Searches maps phase → layout ("default" for a search that named
	// none) → counts.
	Searches map[string]map[string]*Counts `json:"searches"`
	// Upgrade is what the RollingUpgrade case saw at each step.
	Upgrade *UpgradeResult `json:"upgrade,omitempty"`
}

// Result is a run's outcome.
type Result struct {
	Nodes int          `json:"opensearch_nodes"`
	Cases []CaseResult `json:"cases"`
	// EventsAccepted counts events answered 202; EventPostFailures posts
	// that were not (the event log is on Redis, which stays up).
	EventsAccepted    int64 `json:"events_accepted"`
	EventPostFailures int64 `json:"event_post_failures"`
	// EventsLost counts shops × layouts not at the version of their last
	// accepted event after CatchUpTimeout; DeadLettered the events the
	// indexers gave up on.
	EventsLost   int   `json:"events_lost"`
	DeadLettered int64 `json:"dead_lettered"`
	// LayoutsDiffer names the first search whose answers differ between
	// layouts at the end, if any.
	LayoutsDiffer string `json:"layouts_differ,omitempty"`
	// HotTables is each node's baedal-hot table at the end, beside what the
	// accepted events and the shop index describe (empty without the hot
	// layout); HotTablesDiffer counts the nodes whose table differs.
	HotTables       []HotTableCheck `json:"hot_tables,omitempty"`
	HotTablesDiffer int             `json:"hot_tables_differ"`
	// ReadyStatus and Ready are what /readyz answered before the load:
	// each layout's index health and replica count.
	ReadyStatus string          `json:"ready_status"`
	Ready       []layout.Health `json:"ready"`
	// BadAnswers are the first answers that were neither 200 nor 503 with
	// Retry-After, or that showed stale hits.
	BadAnswers []string `json:"bad_answers,omitempty"`
}

// ErrClusterStart wraps a failure to start the cluster (a test skips
// locally and fails in CI on it).
var ErrClusterStart = errors.New("nodeloss: the cluster did not start")

// Run starts a stack of cfg.Nodes OpenSearch nodes in a temporary directory, the server on it,
// runs every case and stops everything. The directory (the servers' logs)
// is kept when Run fails, named in the error, when the result shows a
// defect (Result.Defective), or when keepLogs says so; otherwise it is
// removed.
func Run(ctx context.Context, cfg Config, keepLogs func(dir string) bool) (_ *Result, err error) {
	cfg = cfg.withDefaults()
	if cfg.Nodes != 1 && cfg.Nodes != 3 {
		return nil, fmt.Errorf("nodeloss: nodes: got %d, allowed: 1, 3", cfg.Nodes)
	}
	if cfg.Nodes == 1 && slices.ContainsFunc(cfg.Victims, func(v Victim) bool { return v != ClusterManager && v != WholeCluster }) {
		return nil, fmt.Errorf("nodeloss: victims %v: a 1-node cluster has only its cluster manager to kill", cfg.Victims)
	}
	if cfg.Nodes == 1 && slices.Contains(cfg.Victims, RollingUpgrade) {
		return nil, fmt.Errorf("nodeloss: victims %v: a rolling upgrade needs 3 nodes", cfg.Victims)
	}
	progress := cfg.Progress
	dir, err := os.MkdirTemp("", "baedal-nodeloss-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as postgres
		return nil, err
	}
	var builds *upgradeBuilds
	if slices.Contains(cfg.Victims, RollingUpgrade) {
		// Before the cluster starts, so Maven does not compete with it.
		if builds, err = buildPreviousHotPlugin(ctx, dir, progress); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %w", ErrClusterStart, err)
		}
	}
	lc := localstack.Defaults()
	lc.StateDir, lc.PortBase, lc.OpenSearchNodes = dir, 0, cfg.Nodes
	if slices.Contains(cfg.Victims, PausedDataNode) {
		lc.OpenSearchSettings = faultDetection
	}
	upCtx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	st, err := localstack.Up(upCtx, lc, progress)
	cancel()
	if err != nil {
		_ = localstack.Down(dir, io.Discard)
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrClusterStart, err)
	}
	var res *Result
	defer func() {
		if err := localstack.Down(dir, io.Discard); err != nil {
			fmt.Fprintf(progress, "nodeloss: stop the stack in %s: %v\n", dir, err)
		}
		switch {
		case err != nil:
			err = fmt.Errorf("%w (logs kept in %s/logs)", err, dir)
		case res.Defective():
			fmt.Fprintf(progress, "nodeloss: the run found a defect; logs kept in %s/logs\n", dir)
		case keepLogs == nil || !keepLogs(dir):
			os.RemoveAll(dir)
		}
	}()
	res, err = run(ctx, cfg, st, builds)
	return res, err
}

// Defective reports whether the run found something a restart must not
// leave behind: an answer neither 200 nor 503 or with stale hits (in
// BadAnswers), a lost or dead-lettered event, layouts that disagree, or a
// hot table that differs.
func (r *Result) Defective() bool {
	return len(r.BadAnswers) > 0 || r.EventPostFailures > 0 || r.EventsLost > 0 || r.DeadLettered > 0 ||
		r.LayoutsDiffer != "" || r.HotTablesDiffer > 0
}

func (c Config) withDefaults() Config {
	d := Defaults()
	if c.Nodes == 0 {
		c.Nodes = d.Nodes
	}
	if c.Shops == 0 {
		c.Shops = d.Shops
	}
	if c.Seed == 0 {
		c.Seed = d.Seed
	}
	if c.SearchEvery == 0 {
		c.SearchEvery = d.SearchEvery
	}
	if c.EventEvery == 0 {
		c.EventEvery = d.EventEvery
	}
	if c.EventsPerTick == 0 {
		c.EventsPerTick = d.EventsPerTick
	}
	if c.Before == 0 {
		c.Before = d.Before
	}
	if c.Outage == 0 {
		c.Outage = d.Outage
	}
	if c.PauseOutage == 0 {
		c.PauseOutage = d.PauseOutage
	}
	if c.After == 0 {
		c.After = d.After
	}
	if len(c.Victims) == 0 {
		c.Victims = d.Victims
	}
	if c.GreenTimeout == 0 {
		c.GreenTimeout = d.GreenTimeout
	}
	if c.CatchUpTimeout == 0 {
		c.CatchUpTimeout = d.CatchUpTimeout
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	return c
}

const adminToken = "nodeloss-scenario-admin-token"

func run(ctx context.Context, cfg Config, st *localstack.State, builds *upgradeBuilds) (*Result, error) {
	acfg := app.Defaults()
	// The rolling upgrade waits for the server to notice each step.
	acfg.HotPluginCheckEvery = time.Second
	acfg.API.Addr = "127.0.0.1:0"
	acfg.API.AdminToken = adminToken
	acfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	acfg.Backends.Redis.Addr = st.RedisAddr
	acfg.Backends.Postgres.URL = st.PostgresURL
	acfg.Indexer.RetryBase, acfg.Indexer.RetryMax = 50*time.Millisecond, time.Second
	// The server's log goes beside the servers' logs, kept when a run fails.
	logFile, err := os.Create(filepath.Join(st.StateDir, "logs", "baedal-serve.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, nil))
	srvCtx, stopServer := context.WithCancel(ctx)
	addrc, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- app.Run(srvCtx, acfg, log, func(a string) { addrc <- a }) }()
	defer func() { stopServer(); <-done }()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		done <- err
		return nil, fmt.Errorf("nodeloss: server: %w", err)
	}
	client, err := backend.OpenOpenSearch(backend.OpenSearchConfig{URLs: st.OpenSearchURLs, RequestTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	osc := osapi.New(client)
	// The layouts this cluster runs: the hot layout needs its plugin on
	// every node (the server answers 503 for it otherwise, saying why).
	runnable, unavailable, err := layout.RunnableKinds(ctx, osc)
	if err != nil {
		return nil, fmt.Errorf("nodeloss: which layouts the cluster runs: %w", err)
	}
	for k, why := range unavailable {
		fmt.Fprintf(cfg.Progress, "nodeloss: without the %s layout: %s\n", k, why)
	}
	kinds := slices.DeleteFunc(slices.Clone(acfg.Indexer.Layouts), func(k layout.Kind) bool { return !slices.Contains(runnable, k) })
	icfg := acfg.Indexer
	icfg.Layouts = kinds
	if err := waitGreen(ctx, osc, acfg.Indexer.Layout, kinds, 2*time.Minute); err != nil {
		return nil, fmt.Errorf("nodeloss: before the load: %w", err)
	}

	res := &Result{Nodes: len(st.OpenSearchURLs)}
	if res.ReadyStatus, res.Ready, err = readyz(addr); err != nil {
		return nil, err
	}
	events := &eventLoad{addr: addr, ref: map[int64]*catalog.ShopState{}}
	var initial []catalog.Event
	for _, s := range catalog.NewGenerator(cfg.Seed).Shops(cfg.Shops) {
		initial = append(initial, s.UpsertEvent())
	}
	if err := events.post(initial); err != nil {
		return nil, err
	}
	if lost, err := waitIndexed(ctx, osc, icfg, events.reference(), cfg.CatchUpTimeout); err != nil || lost > 0 {
		return nil, fmt.Errorf("nodeloss: the catalog was not indexed in %s: %d shops behind: %v", cfg.CatchUpTimeout, lost, err)
	}
	fmt.Fprintf(cfg.Progress, "nodeloss: %d shops indexed in every layout; load starts\n", cfg.Shops)

	stream := catalog.NewEventStream(cfg.Seed, cfg.Shops)
	labels := append([]string{"default"}, kindNames(kinds)...)
	searches := &searchLoad{addr: addr, osc: osc, headAlias: acfg.Indexer.Layout.Alias(layout.RoleHotShops),
		counts: map[string]map[string]*Counts{}, labels: labels}
	searches.phase.Store(string(cfg.Victims[0]) + "/" + PhaseBefore)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(cfg.EventEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				batch := make([]catalog.Event, cfg.EventsPerTick)
				for i := range batch {
					batch[i] = stream.Next()
				}
				_ = events.post(batch)
			}
		}
	})
	for _, label := range labels {
		wg.Go(func() { searches.run(stop, label, cfg.SearchEvery) })
	}
	if slices.Contains(kinds, layout.Hot) {
		wg.Go(func() { events.watchDeletes(stop, osc, acfg.Indexer.Layout.Alias(layout.RoleHotShops), searches) })
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	sleep(ctx, cfg.Before)

	for i, v := range cfg.Victims {
		prefix := string(v) + "/"
		if i > 0 {
			searches.phase.Store(prefix + PhaseBefore)
			sleep(ctx, cfg.After)
		}
		if v == RollingUpgrade {
			c, err := rollingUpgrade(ctx, cfg, st, osc, addr, acfg.Indexer.Layout, kinds, searches, builds)
			if err != nil {
				return nil, err
			}
			res.Cases = append(res.Cases, c)
			continue
		}
		nodes, err := pickVictims(ctx, osc, v, st)
		if err != nil {
			return nil, err
		}
		node := strings.Join(nodes, ",")
		searches.phase.Store(prefix + PhaseOutage)
		for _, n := range nodes {
			if v == PausedDataNode {
				err = st.Pause(n)
			} else {
				err = st.Kill(n)
			}
			if err != nil {
				return nil, err
			}
		}
		outage := cfg.Outage
		if v == PausedDataNode {
			outage = cfg.PauseOutage
		}
		fmt.Fprintf(cfg.Progress, "nodeloss: %s %s (%s); out for %s\n", map[bool]string{true: "SIGSTOPped", false: "SIGKILLed"}[v == PausedDataNode], node, v, outage)
		sleep(ctx, outage)
		searches.phase.Store(prefix + PhaseRestart)
		restarted := time.Now()
		if v == PausedDataNode {
			if err := st.Resume(nodes[0]); err != nil {
				return nil, err
			}
			err = waitNodes(ctx, osc, len(st.OpenSearchURLs), cfg.GreenTimeout)
		} else {
			err = st.RestartOpenSearchNodes(ctx, nodes...)
		}
		if err != nil {
			return nil, fmt.Errorf("nodeloss: bring %s back: %w", node, err)
		}
		c := CaseResult{Victim: v, Node: node, SecondsToRejoin: time.Since(restarted).Seconds()}
		if err := waitGreen(ctx, osc, acfg.Indexer.Layout, kinds, cfg.GreenTimeout); err != nil {
			return nil, fmt.Errorf("nodeloss: after restarting %s: %w", node, err)
		}
		c.SecondsToGreen = time.Since(restarted).Seconds()
		if slices.Contains(kinds, layout.Hot) {
			if err := waitHotConsistent(ctx, osc, acfg.Indexer.Layout.Alias(layout.RoleHotShops), cfg.GreenTimeout); err != nil {
				return nil, fmt.Errorf("nodeloss: after bringing %s back: %w", node, err)
			}
			c.SecondsToConsistent = time.Since(restarted).Seconds()
		}
		fmt.Fprintf(cfg.Progress, "nodeloss: %s rejoined after %.1f s, green after %.1f s, hot tables consistent after %.1f s\n",
			node, c.SecondsToRejoin, c.SecondsToGreen, c.SecondsToConsistent)
		searches.phase.Store(prefix + PhaseAfter)
		sleep(ctx, cfg.After)
		res.Cases = append(res.Cases, c)
	}
	stopLoad()

	searches.mu.Lock()
	for i := range res.Cases {
		c := &res.Cases[i]
		c.Searches = map[string]map[string]*Counts{}
		for _, phase := range []string{PhaseBefore, PhaseOutage, PhaseRestart, PhaseMixed, PhaseAfter} {
			if m := searches.counts[string(c.Victim)+"/"+phase]; m != nil {
				for _, n := range m {
					n.Latency = n.lat.Summary()
				}
				c.Searches[phase] = m
			}
		}
	}
	res.BadAnswers = searches.bad
	searches.mu.Unlock()

	res.EventsAccepted, res.EventPostFailures = events.accepted.Load(), events.failures.Load()
	if res.EventsLost, err = waitIndexed(ctx, osc, icfg, events.reference(), cfg.CatchUpTimeout); err != nil {
		return nil, err
	}
	if res.DeadLettered, err = deadLetters(addr); err != nil {
		return nil, err
	}
	for _, k := range kinds {
		for _, alias := range acfg.Indexer.Layout.Aliases(k) {
			if err := osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
				return nil, err
			}
		}
	}
	if res.LayoutsDiffer, err = compareLayouts(addr, kinds); err != nil {
		return nil, err
	}
	if slices.Contains(kinds, layout.Hot) {
		if res.HotTables, err = checkHotTables(ctx, osc, icfg, cfg.Nodes, events.states(), cfg.CatchUpTimeout); err != nil {
			return nil, err
		}
		res.HotTablesDiffer = cfg.Nodes - len(res.HotTables) // nodes that did not answer
		for _, c := range res.HotTables {
			if !c.Equal() {
				res.HotTablesDiffer++
			}
		}
	}
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// waitGreen waits until every index of the layouts exists and the cluster is
// green with no shard relocating.
func waitGreen(ctx context.Context, osc *osapi.Client, idx layout.Config, kinds []layout.Kind, timeout time.Duration) error {
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		var health struct {
			Status     string `json:"status"`
			Relocating int    `json:"relocating_shards"`
		}
		if err := osc.Do(ctx, http.MethodGet, "/_cluster/health?wait_for_status=green&timeout=2s", nil, &health); err != nil {
			last = err.Error()
			continue
		}
		last = fmt.Sprintf("cluster %s, %d shards relocating", health.Status, health.Relocating)
		if health.Status != "green" || health.Relocating > 0 {
			continue
		}
		green := true
		for _, k := range kinds {
			if h := idx.Health(ctx, osc, k); h.Health != "green" {
				green, last = false, h.String()
			}
		}
		if green {
			return nil
		}
	}
	return fmt.Errorf("not green within %s: %s", timeout, last)
}

// pickVictim returns the node a case kills.
func pickVictim(ctx context.Context, osc *osapi.Client, v Victim) (string, error) {
	var managers []struct {
		Node string `json:"node"`
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cat/cluster_manager?format=json", nil, &managers); err != nil || len(managers) != 1 {
		return "", fmt.Errorf("nodeloss: elected cluster manager: %v %v", managers, err)
	}
	if v == ClusterManager {
		return managers[0].Node, nil
	}
	var shards []struct {
		Index, Prirep, Node string
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cat/shards/baedal_*?format=json&h=index,prirep,node", nil, &shards); err != nil {
		return "", err
	}
	score := map[string]int{}
	for _, s := range shards {
		if s.Node != managers[0].Node && s.Node != "" {
			score[s.Node] += map[string]int{"p": 100, "r": 1}[s.Prirep]
		}
	}
	best := ""
	for _, n := range slices.Sorted(maps.Keys(score)) {
		if best == "" || score[n] > score[best] {
			best = n
		}
	}
	if best == "" {
		return "", fmt.Errorf("nodeloss: no node but the cluster manager holds a shard: %+v", shards)
	}
	return best, nil
}

// pickVictims returns the nodes a case takes out: every node for
// WholeCluster, else the one pickVictim names.
func pickVictims(ctx context.Context, osc *osapi.Client, v Victim, st *localstack.State) ([]string, error) {
	if v == WholeCluster {
		var nodes []string
		for _, p := range st.Processes {
			if strings.HasPrefix(p.Component, "opensearch-") {
				nodes = append(nodes, p.Component)
			}
		}
		return nodes, nil
	}
	if v == PausedDataNode {
		v = DataNode
	}
	n, err := pickVictim(ctx, osc, v)
	return []string{n}, err
}

// waitNodes waits until the cluster has n nodes again.
func waitNodes(ctx context.Context, osc *osapi.Client, n int, timeout time.Duration) error {
	var last error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		var h struct {
			Nodes int `json:"number_of_nodes"`
		}
		if last = osc.Do(ctx, http.MethodGet, "/_cluster/health", nil, &h); last == nil && h.Nodes == n {
			return nil
		}
	}
	return fmt.Errorf("the cluster does not have its %d nodes after %s: %v", n, timeout, last)
}

// waitHotConsistent waits until every data node's hot table is ready and
// equal to its copy of the shop-head index (the plugin's checked status).
func waitHotConsistent(ctx context.Context, osc *osapi.Client, alias string, timeout time.Duration) error {
	var last string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(500 * time.Millisecond) {
		st, err := layout.FetchHotStatus(ctx, osc, alias, true)
		if err == nil && st.Ready && st.Agrees != nil && *st.Agrees {
			return nil
		}
		last = fmt.Sprintf("%s %v", st.Problem(), err)
	}
	return fmt.Errorf("the hot tables are not all ready and equal to their copies after %s: %s", timeout, last)
}

// eventLoad posts events and keeps the reference of the accepted ones: each
// shop's state after its accepted events, in order.
type eventLoad struct {
	addr               string
	mu                 sync.Mutex
	ref                map[int64]*catalog.ShopState
	accepted, failures atomic.Int64
	// deletes are the accepted shop deletes (shop → version) whose head
	// tombstone watchDeletes has not seen yet.
	deletes map[int64]int64
}

func (l *eventLoad) post(events []catalog.Event) error {
	body, err := json.Marshal(events)
	if err != nil {
		return err
	}
	resp, err := http.Post("http://"+l.addr+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		l.failures.Add(1)
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		l.failures.Add(1)
		return fmt.Errorf("nodeloss: POST /v1/events: %d", resp.StatusCode)
	}
	l.accepted.Add(int64(len(events)))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range events {
		s := l.ref[ev.AggregateID()]
		if s == nil {
			s = new(catalog.ShopState)
			l.ref[ev.AggregateID()] = s
		}
		if applied, _ := s.Apply(ev); applied && s.Deleted {
			if l.deletes == nil {
				l.deletes = map[int64]int64{}
			}
			l.deletes[ev.AggregateID()] = s.Version
		}
	}
	return nil
}

// watchDeletes reads, every 300 ms, the head documents of the shops whose
// delete was accepted (a real-time get from the shop-head index), and once
// one holds the delete's tombstone, tells the searches (observeDelete): a
// hot hit of that shop at an older version, in a search that starts over
// staleGrace later, is stale (a table that missed the delete).
func (l *eventLoad) watchDeletes(stop <-chan struct{}, osc *osapi.Client, headAlias string, searches *searchLoad) {
	tick := time.NewTicker(300 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		l.mu.Lock()
		pending := maps.Clone(l.deletes)
		l.mu.Unlock()
		if len(pending) == 0 {
			continue
		}
		ids := make([]string, 0, len(pending))
		for id := range pending {
			ids = append(ids, strconv.FormatInt(id, 10))
		}
		body, _ := json.Marshal(map[string][]string{"ids": ids})
		var resp struct {
			Docs []struct {
				ID     string `json:"_id"`
				Found  bool   `json:"found"`
				Source struct {
					Version int64 `json:"version"`
					Deleted bool  `json:"deleted"`
				} `json:"_source"`
			} `json:"docs"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := osc.Do(ctx, http.MethodPost, "/"+headAlias+"/_mget?realtime=true&_source=version,deleted", body, &resp)
		cancel()
		if err != nil {
			continue // a node down: read again at the next tick
		}
		now := time.Now()
		l.mu.Lock()
		for _, d := range resp.Docs {
			id, err := strconv.ParseInt(d.ID, 10, 64)
			want, ok := l.deletes[id]
			if err != nil || !ok || !d.Found || d.Source.Version < want {
				continue
			}
			// The tombstone, or a newer write that recreated the shop
			// (whose own versions the searches check).
			if d.Source.Deleted && d.Source.Version == want {
				searches.observeDelete(id, want, now)
			}
			delete(l.deletes, id)
		}
		l.mu.Unlock()
	}
}

// states returns a copy of each shop's state after the accepted events.
func (l *eventLoad) states() map[int64]*catalog.ShopState {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]*catalog.ShopState, len(l.ref))
	for id, s := range l.ref {
		c := s.Clone()
		out[id] = &c
	}
	return out
}

// reference returns each shop's expected version (0: must not exist).
func (l *eventLoad) reference() map[int64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]int64, len(l.ref))
	for id, s := range l.ref {
		out[id] = 0
		if !s.Deleted {
			out[id] = s.Version
		}
	}
	return out
}

// waitIndexed waits until every layout holds every shop at its expected
// version (read back in real time, all parts of the shop aggregated) and
// returns how many shops × layouts are still behind after timeout.
func waitIndexed(ctx context.Context, osc *osapi.Client, cfg indexer.Config, want map[int64]int64, timeout time.Duration) (int, error) {
	ids := slices.Sorted(maps.Keys(want))
	behind := -1
	for deadline := time.Now().Add(timeout); ; time.Sleep(500 * time.Millisecond) {
		behind = 0
		for _, k := range cfg.Layouts {
			ix, err := indexer.New(cfg, k, osc, nil, nil)
			if err != nil {
				return 0, err
			}
			held, err := ix.Fetch(ctx, ids)
			if err != nil {
				behind = len(ids) // unknown yet: retried
				continue
			}
			for _, id := range ids {
				if got := held[id].Aggregate(k); got.Version != want[id] && !(want[id] == 0 && got.Deleted) {
					behind++
				}
			}
		}
		if behind == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			return behind, nil
		}
	}
}

func readyz(addr string) (string, []layout.Health, error) {
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status  string          `json:"status"`
		Layouts []layout.Health `json:"layouts"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return "", nil, fmt.Errorf("nodeloss: /readyz: %d %w", resp.StatusCode, err)
	}
	return body.Status, body.Layouts, nil
}

func deadLetters(addr string) (int64, error) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/admin/dead-letters", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var page struct {
		Total int64 `json:"total"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("nodeloss: dead letters: %d %v", resp.StatusCode, err)
	}
	return page.Total, nil
}

// Searches are the searches of the load and of the final comparison.
var Searches = []string{
	"q=%EC%B9%98%ED%82%A8&lat=37.4979&lon=127.0276",
	"lat=37.5&lon=127.03&sort=distance&size=20",
	"q=%ED%94%BC%EC%9E%90&sort=rating&open_now=true",
	"lat=37.55&lon=126.98&sort=eta&max_delivery_fee=3000",
}

// compareLayouts runs every search on every layout and names the first that
// answers differently (total, shop ids and versions, in order).
func compareLayouts(addr string, kinds []layout.Kind) (string, error) {
	for _, q := range Searches {
		var first string
		for _, k := range kinds {
			resp, err := http.Get("http://" + addr + "/v1/search?" + q + "&layout=" + string(k))
			if err != nil {
				return "", err
			}
			var r struct {
				Total int `json:"total"`
				Shops []struct {
					ID      int64 `json:"id"`
					Version int64 `json:"version"`
				} `json:"shops"`
			}
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				return "", fmt.Errorf("nodeloss: %s on %s: %d %v", q, k, resp.StatusCode, err)
			}
			got := fmt.Sprintf("total %d, shops %v", r.Total, r.Shops)
			if first == "" {
				first = got
			} else if got != first {
				return fmt.Sprintf("%s: %s answers %s, %s answers %s", q, k, got, kinds[0], first), nil
			}
		}
	}
	return "", nil
}

// kindNames returns the layouts' names.
func kindNames(kinds []layout.Kind) []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return out
}

// searchLoad sends searches at a steady rate, one client per layout and one
// for the default layout (a slow search delays only its own client), and
// counts the answers by phase and layout.
type searchLoad struct {
	addr string
	// osc and headAlias read the shop-head index's primary, to tell a
	// stale hit from a rolled-back write (heldByPrimary).
	osc       *osapi.Client
	headAlias string
	phase     atomic.Value // string
	mu        sync.Mutex
	counts    map[string]map[string]*Counts
	bad       []string
	// seen is, per client (label), each shop's newest version a search
	// showed and when that search ended, or its delete's version and when
	// the shop-head index was seen holding it.
	seen map[string]map[int64]seenVersion
	// labels are the clients (observeDelete tells each).
	labels []string
}

type seenVersion struct {
	version int64
	at      time.Time
	// deleted: the version is a delete's, seen in the shop-head index.
	deleted bool
}

// observeDelete records that the shop-head index held the tombstone of
// shop id at version when at: for every client, a hot hit of the shop at
// an older version in a search starting staleGrace later is stale.
func (s *searchLoad) observeDelete(id, version int64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seen == nil {
		s.seen = map[string]map[int64]seenVersion{}
	}
	for _, label := range s.labels {
		seen := s.seen[label]
		if seen == nil {
			seen = map[int64]seenVersion{}
			s.seen[label] = seen
		}
		if prev, ok := seen[id]; !ok || version > prev.version {
			seen[id] = seenVersion{version: version, at: at, deleted: true}
		}
	}
}

// staleGrace is how long after a search that showed a version another may
// still show an older one without counting as stale: a write reaches each
// copy's table within milliseconds of the others, and a search in that
// window may read either copy. A node that missed writes serves versions
// seconds or minutes old.
const staleGrace = time.Second

// staleHit is a hit older than a version the same client saw before.
type staleHit struct {
	hitVersion
	example string
}

// stale returns the hits of an answer (shop id and version) that are older
// than a version the same client saw in a search that ended at least
// staleGrace before this one started, and records the answer's versions.
// Callers hold s.mu.
func (s *searchLoad) stale(label string, start, end time.Time, hits []hitVersion) (stale []staleHit) {
	if s.seen == nil {
		s.seen = map[string]map[int64]seenVersion{}
	}
	seen := s.seen[label]
	if seen == nil {
		seen = map[int64]seenVersion{}
		s.seen[label] = seen
	}
	for _, h := range hits {
		prev, ok := seen[h.ID]
		if ok && h.Version < prev.version && prev.at.Add(staleGrace).Before(start) {
			example := fmt.Sprintf("shop %d at version %d, %.1f s after a search showed version %d", h.ID, h.Version, start.Sub(prev.at).Seconds(), prev.version)
			if prev.deleted {
				example = fmt.Sprintf("shop %d at version %d, %.1f s after the shop-head index held its delete at version %d", h.ID, h.Version, start.Sub(prev.at).Seconds(), prev.version)
			}
			stale = append(stale, staleHit{h, example})
		}
		if !ok || h.Version > prev.version {
			seen[h.ID] = seenVersion{version: h.Version, at: end}
		}
	}
	return stale
}

// heldByPrimary reports whether the shop-head index's primary copy holds
// the shop at version or older right now (a real-time get on the node the
// cluster manager names for the primary): then a hit at that version is
// what the index holds, and the newer version shown before was rolled back.
func (s *searchLoad) heldByPrimary(id, version int64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var shards []struct {
		Prirep string `json:"prirep"`
		State  string `json:"state"`
		Node   string `json:"node"`
	}
	if err := s.osc.Do(ctx, http.MethodGet, "/_cat/shards/"+s.headAlias+"?format=json&h=prirep,state,node&local=false", nil, &shards); err != nil {
		return false
	}
	primary := ""
	for _, sh := range shards {
		if sh.Prirep == "p" && sh.State == "STARTED" {
			primary = sh.Node
		}
	}
	if primary == "" {
		return false
	}
	var doc struct {
		Found  bool `json:"found"`
		Source struct {
			Version int64 `json:"version"`
		} `json:"_source"`
	}
	path := "/" + s.headAlias + "/_doc/" + strconv.FormatInt(id, 10) + "?realtime=true&_source=version&preference=_only_nodes:" + primary
	if err := s.osc.Do(ctx, http.MethodGet, path, nil, &doc); err != nil {
		return false
	}
	return doc.Found && doc.Source.Version <= version
}

type hitVersion struct {
	ID      int64 `json:"id"`
	Version int64 `json:"version"`
}

func (s *searchLoad) run(stop <-chan struct{}, label string, every time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		url := "http://" + s.addr + "/v1/search?" + Searches[i%len(Searches)]
		if label != "default" {
			url += "&layout=" + label
		}
		phase := s.phase.Load().(string)
		start := time.Now()
		code, retryAfter, body := 0, "", ""
		var answer struct {
			Layout       string       `json:"layout"`
			FallbackFrom string       `json:"fallback_from"`
			Shops        []hitVersion `json:"shops"`
		}
		if resp, err := client.Get(url); err != nil {
			body = err.Error()
		} else {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			code, retryAfter, body = resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
			_ = json.Unmarshal(b, &answer)
		}
		took := time.Since(start)
		s.mu.Lock()
		if s.counts[phase] == nil {
			s.counts[phase] = map[string]*Counts{}
		}
		n := s.counts[phase][label]
		if n == nil {
			n = &Counts{lat: bench.NewLatencyRecorder()}
			s.counts[phase][label] = n
		}
		switch {
		case code == http.StatusOK:
			n.OK++
			n.lat.Record(took)
			if n.AnsweredBy == nil {
				n.AnsweredBy = map[string]int{}
			}
			n.AnsweredBy[answer.Layout]++
			if answer.FallbackFrom != "" {
				n.Fallbacks++
				break // another layout answered: its versions are not this client's
			}
			if answer.Layout != string(layout.Hot) {
				// nested and split show what each copy's last refresh holds, one
				// second apart at most between copies: OpenSearch's own read
				// semantics, not baedal's claim.
				break
			}
			if stale := s.stale(label, start, start.Add(took), answer.Shops); len(stale) > 0 {
				s.mu.Unlock()
				var rolledBack []bool
				for _, h := range stale {
					rolledBack = append(rolledBack, s.heldByPrimary(h.ID, h.Version))
				}
				s.mu.Lock()
				for i, h := range stale {
					if rolledBack[i] {
						n.RolledBack++
						continue
					}
					n.StaleHits++
					if len(s.bad) < 5 {
						s.bad = append(s.bad, fmt.Sprintf("%s %s: stale hit: %s", phase, label, h.example))
					}
				}
			}
		case code == http.StatusServiceUnavailable && retryAfter != "":
			n.Refused503++
			n.lat.Record(took)
		case code >= 500:
			n.Errors500++
		default:
			n.Other++
		}
		if code != http.StatusOK && (code != http.StatusServiceUnavailable || retryAfter == "") && len(s.bad) < 5 {
			s.bad = append(s.bad, fmt.Sprintf("%s %s: %d %.300s", phase, label, code, body))
		}
		s.mu.Unlock()
	}
}
