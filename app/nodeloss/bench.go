package nodeloss

import (
	"encoding/json"
	"flag"
	"fmt"
	"github.com/baedal/baedal/bench"
	"os"
	"path/filepath"
	"time"
)

// BenchConfig is the node-loss scenario of `baedal bench search`: it runs
// when KillNodeAfter is set.
type BenchConfig struct {
	// OpenSearchNodes must be 3 for the scenario.
	OpenSearchNodes int
	// KillNodeAfter is the load before the SIGKILL; 0 means no scenario.
	KillNodeAfter time.Duration
	// Outage is how long the node stays down.
	Outage time.Duration
	// Victim is data_node, cluster_manager, paused_data_node (SIGSTOP for
	// the outage, then SIGCONT) or whole_cluster.
	Victim string
	// Shops in the catalog.
	Shops int
}

// BenchDefaults is one data node down for 20 s after 20 s of load, on a
// 500-shop catalog.
func BenchDefaults() BenchConfig {
	return BenchConfig{OpenSearchNodes: 1, Outage: 20 * time.Second, Victim: string(DataNode), Shops: 500}
}

// Flags binds the scenario's flags (beside bench search's own).
func (c *BenchConfig) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.OpenSearchNodes, "opensearch-nodes", c.OpenSearchNodes, "with 3 and --kill-node-after: the node-loss scenario on a 3-node cluster of its own")
	fs.DurationVar(&c.KillNodeAfter, "kill-node-after", c.KillNodeAfter, "node-loss scenario: SIGKILL an OpenSearch node after this much load (needs --opensearch-nodes 3)")
	fs.DurationVar(&c.Outage, "node-outage", c.Outage, "node-loss scenario: how long the node stays down before it is started again")
	fs.StringVar(&c.Victim, "kill-node", c.Victim, "node-loss scenario: data_node, cluster_manager, paused_data_node (SIGSTOP for the outage, then SIGCONT) or whole_cluster")
	fs.IntVar(&c.Shops, "node-loss-shops", c.Shops, "node-loss scenario: shops in the catalog")
}

// Enabled reports whether the scenario is asked for.
func (c *BenchConfig) Enabled() bool { return c.KillNodeAfter > 0 }

// Validate names the first invalid field.
func (c *BenchConfig) Validate() error {
	switch {
	case c.OpenSearchNodes != 1 && c.OpenSearchNodes != 3:
		return fmt.Errorf("opensearch-nodes: got %d, allowed: 1, 3", c.OpenSearchNodes)
	case c.Enabled() && c.OpenSearchNodes != 3:
		return fmt.Errorf("kill-node-after: needs --opensearch-nodes 3 (a node of a single-node cluster is the whole cluster)")
	case c.KillNodeAfter < 0 || c.Outage <= 0:
		return fmt.Errorf("kill-node-after %s, node-outage %s: must be >= 0 and > 0", c.KillNodeAfter, c.Outage)
	case c.Victim != string(DataNode) && c.Victim != string(ClusterManager) && c.Victim != string(PausedDataNode) && c.Victim != string(WholeCluster):
		return fmt.Errorf("kill-node: got %q, allowed: data_node, cluster_manager, paused_data_node, whole_cluster", c.Victim)
	case c.Shops < 1 || c.Shops > 100_000:
		return fmt.Errorf("node-loss-shops: got %d, allowed: 1..100000", c.Shops)
	}
	return nil
}

// Config is the scenario's run configuration: one case, 10 s after green.
func (c *BenchConfig) Config() Config {
	cfg := Defaults()
	cfg.Shops, cfg.Before, cfg.Outage, cfg.PauseOutage, cfg.After = c.Shops, c.KillNodeAfter, c.Outage, c.Outage, 10*time.Second
	cfg.Victims = []Victim{Victim(c.Victim)}
	return cfg
}

// LayoutSummary is one layout's figures in the benchmark summary ("default"
// is the searches that named no layout).
type LayoutSummary struct {
	OKBefore       int     `json:"ok_before"`
	OKDuringOutage int     `json:"ok_during_outage"`
	Refused503     int     `json:"refused_503"`
	Errors500      int     `json:"errors_500"`
	Other          int     `json:"other_errors"`
	Fallbacks      int     `json:"fallbacks"`
	StaleHits      int     `json:"stale_hits"`
	RolledBack     int     `json:"rolled_back"`
	P99BeforeMs    float64 `json:"p99_before_ms"`
	P99DuringMs    float64 `json:"p99_during_ms"`
}

