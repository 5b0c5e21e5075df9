package replbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/replica"
	"github.com/baedal/baedal/replica/redisread"
)

// Scenario names, also their keys in the Summary.
const (
	scenarioHealthy    = "healthy"
	scenarioDegraded   = "degraded"
	scenarioStalled    = "stalled"
	scenarioRecovering = "recovering"
)

// contender is one side of a comparison (Redis replicas or OpenSearch
// endpoints): a policy and how its client is set up.
type contender struct {
	name   string
	policy replica.PolicyName
	// ours marks baedal's selector and its variants; peers are the rest.
	ours bool
	// psi ranks C3 by Ψ instead of peak-EWMA cost; concentrate sends every
	// read to one home replica; hedge turns hedged reads on (Redis);
	// noPingGate turns the ping gate off (Redis, replica.Config.PingGate);
	// noProbation lets an ejected replica back without probation;
	// keepPeak keeps a replica's peak latency when it is back early;
	// autoConcentrate concentrates in the epochs where that was faster;
	// ejectedPings pings an ejected replica every 25 ms.
	psi, concentrate, hedge, noPingGate, noProbation, keepPeak, autoConcentrate, ejectedPings bool
}

// oursName is the side that is baedal's selector as it ships.
const oursName = "c3"

// ejectedPingInterval is how often the c3-ejected-pings variant pings a
// replica or node it has ejected.
const ejectedPingInterval = 25 * time.Millisecond

// c3Variants are the variants of our selector, in report order: ranked by
// Ψ, concentrating reads on one home replica, with hedged reads, without
// the ping gate, without probation after an ejection, keeping the peak
// latency of a replica back early, concentrating while that was faster,
// pinging an ejected replica every ejectedPingInterval. endpoint marks
// those the endpoint part runs too.
var c3Variants = []struct {
	contender
	endpoint bool
}{
	{contender{name: "c3-psi", psi: true}, true},
	{contender{name: "c3-concentrate", concentrate: true}, false},
	{contender{name: "c3-hedge", hedge: true}, false},
	{contender{name: "c3-no-ping-gate", noPingGate: true}, false},
	{contender{name: "c3-no-probation", noProbation: true}, false},
	{contender{name: "c3-keep-peak", keepPeak: true}, false},
	{contender{name: "c3-auto-concentrate", autoConcentrate: true}, true},
	{contender{name: "c3-ejected-pings", ejectedPings: true}, true},
}

// variantNames lists c3Variants' names.
func variantNames() []string {
	var names []string
	for _, v := range c3Variants {
		names = append(names, v.name)
	}
	return names
}

// contenders returns our selector, the variants of it that cfg runs (see
// Config.Variants) and the peers in cfg.Policies; for the endpoint part
// (endpoints), only the variants that apply to osread.
func contenders(cfg Config, endpoints bool) []contender {
	list := []contender{{name: oursName, policy: replica.PolicyC3, ours: true}}
	for _, v := range c3Variants {
		if (v.endpoint || !endpoints) && cfg.runsVariant(v.name) {
			k := v.contender
			k.policy, k.ours = replica.PolicyC3, true
			list = append(list, k)
		}
	}
	for _, p := range cfg.Policies {
		if p != replica.PolicyC3 {
			list = append(list, contender{name: string(p), policy: p})
		}
	}
	return list
}

// readConfig is the redisread configuration of one contender.
func (k contender) readConfig(cfg Config, scenario string) redisread.Config {
	rc := redisread.Config{Policy: tuned(cfg.Tuning, k.policy, cfg.Seed), Path: scenario + "-" + k.name, PsiRank: k.psi}
	rc.Policy.Concentrate = rc.Policy.Concentrate || k.concentrate
	if k.noPingGate {
		rc.Policy.PingGate = -1
	}
	rc.Policy.NoProbation = rc.Policy.NoProbation || k.noProbation
	rc.Policy.KeepPeak = rc.Policy.KeepPeak || k.keepPeak
	rc.Policy.AutoConcentrate = rc.Policy.AutoConcentrate || k.autoConcentrate
	if k.ejectedPings {
		rc.EjectedPingInterval = ejectedPingInterval
	}
	rc.Hedge.Budget = -1
	if k.hedge {
		rc.Hedge.Budget = replica.DefaultHedgeBudget
		if cfg.HedgeBudget != 0 {
			rc.Hedge.Budget = cfg.HedgeBudget
		}
	}
	return rc
}

