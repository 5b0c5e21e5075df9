package replbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/replica"
	"github.com/baedal/baedal/replica/osread"
)

// EndpointsResult is the OpenSearch endpoint comparison: the same four
// scenarios as the Redis part, with the searches of the ARS part sent
// through osread.Transport over the cluster's three HTTP endpoints, one
// Transport per policy. In every Scenario the embedded ratios are C3 /
// round-robin and VsBestPeer C3 / the peer with the most searches/s;
// replica_shares are the endpoints' shares of searches, the victim first.
type EndpointsResult struct {
	Skipped string `json:"skipped,omitempty"`
	// Endpoints are the endpoints in policy order: the victim, then the
	// two healthy nodes.
	Endpoints []string `json:"endpoints,omitempty"`
	// Victim names the node that is degraded, stalled or recovering.
	Victim string `json:"victim,omitempty"`
	// NodeCPUPercent is Config.OpenSearchNodeCPUPercent: each node's CPU
	// cap, % of one core; absent when the nodes shared the cores.
	NodeCPUPercent int `json:"node_cpu_percent,omitzero"`
	// IsolatedServers is Config.IsolateServers: the nodes ran on a CPU the
	// clients did not use.
	IsolatedServers bool     `json:"isolated_servers,omitzero"`
	Healthy         Scenario `json:"healthy,omitzero"`
	Degraded        Scenario `json:"degraded,omitzero"`
	Stalled         Scenario `json:"stalled,omitzero"`
	Recovering      Scenario `json:"recovering,omitzero"`
}

func (e EndpointsResult) scenarios() []namedScenario {
	return []namedScenario{{scenarioHealthy, e.Healthy}, {scenarioDegraded, e.Degraded}, {scenarioStalled, e.Stalled}, {scenarioRecovering, e.Recovering}}
}

// endpointConfig is the osread configuration of one contender. Peers rank
// neither by service time nor by queue length, and none of them ejects by
// ping, so their Transports run no background sampler (no stats, no
// pings): eight samplers at once would add load on the nodes that one
// Transport in production does not. Lowest-ping thus ranks by response
// time, as go-redis does for a node it has not pinged.
func (k contender) endpointConfig(cfg Config, scenario string) osread.Config {
	oc := osread.Config{Policy: tuned(cfg.Tuning, k.policy, cfg.Seed), Path: "replbench-" + scenario + "-" + k.name, PsiRank: k.psi}
	oc.Policy.AutoConcentrate = oc.Policy.AutoConcentrate || k.autoConcentrate
	if k.ejectedPings {
		oc.EjectedPingInterval = ejectedPingInterval
	}
	if !k.ours {
		oc.SampleInterval, oc.PingInterval = -1, -1
	}
	return oc
}

// endpointVictim is the node the endpoint scenarios degrade: its endpoint
// (first in policy order), its JVM's PID and its CPU cap (nil when the
// nodes are not capped).
type endpointVictim struct {
	name string
	url  string
	pid  int
	cap  *CPULimit
}

