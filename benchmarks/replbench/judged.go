package replbench

import (
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/baedal/baedal/bench"
)

// The judged set-up (issue 42). In a deployment each replica has a host
// of its own and many application servers choose replicas, each on its
// own. On the benchmark's 2 cores that is: the replicas on a CPU the
// clients cannot use (IsolateServers), each capped at a share of it
// (ReplicaCPUPercent), and several client processes (ClientProcesses).
// With every server and client sharing the cores instead, the best peer
// is the one that sends every read to one replica: the idle replicas
// leave their CPU to the clients, which no deployment does. Runs in other
// set-ups report the same figures with no verdict.
const (
	// DefaultClientProcesses is Config.ClientProcesses' default.
	DefaultClientProcesses = 3
	// JudgedReplicaCPUPercent is each replica's cap in the judged set-up
	// (the flags' default): three replicas at 30% leave a tenth of the
	// servers' CPU to the system.
	JudgedReplicaCPUPercent = 30
)

// judgedSetup says whether a Redis part that ran with these settings is
// the judged set-up.
func judgedSetup(isolated bool, replicaCPUPercent, clientProcesses int) bool {
	return isolated && replicaCPUPercent > 0 && clientProcesses >= 2
}

// setupText describes the Redis part's set-up for the summary.
func setupText(cfg Config) string {
	where := "replicas and clients sharing every core"
	if cfg.IsolateServers {
		where = "replicas on the last CPU, clients on the others"
	}
	if cfg.ReplicaCPUPercent > 0 {
		where += fmt.Sprintf(", each replica capped at %d%% of a core", cfg.ReplicaCPUPercent)
	}
	verdict := "judged"
	if !judgedSetup(cfg.IsolateServers, cfg.ReplicaCPUPercent, cfg.ClientProcesses) {
		verdict = "not judged (the judged set-up is --isolate-servers with --replica-cpu-percent and 2 or more --client-processes); figures for information"
	}
	return fmt.Sprintf("%s; %d client process(es); %s", where, cfg.ClientProcesses, verdict)
}

// isolateNodes says whether the endpoint part pins the OpenSearch nodes:
// with IsolateServers, only when they are capped (three uncapped JVMs on
// one CPU measure nothing).
func (c Config) isolateNodes() bool {
	return c.IsolateServers && c.OpenSearchNodeCPUPercent > 0
}

// PeerDominance is C3 against one peer: throughput and p99 ratios (C3 /
// the peer, with intervals as in Ratios) and Dominance, min(peer/C3
// throughput, C3/peer p99): over 1 when the peer had both more reads/s
// and a lower p99, by that factor at least.
type PeerDominance struct {
	ThroughputRatio     float64        `json:"throughput_ratio"`
	ThroughputRatioCI95 bench.Interval `json:"throughput_ratio_ci95"`
	P99Ratio            float64        `json:"p99_ratio"`
	P99RatioCI95        bench.Interval `json:"p99_ratio_ci95"`
	Dominance           float64        `json:"dominance"`
	DominanceCI95       bench.Interval `json:"dominance_ci95"`
}

// peerDominance compares ours with every peer and returns each peer's
// figures and the largest dominance with its interval. A dominance's
// interval is that of the minimum over the two ratios' intervals (the
// throughput one inverted); the maximum over peers takes the largest low
// and high ends. Without peers it is 0 with no interval.
func peerDominance(ours bench.LoadResult, peers map[string]bench.LoadResult, seed uint64) (map[string]PeerDominance, float64, bench.Interval) {
	out := map[string]PeerDominance{}
	worst, worstCI := 0.0, bench.NoInterval
	for name, peer := range peers {
		r := ratios(ours, peer, seed)
		d := PeerDominance{ThroughputRatio: r.ThroughputRatio, ThroughputRatioCI95: r.ThroughputRatioCI95, P99Ratio: r.P99Ratio, P99RatioCI95: r.P99RatioCI95}
		d.Dominance = round3(math.Min(inverse(r.ThroughputRatio), r.P99Ratio))
		d.DominanceCI95 = bench.NoInterval
		if t, p := r.ThroughputRatioCI95, r.P99RatioCI95; t.Known() && p.Known() {
			// 1/t.Low is +Inf for an interval down to 0 (two rounds): the
			// p99's high end bounds the minimum then.
			d.DominanceCI95 = bench.Interval{Low: math.Min(1/t.High, p.Low), High: math.Min(1/t.Low, p.High)}.Around(d.Dominance)
		}
		out[name] = d
		if len(out) == 1 || d.Dominance > worst {
			worst = d.Dominance
		}
		switch {
		case !d.DominanceCI95.Known():
		case !worstCI.Known():
			worstCI = d.DominanceCI95
		default:
			worstCI = bench.Interval{Low: math.Max(worstCI.Low, d.DominanceCI95.Low), High: math.Max(worstCI.High, d.DominanceCI95.High)}
		}
	}
	if worstCI.Known() {
		worstCI = worstCI.Around(worst)
	}
	return out, worst, worstCI
}

// inverse is 1/v, 0 when v is not positive.
func inverse(v float64) float64 {
	if v <= 0 {
		return 0
	}
	return 1 / v
}

// targets judges the Redis part in the judged set-up only (judgedSetup),
// as issue 42 decided. With one replica degraded, C3 exists for the tail:
// p99.9 at most 0.5 and p99 at most 1.0 times the best peer's (the peer
// with the most reads/s), and throughput at least 0.95 times its. Healthy,
// stalled and recovering: no peer better than C3 on both throughput and
// p99 at once (peer dominance at most 1), and throughput at least 0.95
// times the best peer's. Other set-ups, and the OpenSearch parts, keep
// their figures with no verdict.
func targets(s Summary) bench.Targets {
	t := bench.Targets{}
	if s.RedisSkipped != "" || !judgedSetup(s.IsolatedServers, s.ReplicaCPUPercent, s.ClientProcesses) {
		return t
	}
	d := s.Degraded.VsBestPeer
	t["degraded.vs_best_peer.p999_ratio"] = bench.AtMost(0.5).Evaluate(d.P999Ratio, d.P999RatioCI95)
	t["degraded.vs_best_peer.p99_ratio"] = bench.AtMost(1.0).Evaluate(d.P99Ratio, d.P99RatioCI95)
	t["degraded.vs_best_peer.throughput_ratio"] = bench.AtLeast(0.95).Evaluate(d.ThroughputRatio, d.ThroughputRatioCI95)
	for _, sc := range s.scenarios() {
		if sc.name == scenarioDegraded {
			continue
		}
		v := sc.s.VsBestPeer
		t[sc.name+".vs_best_peer.throughput_ratio"] = bench.AtLeast(0.95).Evaluate(v.ThroughputRatio, v.ThroughputRatioCI95)
		t[sc.name+".peer_dominance"] = bench.AtMost(1.0).Evaluate(sc.s.PeerDominance, sc.s.PeerDominanceCI95)
	}
	return t
}

// lockedWriter serializes writes to w: the client processes' stderr
// copiers and this process write progress to it at once.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
