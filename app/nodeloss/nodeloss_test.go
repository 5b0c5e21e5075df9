package nodeloss

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
)

// TestNodeLoss runs the scenario at its CI size: the whole server on a
// 3-node cluster of its own (default settings: replicas auto-expand to 1,
// the hot shop-head index to every node), steady searches on every layout
// and events flowing, and four cases: a data node SIGKILLed for 8 s and
// restarted, the elected cluster manager likewise, a data node frozen with
// SIGSTOP for 15 s (past fault detection) and continued, every node
// SIGKILLed at once and restarted, and a rolling upgrade of the baedal-hot
// plugin (checkRollingUpgrade). During each outage every search must
// answer 200 (replicas serve) or 503 with Retry-After, never a 500, and no
// hot search may show a row older than one an earlier search showed (stale
// hits), unless the shop-head index's primary holds that older row then (an
// unacknowledged write rolled back by a failover: counted as rolled_back);
// after each case the cluster must be green and every node's hot
// table equal to its copy again; at the end every accepted event is in every
// layout (0 lost, 0 dead-lettered), the layouts answer alike, and every
// node's table holds the events' live rows and their deletes' tombstones.
//
// One cluster serves every case and the catalog is small (about 5 minutes
// on 2 cores before the upgrade case, which adds a Maven build of the
// previous plugin and four restarts: 16.5 minutes in all, 5.5 of them the
// upgrade, on a shared 2-core machine at load 20-30). It fails in CI when the cluster cannot start and is skipped
// locally.
func TestNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster (about 2.5 minutes)")
	}
	res := runScenario(t, Defaults())

	running := 0
	for _, h := range res.Ready {
		if h.Health == "disabled" && h.Error != "" {
			continue // a layout this cluster cannot run (hot without its plugin), saying why
		}
		running++
		for _, ix := range h.Indices {
			want, setting := 1, layout.DefaultReplicas
			if strings.HasSuffix(ix.Alias, layout.RoleHotShops) {
				want, setting = 2, layout.HotShopsReplicas // a copy on each of the 3 data nodes
			}
			if ix.Health != "green" || ix.Replicas != want || ix.ReplicaSetting != setting {
				t.Errorf("/readyz %s: %+v, want green with %d replicas from the setting %s", h.Layout, ix, want, setting)
			}
		}
		if h.Layout == layout.Hot && (h.TablesServing == nil || *h.TablesServing != 3 || h.Tables != "") {
			t.Errorf("/readyz hot: tables serving %v (%s), want 3 and no problem", h.TablesServing, h.Tables)
		}
	}
	if res.ReadyStatus != "ready" || running < 2 {
		t.Errorf("/readyz before the load: %s, %d layouts running; want ready, at least nested and split", res.ReadyStatus, running)
	}
	if len(res.Cases) != 5 {
		t.Fatalf("%d cases, want 5", len(res.Cases))
	}
	for _, c := range res.Cases {
		labels := c.Labels()
		if !slices.Contains(labels, "default") || !slices.Contains(labels, "nested") || !slices.Contains(labels, "split") {
			t.Errorf("%s: searches on %v, want default, nested, split (and hot with its plugin)", c.Victim, labels)
		}
		t.Logf("%s %s: rejoined after %.1f s, green after %.1f s", c.Victim, c.Node, c.SecondsToRejoin, c.SecondsToGreen)
		for _, phase := range []string{PhaseBefore, PhaseOutage, PhaseRestart, PhaseMixed, PhaseAfter} {
			if c.Searches[phase] == nil {
				continue // a phase this case does not have
			}
			var line []string
			for _, label := range labels {
				n := c.Searches[phase][label]
				if n == nil {
					line = append(line, label+" none")
					continue
				}
				line = append(line, label+" "+n.String())
				if n.Errors500+n.Other > 0 {
					t.Errorf("%s, %s, %s: %d 5xx and %d other answers; want only 200 or 503 with Retry-After", c.Victim, phase, label, n.Errors500, n.Other)
				}
			}
			t.Logf("  %-8s %s", phase, strings.Join(line, "; "))
		}
		// The node is down from the kill until it rejoins, in the restart
		// phase: searches kept being answered, and by the replicas (not
		// when every node is down).
		if c.Victim == RollingUpgrade {
			checkRollingUpgrade(t, c)
			continue
		}
		for _, label := range labels {
			if c.Victim == WholeCluster {
				break
			}
			ok, answered := 0, 0
			for _, phase := range []string{PhaseOutage, PhaseRestart} {
				if n := c.Searches[phase][label]; n != nil {
					ok, answered = ok+n.OK, answered+n.OK+n.Refused503
				}
			}
			if answered < 3 || ok == 0 {
				t.Errorf("%s down, %s: %d searches answered, %d of them 200; want steady searches, served by the replicas", c.Victim, label, answered, ok)
			}
		}
	}
	checkNothingLost(t, res)
}

// checkRollingUpgrade asserts what the rolling upgrade must show (the
// answers of every phase were already held to 200 or 503 with Retry-After,
// and its hot hits to no stale row, by the caller and checkNothingLost):
//   - before the roll, every node on the previous build: /readyz names each
//     node with its version (upgradeStep waited for it), the hot layout is
//     disabled, and the plugin's status, which one wire version carries
//     between them, answers for all three;
//   - while the versions differ: /readyz names exactly the old nodes with
//     their version, and the status names the nodes of the other build as
//     failed, its reason naming both wire versions; every search naming
//     hot answers 503 with Retry-After, and those naming no layout are
//     answered, by split;
//   - when every node runs the current build: /readyz serves hot on every
//     node, the status answers for all, and hot searches answer 200 (their
//     equality with nested and each table's digest with its copy's are
//     checked at the end, by checkNothingLost).
func checkRollingUpgrade(t *testing.T, c CaseResult) {
	t.Helper()
	u := c.Upgrade
	if u == nil || len(u.Steps) != 4 {
		t.Fatalf("rolling upgrade: %+v, want 4 steps (every node on the previous build, then one node upgraded at a time)", u)
	}
	if u.From.Version == u.To.Version || u.From.WireVersion == u.To.WireVersion || u.To.Version != layout.HotPluginVersion {
		t.Errorf("rolling upgrade from %+v to %+v: want two versions and two wire versions, to %s", u.From, u.To, layout.HotPluginVersion)
	}
	for i, s := range u.Steps {
		t.Logf("step %d: versions %v; /readyz hot %s %q; status answered %v, failed %v %s", i, s.Versions, s.Readyz.Health, s.Readyz.Error, s.StatusAnswered, s.StatusFailures, s.StatusError)
		upgraded := 0
		for name, v := range s.Versions {
			switch {
			case slices.Equal(v, []string{u.To.Version}):
				upgraded++
			case !slices.Equal(v, []string{u.From.Version}):
				t.Errorf("step %d: %s reports the baedal-hot versions %v, want exactly one of %s, %s", i, name, v, u.From.Version, u.To.Version)
			}
		}
		if len(s.Versions) != 3 || upgraded != i {
			t.Errorf("step %d: versions %v, want 3 nodes, %d of them on %s", i, s.Versions, i, u.To.Version)
		}
		for name, v := range s.Versions {
			named := strings.Contains(s.Readyz.Error, name+" ("+layout.HotPlugin+" "+u.From.Version+")")
			if old := slices.Equal(v, []string{u.From.Version}); old != named || (old && s.Readyz.Health != "disabled") {
				t.Errorf("step %d: /readyz hot %s %q: want it disabled and naming %s with its version only while it runs %s", i, s.Readyz.Health, s.Readyz.Error, name, u.From.Version)
			}
		}
		answered, failed := len(s.StatusAnswered), len(s.StatusFailures)
		if !s.Mixed() {
			if answered != 3 || failed != 0 || s.StatusError != "" {
				t.Errorf("step %d: one build on every node, but the status answered for %v and failed %v (%s)", i, s.StatusAnswered, s.StatusFailures, s.StatusError)
			}
			continue
		}
		if answered+failed != 3 || failed == 0 || s.StatusError == "" {
			t.Errorf("step %d: versions differ, but the status answered for %v and failed %v (%s); want a 503 naming the other build's nodes", i, s.StatusAnswered, s.StatusFailures, s.StatusError)
		}
		version := func(name string) string { return strings.Join(s.Versions[name], ",") }
		for name, reason := range s.StatusFailures {
			if !strings.Contains(reason, "wire version "+strconv.Itoa(u.From.WireVersion)) || !strings.Contains(reason, "wire version "+strconv.Itoa(u.To.WireVersion)) {
				t.Errorf("step %d: the status failure of %s says %q; want it to name the wire versions %d and %d", i, name, reason, u.From.WireVersion, u.To.WireVersion)
			}
			for _, other := range s.StatusAnswered {
				if version(other) == version(name) {
					t.Errorf("step %d: %s (%s) answered the status and %s (%s) failed it; want the failed ones to run the other build", i, other, version(other), name, version(name))
				}
			}
		}
	}
	mixedHot, mixedDefault := c.Searches[PhaseMixed][string(layout.Hot)], c.Searches[PhaseMixed]["default"]
	if mixedHot == nil || mixedHot.Refused503 == 0 || mixedHot.OK != 0 {
		t.Errorf("while the versions differed, hot searches: %v; want only 503 with Retry-After", mixedHot)
	}
	if mixedDefault == nil || mixedDefault.OK == 0 || mixedDefault.AnsweredBy[string(layout.Hot)] > 0 || mixedDefault.AnsweredBy[string(layout.Split)] == 0 {
		var by map[string]int
		if mixedDefault != nil {
			by = mixedDefault.AnsweredBy
		}
		t.Errorf("while the versions differed, searches naming no layout: %v, answered by %v; want 200s answered by split, none by hot", mixedDefault, by)
	}
	if after := c.Searches[PhaseAfter][string(layout.Hot)]; after == nil || after.OK == 0 {
		t.Errorf("after the upgrade, hot searches: %v; want 200s", after)
	}
}

// TestSingleNodeKillRebuildsTheHotTable SIGKILLs the only node of a 1-node
// cluster under search and event load, starts it again on its data, and
// checks what a restart must give back: every accepted event in every
// layout, the layouts answering alike, and the node's baedal-hot table,
// rebuilt from the shop index, holding exactly the hot rows of the events'
// states (digest and live count, HotTableCheck). While the node is down
// every search is a 503 with Retry-After (or a 200 from the fallback), never
// a 500 or a partial answer. About a minute; fails in CI when the node cannot
// start, skipped locally.
func TestSingleNodeKillRebuildsTheHotTable(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an OpenSearch node of its own (about a minute)")
	}
	cfg := Defaults()
	cfg.Nodes, cfg.Victims = 1, []Victim{ClusterManager}
	cfg.Shops, cfg.Outage = 400, 5*time.Second
	res := runScenario(t, cfg)
	c := res.Cases[0]
	t.Logf("%s rejoined after %.1f s, green after %.1f s", c.Node, c.SecondsToRejoin, c.SecondsToGreen)
	for _, phase := range []string{PhaseBefore, PhaseOutage, PhaseRestart, PhaseAfter} {
		for _, label := range c.Labels() {
			if n := c.Searches[phase][label]; n != nil {
				t.Logf("  %-8s %-7s %s", phase, label, n)
			}
		}
	}
	checkNothingLost(t, res)
}

// runScenario runs cfg with the test's log as progress; it fails the test
// when the cluster cannot start in CI (skips locally).
func runScenario(t *testing.T, cfg Config) *Result {
	t.Helper()
	cfg.Progress = testWriter{t}
	res, err := Run(context.Background(), cfg, func(dir string) bool {
		if t.Failed() {
			t.Logf("the cluster's logs are kept in %s/logs", dir)
		}
		return t.Failed()
	})
	if errors.Is(err, ErrClusterStart) {
		testenv.Unavailable(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// checkNothingLost asserts the end of a run: only 200 or 503 with
// Retry-After, every accepted event in every layout, none dead-lettered,
// the layouts answering alike, and every node's hot table equal to the
// events' states and the shop index.
func checkNothingLost(t *testing.T, res *Result) {
	t.Helper()
	if len(res.BadAnswers) > 0 {
		t.Errorf("answers neither 200 nor 503 with Retry-After: %s", strings.Join(res.BadAnswers, "\n"))
	}
	t.Logf("events accepted %d, lost %d, dead-lettered %d", res.EventsAccepted, res.EventsLost, res.DeadLettered)
	if res.EventPostFailures > 0 || res.EventsLost > 0 || res.DeadLettered > 0 || res.EventsAccepted == 0 {
		t.Errorf("events: %d accepted, %d posts refused, %d shops×layouts behind, %d dead-lettered; want 0 refused, lost, dead", res.EventsAccepted, res.EventPostFailures, res.EventsLost, res.DeadLettered)
	}
	if res.LayoutsDiffer != "" {
		t.Errorf("layouts differ after the outages: %s", res.LayoutsDiffer)
	}
	for _, c := range res.HotTables {
		t.Logf("hot table on %s: ready %v, %d shops, digest %s; events: %d shops, digest %s; shop index digest %s",
			c.Node, c.Ready, c.Shops, c.Digest, c.WantShops, c.WantDigest, c.ShopIndexDigest)
		for _, d := range c.RowDiffs {
			t.Logf("  %s", d)
		}
	}
	if len(res.HotTables) == 0 && testenv.InCI() {
		t.Errorf("no hot table was checked: in CI the cluster runs the baedal-hot plugin")
	}
	if res.HotTablesDiffer > 0 {
		t.Errorf("%d nodes' hot tables differ from the accepted events or the shop index (or did not answer)", res.HotTablesDiffer)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
