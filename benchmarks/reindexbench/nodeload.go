package reindexbench

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/baedal/baedal/internal/osapi"
)

// This file measures what each OpenSearch node did during a copy, so that a
// ratio that does not move (more slices, more shards) can be explained with
// figures: CPU per node, time spent merging, merges and indexing throttled,
// refreshes, rejected bulk requests, and how busy the disk was. OpenSearch
// refreshes its process and fs statistics at most once a second
// (monitor.process.refresh_interval, monitor.fs.refresh_interval), so CPU
// and disk figures of a copy shorter than a few seconds are coarse; the
// indexing, merge, refresh and thread pool counters are exact.

// nodeCounters is one node's cumulative counters from _nodes/stats.
type nodeCounters struct {
	cpuMillis            int64
	mergeMillis          int64
	mergeThrottledMillis int64
	indexMillis          int64
	indexThrottledMillis int64
	refreshMillis        int64
	writeRejected        int64
}

// nodeSnapshot is every node's counters at one moment, by node name, and the
// disk's busy time (io_stats are per device; the nodes of a local stack
// share one, so the largest node's figure is the disk's).
type nodeSnapshot struct {
	nodes      map[string]nodeCounters
	diskMillis int64
}

// NodeLoad is what one node did during a side's copies, as shares of the
// copies' wall time (mean over the rounds): CPUCores is process CPU time /
// wall time; MergeShare is merge thread time / wall time (1 = one merge thread
// busy throughout); the throttled shares are the time merges and indexing
// were held back by OpenSearch's throttles; RefreshShare is refresh time;
// WriteRejected counts bulk requests the write pool refused.
type NodeLoad struct {
	CPUCores            float64 `json:"cpu_cores"`
	IndexShare          float64 `json:"index_share"`
	IndexThrottledShare float64 `json:"index_throttled_share"`
	MergeShare          float64 `json:"merge_share"`
	MergeThrottledShare float64 `json:"merge_throttled_share"`
	RefreshShare        float64 `json:"refresh_share"`
	WriteRejected       float64 `json:"write_rejected"`
}

// SideLoad is a side's NodeLoad per node and the disk's busy share (io time
// / wall time: near 1 means the disk queue was never empty).
type SideLoad struct {
	Nodes         map[string]NodeLoad `json:"nodes"`
	DiskBusyShare float64             `json:"disk_busy_share"`
}

// readNodeSnapshot reads the counters of every node.
func readNodeSnapshot(ctx context.Context, osc *osapi.Client) (nodeSnapshot, error) {
	var resp struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Process struct {
				CPU struct {
					TotalInMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
			Indices struct {
				Indexing struct {
					IndexTime    int64 `json:"index_time_in_millis"`
					ThrottleTime int64 `json:"throttle_time_in_millis"`
				} `json:"indexing"`
				Merges struct {
					TotalTime     int64 `json:"total_time_in_millis"`
					ThrottledTime int64 `json:"total_throttled_time_in_millis"`
				} `json:"merges"`
				Refresh struct {
					TotalTime int64 `json:"total_time_in_millis"`
				} `json:"refresh"`
			} `json:"indices"`
			ThreadPool struct {
				Write struct {
					Rejected int64 `json:"rejected"`
				} `json:"write"`
			} `json:"thread_pool"`
			FS struct {
				IOStats struct {
					Total struct {
						IOTime int64 `json:"io_time_in_millis"`
					} `json:"total"`
				} `json:"io_stats"`
			} `json:"fs"`
		} `json:"nodes"`
	}
	if err := osc.Do(ctx, http.MethodGet, "/_nodes/stats/process,indices,thread_pool,fs", nil, &resp); err != nil {
		return nodeSnapshot{}, fmt.Errorf("reindexbench: node stats: %w", err)
	}
	snap := nodeSnapshot{nodes: make(map[string]nodeCounters, len(resp.Nodes))}
	for id, n := range resp.Nodes {
		name := n.Name
		if name == "" {
			name = id
		}
		snap.nodes[name] = nodeCounters{
			cpuMillis:            n.Process.CPU.TotalInMillis,
			mergeMillis:          n.Indices.Merges.TotalTime,
			mergeThrottledMillis: n.Indices.Merges.ThrottledTime,
			indexMillis:          n.Indices.Indexing.IndexTime,
			indexThrottledMillis: n.Indices.Indexing.ThrottleTime,
			refreshMillis:        n.Indices.Refresh.TotalTime,
			writeRejected:        n.ThreadPool.Write.Rejected,
		}
		snap.diskMillis = max(snap.diskMillis, n.FS.IOStats.Total.IOTime)
	}
	return snap, nil
}