// BenchSummary is the JSON summary of the scenario.
type BenchSummary struct {
	Benchmark       string                   `json:"benchmark"`
	Nodes           int                      `json:"opensearch_nodes"`
	Victim          Victim                   `json:"victim"`
	Node            string                   `json:"node"`
	KillAfterS      float64                  `json:"kill_after_s"`
	OutageS         float64                  `json:"outage_s"`
	Layouts         map[string]LayoutSummary `json:"layouts"`
	EventsAccepted  int64                    `json:"events_accepted"`
	EventsLost      int                      `json:"events_lost"`
	DeadLettered    int64                    `json:"dead_lettered"`
	LayoutsEqual    bool                     `json:"layouts_equal"`
	SecondsToRejoin float64                  `json:"seconds_to_rejoin"`
	SecondsToGreen  float64                  `json:"seconds_to_green"`
	// SecondsToConsistent: until every data node's hot table was ready and
	// equal to its copy; HotTablesDiffer counts the nodes whose table did
	// not hold the accepted events' rows at the end.
	SecondsToConsistent float64 `json:"seconds_to_consistent"`
	HotTablesDiffer     int     `json:"hot_tables_differ"`
	// Targets are counts that must be 0: stale hot hits, 500s and other
	// bad answers on every layout, events lost or dead-lettered, and nodes
	// whose hot table differs at the end.
	Targets bench.Targets `json:"targets"`
	Command string        `json:"command"`
	Date    string        `json:"date"`
}

// Summary shapes the result of a one-case run for the benchmark: during
// the outage counts the searches from the kill until the cluster was green
// again (the outage and the restart).
func (r *Result) Summary(c BenchConfig, command string) BenchSummary {
	s := BenchSummary{
		Benchmark: "search-node-loss", Nodes: r.Nodes, KillAfterS: c.KillNodeAfter.Seconds(), OutageS: c.Outage.Seconds(),
		Layouts: map[string]LayoutSummary{}, EventsAccepted: r.EventsAccepted, EventsLost: r.EventsLost,
		DeadLettered: r.DeadLettered, LayoutsEqual: r.LayoutsDiffer == "", Command: command,
		Date: time.Now().UTC().Format(time.RFC3339),
	}
	if len(r.Cases) == 0 {
		return s
	}
	c0 := r.Cases[0]
	s.Victim, s.Node, s.SecondsToRejoin, s.SecondsToGreen = c0.Victim, c0.Node, c0.SecondsToRejoin, c0.SecondsToGreen
	s.SecondsToConsistent, s.HotTablesDiffer = c0.SecondsToConsistent, r.HotTablesDiffer
	for _, label := range c0.Labels() {
		var l LayoutSummary
		if n := c0.Searches[PhaseBefore][label]; n != nil {
			l.OKBefore, l.P99BeforeMs = n.OK, n.Latency.P99Ms
		}
		for _, phase := range []string{PhaseOutage, PhaseRestart} {
			n := c0.Searches[phase][label]
			if n == nil {
				continue
			}
			l.OKDuringOutage += n.OK
			l.Refused503 += n.Refused503
			l.Errors500 += n.Errors500
			l.Other += n.Other
			l.Fallbacks += n.Fallbacks
			l.StaleHits += n.StaleHits
			l.RolledBack += n.RolledBack
			l.P99DuringMs = max(l.P99DuringMs, n.Latency.P99Ms)
		}
		s.Layouts[label] = l
	}
	var stale, bad int
	for _, l := range s.Layouts {
		stale += l.StaleHits
		bad += l.Errors500 + l.Other
	}
	zero := func(n int64) bench.TargetResult { return bench.AtMost(0).Evaluate(float64(n), bench.Exact(float64(n))) }
	s.Targets = bench.Targets{
		"stale_hits":           zero(int64(stale)),
		"errors_500_and_other": zero(int64(bad)),
		"events_lost":          zero(int64(r.EventsLost) + r.DeadLettered),
		"hot_tables_differ":    zero(int64(r.HotTablesDiffer)),
	}
	return s
}

// WriteJSON writes the summary and the whole result to dir/search-node-loss.json.
func WriteJSON(dir string, s BenchSummary, r *Result) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "search-node-loss.json")
	raw, err := json.MarshalIndent(map[string]any{"summary": s, "result": r}, "", "  ")
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, raw, 0o644)
}