// condition is what a scenario does to replica 1 during each side's round:
// begin starts it, the returned end undoes it (end is called even when the
// round failed).
type condition func(ctx context.Context, roundDuration time.Duration) (end func() error, err error)

// stallCondition stops process pid with SIGSTOP for stall every period, the
// first time at period/5 into the round (a quarter of the round when that is
// shorter), and resumes it with SIGCONT: a GC pause or a fork.
func stallCondition(pid int, stall, period time.Duration, stalls *int) condition {
	return func(ctx context.Context, roundDuration time.Duration) (func() error, error) {
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := time.Now().Add(min(period/5, roundDuration/4))
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Until(next)):
				}
				if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("replbench: SIGSTOP pid %d: %w", pid, err))
					mu.Unlock()
					return
				}
				select {
				case <-ctx.Done():
				case <-time.After(stall):
				}
				err := syscall.Kill(pid, syscall.SIGCONT)
				mu.Lock()
				*stalls++
				if err != nil {
					errs = append(errs, fmt.Errorf("replbench: SIGCONT pid %d: %w", pid, err))
				}
				mu.Unlock()
				next = next.Add(period)
			}
		}()
		return func() error {
			cancel()
			wg.Wait()
			// Whatever happened, the process must run again.
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil && !errors.Is(err, syscall.ESRCH) {
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		}, nil
	}
}

// recoverCondition limits process pid to percent% of one core for the first
// half of the round, then undoes the limit: a degraded replica recovers and
// the selector must give it its reads back. capped is the process's own cap
// (nil when it has none; see degrade).
func recoverCondition(pid, percent int, capped *CPULimit) condition {
	return func(ctx context.Context, roundDuration time.Duration) (func() error, error) {
		_, undo, err := degrade(pid, percent, capped)
		if err != nil {
			return nil, err
		}
		var mu sync.Mutex
		var undone bool
		var undoErr error
		undoOnce := func() {
			mu.Lock()
			defer mu.Unlock()
			if !undone {
				undone, undoErr = true, undo()
			}
		}
		timer := time.AfterFunc(roundDuration/2, undoOnce)
		return func() error {
			timer.Stop()
			undoOnce()
			return undoErr
		}, nil
	}
}

// sideResult is what one contender measured over all rounds of a scenario.
type sideResult struct {
	load bench.LoadResult
	// shares is the fraction of requests started on each replica or
	// endpoint (the victim first).
	shares []float64
	// hedges counts hedged reads (hedged Redis variants only).
	hedges *replica.HedgeStats
	// ejections counts our selector's ejections per replica, by cause.
	ejections []Ejections
	// victim counts the reads started on the victim, by tenth of a round.
	victim victimTimeline
	// herd follows the most-loaded replica (Redis part).
	herd herding
	// throttle sums each capped replica's CFS counters over the side's
	// rounds (Redis part with ReplicaCPUPercent).
	throttle []cpuStat
}

// victimTimeline counts, by tenth of a round and summed over rounds, the
// requests a policy started on the victim (replica or endpoint 0) and on
// all of them: when a selector gives a recovered replica its traffic back,
// and how soon it stops sending reads to a stalled one, which the shares
// over whole rounds do not show.
type victimTimeline struct {
	victim, all [timelineBuckets]uint64
}

const timelineBuckets = 10

// record runs run, a round of duration d, while it samples p's requests
// per replica (sampleChosen), and adds them to their tenths.
func (v *victimTimeline) record(p replica.Policy, d time.Duration, run func() bench.LoadResult) bench.LoadResult {
	var res bench.LoadResult
	step := sampleStep(d)
	v.add(sampleChosen(p, step, func() { res = run() }), step, d)
	return res
}

// add adds a round of duration d sampled every step (see sampleChosen)
// to the tenths; what was sampled after d goes into the last tenth.
func (v *victimTimeline) add(chosen [][]uint64, step, d time.Duration) {
	for i, per := range chosen {
		b := tenthOf(i, step, d)
		for r, n := range per {
			if r == 0 {
				v.victim[b] += n
			}
			v.all[b] += n
		}
	}
}

// tenthOf returns the tenth of a round of duration d that step i (of step
// length) starts in, the last tenth for steps past the end.
func tenthOf(i int, step, d time.Duration) int {
	return min(int(time.Duration(i)*step*timelineBuckets/max(d, 1)), timelineBuckets-1)
}

// shares returns the victim's share of the requests in each tenth, 0 for a
// tenth without requests.
func (v *victimTimeline) shares() []float64 {
	out := make([]float64, timelineBuckets)
	for b := range out {
		if v.all[b] > 0 {
			out[b] = round3(float64(v.victim[b]) / float64(v.all[b]))
		}
	}
	return out
}

// interleaveContenders runs runRound for every contender in every round,
// interleaved as bench.Interleave does (ABBA), with cond, when not nil,
// applied around each side's round, and returns each contender's merged
// rounds. limit, when not nil, is a degradation in force for the whole
// scenario; throttled then says how long the kernel throttled it.
func interleaveContenders(ctx context.Context, rounds int, roundDuration time.Duration, scenario string, list []contender, limit *CPULimit, cond condition,
	runRound func(i, round int) (bench.LoadResult, error), out io.Writer) (loads []bench.LoadResult, throttled string, err error) {
	loads = make([]bench.LoadResult, len(list))
	var sides []bench.Side
	for i, k := range list {
		sides = append(sides, bench.Side{Name: k.name, Run: func(round int) error {
			fmt.Fprintf(out, "%s: round %d: %s\n", scenario, round+1, k.name)
			end := func() error { return nil }
			if cond != nil {
				var err error
				if end, err = cond(ctx, roundDuration); err != nil {
					return err
				}
			}
			load, err := runRound(i, round)
			loads[i].Merge(load)
			return errors.Join(err, end(), ctx.Err())
		}})
	}
	var throttledBefore uint64
	if limit != nil {
		throttledBefore, _ = limit.throttledTime()
	}
	if err := bench.Interleave(rounds, sides...); err != nil {
		return nil, "", err
	}
	if limit != nil {
		if after, err := limit.throttledTime(); err == nil {
			throttled = fmt.Sprintf("; the kernel throttled it for %.1f s in total", float64(after-throttledBefore)/1e9)
		}
	}
	return loads, throttled, nil
}

