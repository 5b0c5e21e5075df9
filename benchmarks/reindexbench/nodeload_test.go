package reindexbench

import (
	"math"
	"testing"
	"time"
)

func TestLoadSinceTurnsCountersIntoShares(t *testing.T) {
	before := nodeSnapshot{diskMillis: 1000, nodes: map[string]nodeCounters{
		"a": {cpuMillis: 500, mergeMillis: 100, mergeThrottledMillis: 10, indexMillis: 40, indexThrottledMillis: 0, refreshMillis: 7, writeRejected: 1},
		"b": {cpuMillis: 900, mergeMillis: 800},
	}}
	after := nodeSnapshot{diskMillis: 1500, nodes: map[string]nodeCounters{
		"a": {cpuMillis: 2500, mergeMillis: 1100, mergeThrottledMillis: 510, indexMillis: 1040, indexThrottledMillis: 250, refreshMillis: 107, writeRejected: 4},
		// b's merge total fell: an index it merged was deleted in between.
		"b": {cpuMillis: 1900, mergeMillis: 300},
		// c joined after the first snapshot: no difference to take.
		"c": {cpuMillis: 99},
	}}
	load := after.loadSince(before, 2*time.Second)
	want := NodeLoad{CPUCores: 1, IndexShare: 0.5, IndexThrottledShare: 0.125, MergeShare: 0.5, MergeThrottledShare: 0.25,
		RefreshShare: 0.05, WriteRejected: 3}
	if got := load.Nodes["a"]; !closeLoad(got, want) {
		t.Errorf("node a: got %+v, want %+v", got, want)
	}
	if got := load.Nodes["b"]; got.MergeShare != 0 || got.CPUCores != 0.5 {
		t.Errorf("node b: got %+v, want merge share 0 (clamped) and 0.5 cores", got)
	}
	if _, ok := load.Nodes["c"]; ok {
		t.Errorf("node c joined between the snapshots and has no load to report: %+v", load.Nodes["c"])
	}
	if load.DiskBusyShare != 0.25 {
		t.Errorf("disk busy share %v, want 0.25", load.DiskBusyShare)
	}
	if got := load.cpuCores(); got != 1.5 {
		t.Errorf("CPU summed over the nodes: %v, want 1.5", got)
	}
}

func TestMeanLoadAveragesEachNodeOverItsRounds(t *testing.T) {
	rounds := []SideLoad{
		{DiskBusyShare: 0.2, Nodes: map[string]NodeLoad{"a": {CPUCores: 1, MergeShare: 0.4}, "b": {CPUCores: 0.2}}},
		{DiskBusyShare: 0.4, Nodes: map[string]NodeLoad{"a": {CPUCores: 0.5, MergeShare: 0.2}}},
	}
	m := meanLoad(rounds)
	if a := m.Nodes["a"]; math.Abs(a.CPUCores-0.75) > 1e-9 || math.Abs(a.MergeShare-0.3) > 1e-9 {
		t.Errorf("node a: %+v, want 0.75 cores and merge share 0.3", a)
	}
	if b := m.Nodes["b"]; b.CPUCores != 0.2 {
		t.Errorf("node b, in one round only: %+v, want that round's 0.2 cores", b)
	}
	if math.Abs(m.DiskBusyShare-0.3) > 1e-9 {
		t.Errorf("disk busy %v, want 0.3", m.DiskBusyShare)
	}
	if rows := loadRows("side", m); len(rows) != 2 || rows[0][1] != "a" || rows[1][1] != "b" || len(rows[0]) != len(loadHeader) {
		t.Errorf("rows %q, want one per node in name order, as wide as the header", rows)
	}
}

func closeLoad(a, b NodeLoad) bool {
	pairs := [][2]float64{{a.CPUCores, b.CPUCores}, {a.IndexShare, b.IndexShare}, {a.IndexThrottledShare, b.IndexThrottledShare},
		{a.MergeShare, b.MergeShare}, {a.MergeThrottledShare, b.MergeThrottledShare}, {a.RefreshShare, b.RefreshShare},
		{a.WriteRejected, b.WriteRejected}}
	for _, p := range pairs {
		if math.Abs(p[0]-p[1]) > 1e-9 {
			return false
		}
	}
	return true
}