// compareEndpoints runs the four scenarios on the OpenSearch endpoints: the
// victim's JVM healthy, limited to OpenSearchDegradePercent% of one core,
// stopped for StallFor every StallEvery, and limited for the first half of
// each side's round. Every search goes through an osread.Transport over all
// three endpoints (victim first); shard-copy ARS stays at OpenSearch's
// default (on) throughout.
func compareEndpoints(ctx context.Context, cfg Config, urls []string, index string, victim endpointVictim, rep *bench.Report, out io.Writer) (EndpointsResult, error) {
	endpoints := []string{victim.url}
	for _, u := range urls {
		if u != victim.url {
			endpoints = append(endpoints, u)
		}
	}
	res := EndpointsResult{Endpoints: endpoints, Victim: fmt.Sprintf("%s (endpoint 1, %s, pid %d)", victim.name, victim.url, victim.pid)}
	rep.Add(bench.Section{Title: "OpenSearch endpoints: setup", Text: fmt.Sprintf(
		"The searches of the ARS part (index %s, %d concurrent clients) sent through replica/osread's Transport over the 3 HTTP endpoints %v, one Transport per policy: "+
			"our selector as osread ships it (c3: peak-EWMA latency × (in-flight+1), silent endpoints ejected, osread's sampler on), c3-psi (C3 ranked by Ψ, osread's default until 2026-11-27), c3-auto-concentrate (every search to one home endpoint in the 250 ms epochs where that answered faster on average than spreading) and the peers %v, "+
			"interleaved (ABBA) for %d rounds of %s each, in four scenarios. The victim is %s: its JVM is degraded (cgroup-v1 quota, %d%% of one core), stalled (SIGSTOP %s every %s) or recovering (degraded for the first half of each round). "+
			"%s Shard-copy ARS is on (OpenSearch's default). Endpoint shares are the fraction of searches each policy sent to endpoints 1 / 2 / 3; endpoint 1 is the victim.",
		index, cfg.OpenSearchClients, endpoints, cfg.Policies, cfg.Rounds, cfg.OpenSearchEndpointRoundDuration, res.Victim, cfg.OpenSearchDegradePercent, cfg.StallFor, cfg.StallEvery, serverCores("node", cfg.OpenSearchNodeCPUPercent, cfg.isolateNodes()))})

	var err error
	if res.Healthy, err = runEndpointScenario(ctx, cfg, endpoints, index, scenarioHealthy, "none", nil, nil, rep, out); err != nil {
		return res, err
	}
	limit, undo, err := degrade(victim.pid, cfg.OpenSearchDegradePercent, victim.cap)
	if err != nil {
		return res, err
	}
	res.Degraded, err = runEndpointScenario(ctx, cfg, endpoints, index, scenarioDegraded,
		fmt.Sprintf("%s limited to %d%% of one core (cgroup-v1 cpu quota)", res.Victim, cfg.OpenSearchDegradePercent), limit, nil, rep, out)
	if uerr := undo(); uerr != nil && err == nil {
		err = uerr
	}
	if err != nil {
		return res, err
	}
	stalls := 0
	res.Stalled, err = runEndpointScenario(ctx, cfg, endpoints, index, scenarioStalled,
		fmt.Sprintf("%s stopped (SIGSTOP) for %s every %s, the first %s into each round", res.Victim, cfg.StallFor, cfg.StallEvery, min(cfg.StallEvery/5, cfg.OpenSearchEndpointRoundDuration/4)),
		nil, stallCondition(victim.pid, cfg.StallFor, cfg.StallEvery, &stalls), rep, out)
	if err != nil {
		return res, err
	}
	res.Stalled.Degradation += fmt.Sprintf("; %d stalls in all", stalls)
	res.Recovering, err = runEndpointScenario(ctx, cfg, endpoints, index, scenarioRecovering,
		fmt.Sprintf("%s limited to %d%% of one core for the first half of each round, then not", res.Victim, cfg.OpenSearchDegradePercent),
		nil, recoverCondition(victim.pid, cfg.OpenSearchDegradePercent, victim.cap), rep, out)
	return res, err
}

// runEndpointScenario runs every endpoint contender interleaved and adds a
// report section; limit and cond are as for runScenario.
func runEndpointScenario(ctx context.Context, cfg Config, endpoints []string, index, name, degradation string, limit *CPULimit, cond condition, rep *bench.Report, out io.Writer) (Scenario, error) {
	sc := Scenario{Degradation: degradation, Policies: map[string]PolicyResult{}}
	list := contenders(cfg, true)
	transports := make([]*osread.Transport, len(list))
	clients := make([]*http.Client, len(list))
	defer func() {
		for i, t := range transports {
			if t != nil {
				t.Close()
				clients[i].CloseIdleConnections()
			}
		}
	}()
	for i, k := range list {
		base := &http.Transport{MaxIdleConnsPerHost: cfg.OpenSearchClients + 4, ResponseHeaderTimeout: 60 * time.Second}
		t, err := osread.NewTransport(endpoints, base, k.endpointConfig(cfg, name), nil, nil)
		if err != nil {
			return sc, fmt.Errorf("replbench: endpoint transport of %s: %w", k.name, err)
		}
		transports[i] = t
		clients[i] = &http.Client{Timeout: 60 * time.Second, Transport: t}
	}
	label := "opensearch endpoints, " + name
	results := make([]sideResult, len(list))
	loads, throttled, err := interleaveContenders(ctx, cfg.Rounds, cfg.OpenSearchEndpointRoundDuration, label, list, limit, cond, func(i, round int) (bench.LoadResult, error) {
		return results[i].victim.record(transports[i].Policy(), cfg.OpenSearchEndpointRoundDuration, func() bench.LoadResult {
			// Any endpoint's URL: the Transport replaces scheme and host.
			return bench.RunClosedLoop(ctx, cfg.OpenSearchClients, cfg.OpenSearchEndpointRoundDuration, searchMix(clients[i], endpoints[0], index, cfg, round))
		}), nil
	}, out)
	if err != nil {
		return sc, err
	}
	sc.Degradation += throttled
	for i := range list {
		results[i].load, results[i].shares, results[i].ejections = loads[i], endpointShares(transports[i].Policy()), ejectionsOf(transports[i].Policy().Snapshot(nil))
	}
	table, charts := compareContenders(&sc, list, results, cfg.Seed, "endpoint shares", "Search latency through osread, "+name, "Searches/s through osread, "+name)
	rep.Add(bench.Section{
		Title: "OpenSearch endpoints, " + name,
		Text: fmt.Sprintf("Degradation: %s.\n\nC3 / round-robin: throughput %.3f, p50 %.3f, p90 %.3f, p99 %.3f. C3 / the best peer (%s): throughput %.3f, p99 %.3f, p99.9 %.3f. %s",
			sc.Degradation, sc.ThroughputRatio, sc.P50Ratio, sc.P90Ratio, sc.P99Ratio, sc.BestPeer, sc.VsBestPeer.ThroughputRatio, sc.VsBestPeer.P99Ratio, sc.VsBestPeer.P999Ratio, victimTimelineText(sc)),
		Table:  &table,
		Charts: charts,
	})
	cmp := bench.CompareLoad(sc.BestPeer, findLoad(list, results, sc.BestPeer), oursName, findLoad(list, results, oursName))
	rep.Add(bench.Section{Title: "C3 vs the best peer on the OpenSearch endpoints, " + name, Table: &cmp})
	return sc, nil
}

// endpointShares returns the fraction of requests the policy started on
// each endpoint (retries included).
func endpointShares(p replica.Policy) []float64 {
	stats := p.Snapshot(nil)
	var total uint64
	for _, s := range stats {
		total += s.Chosen
	}
	shares := make([]float64, len(stats))
	for i, s := range stats {
		if total > 0 {
			shares[i] = float64(s.Chosen) / float64(total)
		}
	}
	return shares
}

// endpointsText is one line per scenario for the report's targets section.
func endpointsText(e EndpointsResult) string {
	if e.Skipped != "" {
		return "OpenSearch endpoints: skipped (" + e.Skipped + ")."
	}
	var lines []string
	for _, sc := range e.scenarios() {
		lines = append(lines, fmt.Sprintf("OpenSearch endpoints, %s: C3 / %s throughput %.3f, p99 %.3f, p99.9 %.3f.",
			sc.name, sc.s.BestPeer, sc.s.VsBestPeer.ThroughputRatio, sc.s.VsBestPeer.P99Ratio, sc.s.VsBestPeer.P999Ratio))
	}
	return strings.Join(lines, "\n")
}