// compareContenders fills sc from the contenders' results: every side's
// figures, C3 / round-robin, the best peer (the peer with the most
// operations per second) and C3 / the best peer. It returns the report's
// table of every side and its latency and throughput charts.
func compareContenders(sc *Scenario, list []contender, results []sideResult, seed uint64, sharesHeader, latencyTitle, throughputTitle string) (bench.Table, []bench.Chart) {
	var ours, rr, best bench.LoadResult
	table := bench.Table{Header: []string{"policy", "throughput (ops/s)", "errors", "p50 (ms)", "p90 (ms)", "p99 (ms)", "p99.9 (ms)", sharesHeader, "hedges", "ejections", "herding", "throttled"}}
	var names []string
	var recorders []*bench.LatencyRecorder
	var bars []bench.Series
	for i, k := range list {
		res := results[i].load
		shares := make([]float64, len(results[i].shares))
		var shareText []string
		for j, share := range results[i].shares {
			shares[j] = round3(share)
			shareText = append(shareText, fmt.Sprintf("%.0f%%", share*100))
		}
		sc.Policies[k.name] = PolicyResult{LoadSummary: res.Summary(), Shares: shares, VictimShareByTenth: results[i].victim.shares(),
			Hedges: results[i].hedges, Ejections: results[i].ejections, Herding: results[i].herd.summary(), ReplicaThrottled: throttledShares(results[i].throttle), RoundP99Ms: roundP99s(res)}
		hedges := "—"
		if h := results[i].hedges; h != nil && h.Reads > 0 {
			hedges = fmt.Sprintf("%.2f%% (%d won)", 100*float64(h.Hedges)/float64(h.Reads), h.HedgeWins)
		}
		s := res.Latency.Summary()
		table.Rows = append(table.Rows, []string{k.name, fmt.Sprintf("%.0f", res.Throughput()), strconv.FormatInt(res.Errors, 10),
			fmt.Sprintf("%.3f", s.P50Ms), fmt.Sprintf("%.3f", s.P90Ms), fmt.Sprintf("%.3f", s.P99Ms), fmt.Sprintf("%.3f", s.P999Ms), strings.Join(shareText, " / "), hedges, ejectionText(results[i].ejections),
			herdingText(results[i].herd.summary()), throttledText(throttledShares(results[i].throttle))})
		names = append(names, k.name)
		recorders = append(recorders, res.Latency)
		bars = append(bars, bench.Series{Name: k.name, X: []float64{float64(i)}, Y: []float64{res.Throughput()}, Labels: []string{k.name}})
		switch {
		case k.name == oursName:
			ours = res
		case k.ours:
		default:
			if k.policy == replica.PolicyRoundRobin {
				rr = res
			}
			if sc.BestPeer == "" || res.Throughput() > best.Throughput() {
				sc.BestPeer, best = k.name, res
			}
		}
	}
	sc.Ratios = ratios(ours, rr, seed)
	sc.VsBestPeer = ratios(ours, best, seed)
	peers := map[string]bench.LoadResult{}
	for i, k := range list {
		if !k.ours {
			peers[k.name] = results[i].load
		}
	}
	sc.VsPeers, sc.PeerDominance, sc.PeerDominanceCI95 = peerDominance(ours, peers, seed)
	return table, []bench.Chart{
		bench.LatencyCDF(latencyTitle, names, recorders),
		{Title: throughputTitle, Kind: bench.BarChart, YLabel: "ops/s", Series: bars},
	}
}

// victimTimelineText shows the victim's share by tenth of a round for our
// selector and the best peer, in percent.
func victimTimelineText(sc Scenario) string {
	var parts []string
	for _, name := range []string{oursName, sc.BestPeer} {
		var pct []string
		for _, share := range sc.Policies[name].VictimShareByTenth {
			pct = append(pct, fmt.Sprintf("%.0f", share*100))
		}
		parts = append(parts, name+": "+strings.Join(pct, " "))
	}
	return "The victim's share of requests (%) by tenth of a round, over every round: " + strings.Join(parts, "; ") + "."
}

// ejectionText shows ejections per replica as slow/silent/ping(+extended),
// replicas separated by " · "; "—" when there were none.
func ejectionText(ejections []Ejections) string {
	if len(ejections) == 0 {
		return "—"
	}
	parts := make([]string, len(ejections))
	for i, e := range ejections {
		parts[i] = fmt.Sprintf("%d/%d/%d(+%d)", e.Slow, e.Silent, e.Ping, e.PingExtensions)
	}
	return strings.Join(parts, " · ")
}

// findLoad returns the result of the contender called name.
func findLoad(list []contender, results []sideResult, name string) bench.LoadResult {
	for i, k := range list {
		if k.name == name {
			return results[i].load
		}
	}
	return bench.LoadResult{}
}

// herdingText shows a side's herding as the mean top share and its moves
// per second; "—" without figures.
func herdingText(h *Herding) string {
	if h == nil {
		return "—"
	}
	return fmt.Sprintf("top %.0f%%, %.1f moves/s", h.TopShareMean*100, h.TopMovesPerS)
}

// throttledText shows each capped replica's throttled periods in percent.
func throttledText(shares []float64) string {
	if len(shares) == 0 {
		return "—"
	}
	var parts []string
	for _, v := range shares {
		parts = append(parts, fmt.Sprintf("%.0f%%", v*100))
	}
	return strings.Join(parts, " / ")
}

// roundP99s returns the p99 of each round merged into res, in ms.
func roundP99s(res bench.LoadResult) []float64 {
	var out []float64
	for _, l := range res.RoundLatency {
		out = append(out, round3(l.P99Ms))
	}
	return out
}