// loadSince is what happened between before and s over elapsed wall time.
// A node missing from before (it joined) is left out. Index statistics of
// an index deleted in between vanish from the node's totals, so a negative
// difference is clamped to 0.
func (s nodeSnapshot) loadSince(before nodeSnapshot, elapsed time.Duration) SideLoad {
	wall := float64(max(elapsed.Milliseconds(), 1))
	share := func(after, before int64) float64 { return float64(max(after-before, 0)) / wall }
	load := SideLoad{Nodes: make(map[string]NodeLoad, len(s.nodes)), DiskBusyShare: share(s.diskMillis, before.diskMillis)}
	for name, a := range s.nodes {
		b, ok := before.nodes[name]
		if !ok {
			continue
		}
		load.Nodes[name] = NodeLoad{
			CPUCores:            share(a.cpuMillis, b.cpuMillis),
			IndexShare:          share(a.indexMillis, b.indexMillis),
			IndexThrottledShare: share(a.indexThrottledMillis, b.indexThrottledMillis),
			MergeShare:          share(a.mergeMillis, b.mergeMillis),
			MergeThrottledShare: share(a.mergeThrottledMillis, b.mergeThrottledMillis),
			RefreshShare:        share(a.refreshMillis, b.refreshMillis),
			WriteRejected:       float64(max(a.writeRejected-b.writeRejected, 0)),
		}
	}
	return load
}

// cpuCores is the CPU of every node summed, in cores.
func (l SideLoad) cpuCores() float64 {
	total := 0.0
	for _, n := range l.Nodes {
		total += n.CPUCores
	}
	return total
}

// plus adds o to n, field by field.
func (n NodeLoad) plus(o NodeLoad) NodeLoad {
	return NodeLoad{
		CPUCores: n.CPUCores + o.CPUCores, IndexShare: n.IndexShare + o.IndexShare, IndexThrottledShare: n.IndexThrottledShare + o.IndexThrottledShare,
		MergeShare: n.MergeShare + o.MergeShare, MergeThrottledShare: n.MergeThrottledShare + o.MergeThrottledShare,
		RefreshShare: n.RefreshShare + o.RefreshShare, WriteRejected: n.WriteRejected + o.WriteRejected,
	}
}

// scaled multiplies every field of n by f.
func (n NodeLoad) scaled(f float64) NodeLoad {
	return NodeLoad{
		CPUCores: n.CPUCores * f, IndexShare: n.IndexShare * f, IndexThrottledShare: n.IndexThrottledShare * f,
		MergeShare: n.MergeShare * f, MergeThrottledShare: n.MergeThrottledShare * f,
		RefreshShare: n.RefreshShare * f, WriteRejected: n.WriteRejected * f,
	}
}

// meanLoad averages the rounds' loads node by node (a node absent from a
// round counts for the rounds it was in).
func meanLoad(rounds []SideLoad) SideLoad {
	out := SideLoad{Nodes: map[string]NodeLoad{}}
	counts := map[string]int{}
	for _, r := range rounds {
		out.DiskBusyShare += r.DiskBusyShare / float64(len(rounds))
		for name, n := range r.Nodes {
			out.Nodes[name] = out.Nodes[name].plus(n)
			counts[name]++
		}
	}
	for name, sum := range out.Nodes {
		out.Nodes[name] = sum.scaled(1 / float64(counts[name]))
	}
	return out
}

// loadRows formats a side's load as report rows, one per node, by name.
func loadRows(side string, l SideLoad) [][]string {
	names := make([]string, 0, len(l.Nodes))
	for name := range l.Nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	rows := make([][]string, 0, len(names))
	for _, name := range names {
		n := l.Nodes[name]
		rows = append(rows, []string{side, name, f2(n.CPUCores), f2(n.IndexShare), f2(n.IndexThrottledShare), f2(n.MergeShare),
			f2(n.MergeThrottledShare), f2(n.RefreshShare), fmt.Sprintf("%.1f", n.WriteRejected), f2(l.DiskBusyShare)})
	}
	return rows
}

var loadHeader = []string{"side", "node", "CPU cores", "indexing", "indexing throttled", "merging", "merges throttled", "refresh", "bulks rejected", "disk busy"}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }
