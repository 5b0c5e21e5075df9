package nodeloss

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// The rolling-upgrade case (RollingUpgrade) runs the cluster on two builds
// of the baedal-hot plugin made from the checked-out sources: the current
// one (target/lib, at layout.HotPluginVersion and the pom's wire version)
// and a "previous" one that Maven stamps with the version
// HotPluginVersion+"-previous" and the wire version one lower
// (localstack.BuildHotPlugin). Both hold the same code: what the case proves
// is the upgrade's procedure and baedal's side of it (the version check,
// the refusal of another wire version, split serving meanwhile, the tables
// rebuilt on the new build), not that two real releases' formats are
// compatible (they need not be: a version change means a format change,
// and the server serves the hot layout only at its own version). Building
// an older release from git history would need its whole tree and Maven
// run, and its head-document format would not match today's indexer.

// PhaseMixed is the rolling upgrade's phase in which nodes run another
// plugin version than the server speaks, and the server knows it.
const PhaseMixed = "mixed"

// UpgradeResult is what the rolling upgrade saw at each of its steps.
type UpgradeResult struct {
	From  localstack.HotPluginStamp `json:"from"`
	To    localstack.HotPluginStamp `json:"to"`
	Steps []UpgradeStep             `json:"steps"`
}

// UpgradeStep is the cluster after one step of the rolling upgrade (every
// node on the previous build, then after each node's restart on the
// current one), once the server's /readyz reflects it.
type UpgradeStep struct {
	// Versions maps each node to the baedal-hot versions it reports (one).
	Versions map[string][]string `json:"versions"`
	// Readyz is /readyz's entry of the hot layout.
	Readyz layout.Health `json:"readyz_hot"`
	// StatusAnswered names the nodes whose table the plugin's status
	// reported; StatusFailures the nodes it names as failed, with the
	// plugin's reason; StatusError is the status call's error.
	StatusAnswered []string          `json:"status_answered"`
	StatusFailures map[string]string `json:"status_failures,omitempty"`
	StatusError    string            `json:"status_error,omitempty"`
	SecondsToGreen float64           `json:"seconds_to_green"`
}

// Mixed reports whether the step's nodes run different versions.
func (s UpgradeStep) Mixed() bool {
	seen := map[string]bool{}
	for _, v := range s.Versions {
		seen[strings.Join(v, ",")] = true
	}
	return len(seen) > 1
}

// upgradeBuilds are the jars of the two builds.
type upgradeBuilds struct {
	previous, current           string
	previousStamp, currentStamp localstack.HotPluginStamp
}

// buildPreviousHotPlugin builds the previous plugin build in dir.
func buildPreviousHotPlugin(ctx context.Context, dir string, progress io.Writer) (*upgradeBuilds, error) {
	jdk, err := localstack.FindJDK(21)
	if err != nil {
		return nil, err
	}
	launcherDir, err := localstack.FindLauncherDir("")
	if err != nil {
		return nil, err
	}
	wire, err := localstack.HotPluginWireVersion(launcherDir)
	if err != nil {
		return nil, err
	}
	if wire < 1 {
		return nil, fmt.Errorf("nodeloss: the plugin's wire version is %d; the previous build needs a lower one", wire)
	}
	b := &upgradeBuilds{
		previousStamp: localstack.HotPluginStamp{Version: layout.HotPluginVersion + "-previous", WireVersion: wire - 1},
		currentStamp:  localstack.HotPluginStamp{Version: layout.HotPluginVersion, WireVersion: wire},
		current:       filepath.Join(launcherDir, "target", "lib", "baedal-hot-"+layout.HotPluginVersion+".jar"),
	}
	b.previous, err = localstack.BuildHotPlugin(ctx, launcherDir, jdk, b.previousStamp, filepath.Join(dir, "hot-plugin-previous"), progress)
	return b, err
}

// hotVersionsByName maps each node's name to its baedal-hot versions.
func hotVersionsByName(nodes map[string]layout.HotPluginNode) map[string][]string {
	out := map[string][]string{}
	for _, n := range nodes {
		out[n.Name] = n.Versions
	}
	return out
}

// rollingUpgrade is the RollingUpgrade case: the cluster restarted on the
// previous plugin build (every node at once, as a cluster that has not
// been upgraded yet), then rolled to the current build one node at a time
// as docs/hot-layout.md ("Upgrades") says: replica allocation off, the
// node stopped (SIGTERM) and started on the new build, allocation back
// on, wait for green. It ends with every node on the current build (the
// stack as it was, so later cases and the final checks run on it), the hot
// layout serving, and every table equal to its copy.
func rollingUpgrade(ctx context.Context, cfg Config, st *localstack.State, osc *osapi.Client, addr string, idx layout.Config, kinds []layout.Kind, searches *searchLoad, builds *upgradeBuilds) (CaseResult, error) {
	prefix := string(RollingUpgrade) + "/"
	var nodes []string
	for _, p := range st.Processes {
		if strings.HasPrefix(p.Component, "opensearch-") {
			nodes = append(nodes, p.Component)
		}
	}
	c := CaseResult{Victim: RollingUpgrade, Node: strings.Join(nodes, ","),
		Upgrade: &UpgradeResult{From: builds.previousStamp, To: builds.currentStamp}}
	if !slices.Contains(kinds, layout.Hot) {
		return c, fmt.Errorf("nodeloss: %s needs the hot layout, which this cluster does not run", RollingUpgrade)
	}
	alias := idx.Alias(layout.RoleHotShops)
	// Every node runs the checked-out build, and only it: a stale plugin
	// jar beside it on the classpath would show here (or stop the node).
	before, err := layout.HotPluginNodes(ctx, osc)
	if err != nil {
		return c, err
	}
	for name, v := range hotVersionsByName(before) {
		if !slices.Equal(v, []string{builds.currentStamp.Version}) {
			return c, fmt.Errorf("nodeloss: before the upgrade %s reports the baedal-hot versions %v, want exactly [%s]", name, v, builds.currentStamp.Version)
		}
	}

	step := func(started time.Time) error {
		s, err := upgradeStep(ctx, osc, addr, alias, builds.currentStamp.Version, cfg.GreenTimeout)
		s.SecondsToGreen = time.Since(started).Seconds()
		c.Upgrade.Steps = append(c.Upgrade.Steps, s)
		fmt.Fprintf(cfg.Progress, "nodeloss: upgrade step: versions %v, /readyz hot: %s %s; status: answered %v, failed %v\n",
			s.Versions, s.Readyz.Health, s.Readyz.Error, s.StatusAnswered, s.StatusFailures)
		return err
	}

	// The cluster before the upgrade: every node on the previous build.
	searches.phase.Store(prefix + PhaseRestart)
	started := time.Now()
	for _, n := range nodes {
		if err := st.Terminate(n); err != nil {
			return c, err
		}
	}
	if err := st.RestartOpenSearchNodesWith(ctx, builds.previous, nodes...); err != nil {
		return c, fmt.Errorf("nodeloss: start the cluster on the previous plugin build: %w", err)
	}
	if err := waitGreen(ctx, osc, idx, kinds, cfg.GreenTimeout); err != nil {
		return c, fmt.Errorf("nodeloss: the cluster on the previous plugin build: %w", err)
	}
	if err := step(started); err != nil {
		return c, err
	}
	searches.phase.Store(prefix + PhaseMixed)

	// The rolling upgrade, one node at a time.
	upgraded := time.Now()
	for i, n := range nodes {
		if i == len(nodes)-1 {
			// Once the last old node stops, every node left runs the new
			// build: the hot layout may serve again before it is back.
			searches.phase.Store(prefix + PhaseRestart)
		}
		started := time.Now()
		if err := setReplicaAllocation(ctx, osc, "primaries"); err != nil {
			return c, err
		}
		if err := st.Terminate(n); err != nil {
			return c, err
		}
		if err := st.RestartOpenSearchNodesWith(ctx, builds.current, n); err != nil {
			return c, fmt.Errorf("nodeloss: restart %s on the current plugin build: %w", n, err)
		}
		if err := setReplicaAllocation(ctx, osc, ""); err != nil {
			return c, err
		}
		if err := waitGreen(ctx, osc, idx, kinds, cfg.GreenTimeout); err != nil {
			return c, fmt.Errorf("nodeloss: after upgrading %s: %w", n, err)
		}
		if err := step(started); err != nil {
			return c, err
		}
	}
	c.SecondsToRejoin = time.Since(upgraded).Seconds()
	c.SecondsToGreen = c.SecondsToRejoin
	if err := waitHotConsistent(ctx, osc, alias, cfg.GreenTimeout); err != nil {
		return c, fmt.Errorf("nodeloss: after the upgrade: %w", err)
	}
	c.SecondsToConsistent = time.Since(upgraded).Seconds()
	fmt.Fprintf(cfg.Progress, "nodeloss: rolled %s to baedal-hot %s in %.1f s, hot tables consistent after %.1f s\n",
		c.Node, builds.currentStamp.Version, c.SecondsToRejoin, c.SecondsToConsistent)
	searches.phase.Store(prefix + PhaseAfter)
	sleep(ctx, cfg.After)
	return c, nil
}

// upgradeStep waits until the server's /readyz reflects the nodes'
// versions (the hot layout disabled, naming each node that does not run
// want and its version, while one does not; serving on every node once
// all do: the server checks every HotPluginCheckEvery) and returns what
// the nodes, /readyz and the plugin's status say then.
func upgradeStep(ctx context.Context, osc *osapi.Client, addr, alias, want string, timeout time.Duration) (UpgradeStep, error) {
	var s UpgradeStep
	var problem string
	for deadline := time.Now().Add(timeout); ; time.Sleep(250 * time.Millisecond) {
		nodes, err := layout.HotPluginNodes(ctx, osc)
		if err != nil {
			return s, err
		}
		s.Versions = hotVersionsByName(nodes)
		_, ready, err := readyz(addr)
		if err != nil {
			return s, err
		}
		for _, h := range ready {
			if h.Layout == layout.Hot {
				s.Readyz = h
			}
		}
		if problem = readyzMismatch(s.Versions, s.Readyz, want); problem == "" {
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return s, fmt.Errorf("nodeloss: /readyz did not reflect the nodes' baedal-hot versions %v within %s: %s", s.Versions, timeout, problem)
		}
	}
	nodes, err := layout.HotPluginNodes(ctx, osc)
	if err != nil {
		return s, err
	}
	st, err := layout.FetchHotStatus(ctx, osc, alias, false)
	if err != nil {
		s.StatusError = err.Error()
	}
	s.StatusAnswered = slices.Sorted(maps.Keys(st.Nodes))
	for _, f := range st.Failures {
		if s.StatusFailures == nil {
			s.StatusFailures = map[string]string{}
		}
		name := f.Node
		if n, ok := nodes[f.Node]; ok {
			name = n.Name
		}
		s.StatusFailures[name] = f.Reason
	}
	return s, nil
}

// readyzMismatch says how /readyz's hot entry differs from what the nodes'
// versions call for, or "" when it reflects them.
func readyzMismatch(versions map[string][]string, hot layout.Health, want string) string {
	var old []string
	for _, name := range slices.Sorted(maps.Keys(versions)) {
		if !slices.Equal(versions[name], []string{want}) {
			old = append(old, name)
		}
	}
	if len(old) == 0 {
		if hot.Health == "disabled" || hot.TablesServing == nil || *hot.TablesServing != len(versions) {
			return fmt.Sprintf("every node runs %s but /readyz hot is %s (%s), tables serving %v", want, hot.Health, hot.Error, hot.TablesServing)
		}
		return ""
	}
	if hot.Health != "disabled" {
		return fmt.Sprintf("%v run another version than %s but /readyz hot is %s", old, want, hot.Health)
	}
	for name, v := range versions {
		named := strings.Contains(hot.Error, name+" ("+layout.HotPlugin+" "+strings.Join(v, ",")+")")
		if slices.Contains(old, name) != named {
			return fmt.Sprintf("/readyz hot says %q; want it to name exactly %v with their versions", hot.Error, old)
		}
	}
	return ""
}

// setReplicaAllocation sets cluster.routing.allocation.enable ("" resets
// it to its default, all), retrying while the cluster elects a manager.
func setReplicaAllocation(ctx context.Context, osc *osapi.Client, enable string) error {
	value := "null"
	if enable != "" {
		value = strconv.Quote(enable)
	}
	body := fmt.Appendf(nil, `{"persistent":{"cluster.routing.allocation.enable":%s}}`, value)
	var err error
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(500 * time.Millisecond) {
		if err = osc.Do(ctx, http.MethodPut, "/_cluster/settings", body, nil); err == nil {
			return nil
		}
	}
	return fmt.Errorf("nodeloss: set cluster.routing.allocation.enable to %s: %w", value, err)
}
