package replbench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/replica"
)

func TestConfigValidateNamesTheFlag(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Profile: "huge"}, "allowed values: quick, full"},
		{Config{Clients: 5000}, "clients: got 5000, allowed: 1..1000"},
		{Config{EntriesPerUser: 10}, "entries-per-user: got 10"},
		{Config{DegradePercent: 150}, "degrade-percent: got 150, allowed: 1..100"},
		{Config{ReplicaCPUPercent: 5}, "replica-cpu-percent: got 5, allowed: 0 (no cap) or 11..100"},
		{Config{OpenSearchNodeCPUPercent: 101}, "opensearch-node-cpu-percent: got 101, allowed: 0 (no cap) or 11..100"},
		{Config{RoundDuration: time.Millisecond}, "round-duration: got 1ms, allowed: 100ms..10m"},
		{Config{Policies: []replica.PolicyName{"fastest"}}, "allowed: c3, round-robin, random, lowest-ping, lowest-ping-tolerance, peak-ewma, least-request"},
		{Config{StallFor: 3 * time.Second}, "stall-for: got 3s, allowed: more than 0 and less than stall-every (2s)"},
		{Config{OpenSearchEndpointRoundDuration: time.Millisecond}, "opensearch-endpoint-round-duration: got 1ms, allowed: 100ms..10m"},
		{Config{SkipRedis: true, SkipOpenSearch: true}, "skip-redis and skip-opensearch: got both"},
	}
	for _, c := range cases {
		err := c.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error containing %q", c.cfg, err, c.want)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v, want valid (quick profile)", err)
	}
	quick, full := Config{}.WithDefaults(), Config{Profile: bench.ProfileFull}.WithDefaults()
	if quick.Users >= full.Users || quick.RoundDuration >= full.RoundDuration {
		t.Errorf("quick profile (%d users, %s) is not smaller than full (%d users, %s)", quick.Users, quick.RoundDuration, full.Users, full.RoundDuration)
	}
}

// startBusyLoop starts a shell busy loop, killed when the test ends, once
// it is known that controlFile (a cgroup-v1 controller's file) exists and
// the test runs as root.
func startBusyLoop(t *testing.T, controlFile string) *exec.Cmd {
	t.Helper()
	if _, err := os.Stat(controlFile); err != nil || os.Geteuid() != 0 {
		testenv.Unavailable(t, fmt.Errorf("the cgroup-v1 file %s and root are needed (euid %d, stat: %v)", controlFile, os.Geteuid(), err))
	}
	busy := exec.Command("sh", "-c", "while :; do :; done")
	if err := busy.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Process.Kill(); busy.Wait() })
	return busy
}

// TestLimitCPUThrottlesARealProcess limits a busy loop to 5% of one core and
// checks the kernel throttled it, then that Remove puts it back in the root
// group and deletes the group.
func TestLimitCPUThrottlesARealProcess(t *testing.T) {
	busy := startBusyLoop(t, filepath.Join(cgroupCPURoot, "cpu.cfs_quota_us"))
	limit, err := LimitCPU(busy.Process.Pid, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer limit.Remove()
	procs, err := os.ReadFile(filepath.Join(limit.group, "cgroup.procs"))
	if err != nil || !strings.Contains(string(procs), strconv.Itoa(busy.Process.Pid)) {
		t.Fatalf("cgroup.procs of %s = %q (%v), want pid %d", limit.group, procs, err, busy.Process.Pid)
	}
	quota, _ := os.ReadFile(filepath.Join(limit.group, "cpu.cfs_quota_us"))
	if strings.TrimSpace(string(quota)) != "5000" {
		t.Fatalf("cpu.cfs_quota_us = %q, want 5000 (5%% of a 100000 µs period)", quota)
	}
	var throttled uint64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if throttled, err = limit.throttledTime(); err == nil && throttled > 0 {
			break
		}
	}
	if throttled == 0 {
		t.Fatalf("a busy loop at 5%% of one core was never throttled (err %v)", err)
	}
	group := limit.group
	if err := limit.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Fatalf("group %s still exists after Remove (stat: %v)", group, err)
	}
	cg, _ := os.ReadFile("/proc/" + strconv.Itoa(busy.Process.Pid) + "/cgroup")
	if !strings.Contains(string(cg), ":cpu:/\n") {
		t.Fatalf("after Remove the process is in %q, want the root cpu group", cg)
	}
	if err := limit.Remove(); err != nil {
		t.Fatalf("second Remove: %v, want nil", err)
	}
	if _, err := LimitCPU(busy.Process.Pid, 0); err == nil || !strings.Contains(err.Error(), "allowed: 1..100") {
		t.Fatalf("LimitCPU 0%%: %v, want an error naming the allowed range", err)
	}
}

// TestPinCPUsPinsARealProcess pins a busy loop to CPU 0 and checks the
// kernel's allowed list, then that Remove gives it every CPU back.
func TestPinCPUsPinsARealProcess(t *testing.T) {
	busy := startBusyLoop(t, filepath.Join(cgroupCPUSetRoot, "cpuset.cpus"))
	allowed := func() string {
		status, err := os.ReadFile("/proc/" + strconv.Itoa(busy.Process.Pid) + "/status")
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				return strings.TrimSpace(v)
			}
		}
		t.Fatalf("no Cpus_allowed_list in /proc/%d/status", busy.Process.Pid)
		return ""
	}
	before := allowed()
	pin, err := PinCPUs("test-"+strconv.Itoa(busy.Process.Pid), "0", busy.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Remove()
	if got := allowed(); got != "0" {
		t.Fatalf("pinned to CPU 0, the kernel allows %q", got)
	}
	group := pin.group
	if err := pin.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(group); !os.IsNotExist(err) {
		t.Fatalf("group %s still exists after Remove (stat: %v)", group, err)
	}
	if got := allowed(); got != before {
		t.Fatalf("after Remove the kernel allows %q, want %q as before", got, before)
	}
	if err := pin.Remove(); err != nil {
		t.Fatalf("second Remove: %v, want nil", err)
	}
	if _, err := PinCPUs("test-bad", "no-such-cpu", busy.Process.Pid); err == nil || !strings.Contains(err.Error(), "cpuset.cpus") {
		t.Fatalf("PinCPUs to CPUs %q: %v, want an error naming cpuset.cpus", "no-such-cpu", err)
	}
	if left, _ := filepath.Glob(filepath.Join(cgroupCPUSetRoot, "baedal-replbench-test-*")); len(left) > 0 {
		t.Fatalf("groups left after a failed PinCPUs: %v", left)
	}
}

// TestBenchmarkSmoke runs the whole benchmark, Redis and both OpenSearch
// parts (ARS, endpoints), at a tiny size on dedicated stacks and checks the
// summary's keys and that every interval holds its point, not the figures.
func TestBenchmarkSmoke(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Unavailable(t, fmt.Errorf("the benchmark degrades a server with a cgroup CPU quota, which needs root (euid %d)", os.Geteuid()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cfg := Config{
		Users: 200, EntriesPerUser: 50, Clients: 8, Rounds: 2, RoundDuration: 300 * time.Millisecond,
		Policies:       []replica.PolicyName{replica.PolicyC3, replica.PolicyRoundRobin},
		OpenSearchDocs: 300, OpenSearchClients: 2, OpenSearchRoundDuration: 300 * time.Millisecond,
		OpenSearchEndpointRoundDuration: 300 * time.Millisecond,
		// Capped replicas and nodes: the victim's cap is lowered and
		// restored instead of a group of its own (see degrade).
		ReplicaCPUPercent:        90,
		OpenSearchNodeCPUPercent: 90,
		IsolateServers:           runtime.NumCPU() >= 2,
		ReportDir:                t.TempDir(),
	}
	procs := runtime.GOMAXPROCS(0)
	var out, progress bytes.Buffer
	sum, err := Run(ctx, cfg, &out, &progress)
	if err != nil {
		if strings.Contains(err.Error(), "start the stack") {
			testenv.Unavailable(t, err)
		}
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	if lines := strings.Count(strings.TrimSpace(out.String()), "\n"); lines != 0 || !strings.Contains(progress.String(), "round 1") {
		t.Errorf("out has %d lines besides the summary, or progress has no rounds:\n%s", lines, progress.String())
	}
	parsed, err := bench.ParseSummary(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var ratioKeys []string
	parts := []string{"opensearch_ars"}
	for _, sc := range []string{"healthy", "degraded", "stalled", "recovering"} {
		parts = append(parts, sc, sc+".vs_best_peer", "opensearch_endpoints."+sc, "opensearch_endpoints."+sc+".vs_best_peer")
	}
	for _, part := range parts {
		for _, k := range []string{"throughput_ratio", "p50_ratio", "p90_ratio", "p99_ratio", "p999_ratio"} {
			ratioKeys = append(ratioKeys, part+"."+k)
		}
	}
	keys := append([]string{"bench", "degraded.policies.c3.latency.p99_ms", "degraded.policies.round-robin.replica_shares",
		"stalled.policies.c3-hedge.hedges.hedges", "stalled.best_peer", "opensearch_ars.ars_on.latency.p99_ms",
		"opensearch_endpoints.victim", "opensearch_endpoints.endpoints", "opensearch_endpoints.degraded.best_peer",
		"opensearch_endpoints.degraded.policies.c3.latency.p99_ms", "opensearch_endpoints.stalled.policies.c3-psi.replica_shares",
		"opensearch_endpoints.recovering.policies.round-robin.replica_shares", "recovering.policies.c3.victim_share_by_tenth",
		"opensearch_endpoints.recovering.policies.c3.victim_share_by_tenth", "healthy.policies.c3.herding.top_share_mean",
		"stalled.policies.round-robin.replica_throttled_periods", "degraded.peer_dominance", "client_processes", "setup"}, ratioKeys...)
	if missing := bench.MissingKeys(parsed, keys...); len(missing) > 0 {
		t.Fatalf("summary lacks %v:\n%s", missing, out.String())
	}
	if problems := bench.IntervalProblems(parsed, ratioKeys...); len(problems) > 0 {
		t.Errorf("intervals: %q", problems)
	}
	if wantTargets := map[bool]int{true: 9, false: 0}[cfg.IsolateServers]; len(sum.Targets) != wantTargets {
		t.Errorf("targets %v, want %d (the judged set-up's, isolated %t)", sum.Targets, wantTargets, cfg.IsolateServers)
	}
	if sum.ClientProcesses != DefaultClientProcesses || !strings.Contains(progress.String(), "client processes: pids") {
		t.Errorf("client processes %d, want %d started", sum.ClientProcesses, DefaultClientProcesses)
	}
	for _, sc := range sum.scenarios() {
		for _, side := range []string{"c3", "round-robin"} {
			p := sc.s.Policies[side]
			if p.Herding == nil || p.Herding.Windows == 0 || len(p.ReplicaThrottled) != 3 {
				t.Errorf("%s %s: herding %+v, throttled %v; want windows and 3 capped replicas", sc.name, side, p.Herding, p.ReplicaThrottled)
			}
		}
		if _, ok := sc.s.VsPeers["round-robin"]; !ok || !sc.s.PeerDominanceCI95.Known() {
			t.Errorf("%s: peers %v, dominance interval %v; want round-robin and an interval", sc.name, sc.s.VsPeers, sc.s.PeerDominanceCI95)
		}
	}
	ep := sum.OpenSearchEndpoints
	if ep.Skipped != "" || len(ep.Endpoints) != 3 {
		t.Fatalf("OpenSearch endpoint part: skipped %q, endpoints %v; want 3 endpoints", ep.Skipped, ep.Endpoints)
	}
	for _, sc := range ep.scenarios() {
		if sc.s.BestPeer != "round-robin" {
			t.Errorf("endpoints %s: best peer %q, want round-robin (the only peer)", sc.name, sc.s.BestPeer)
		}
		for _, side := range []string{"c3", "c3-psi", "round-robin"} {
			p, ok := sc.s.Policies[side]
			if !ok || p.Ops == 0 || len(p.Shares) != 3 {
				t.Errorf("endpoints %s: side %s = %+v (present %t), want searches and 3 endpoint shares", sc.name, side, p, ok)
			}
		}
	}
	if !strings.Contains(ep.Stalled.Degradation, "SIGSTOP") || strings.Contains(ep.Stalled.Degradation, "; 0 stalls") {
		t.Errorf("endpoints stalled degradation %q, want SIGSTOP stalls of the victim's JVM", ep.Stalled.Degradation)
	}
	if !strings.Contains(ep.Degraded.Degradation, "throttled it for") {
		t.Errorf("endpoints degraded degradation %q, want the kernel's throttled time", ep.Degraded.Degradation)
	}
	for _, sc := range sum.scenarios() {
		if sc.s.BestPeer != "round-robin" { // the only peer in this run
			t.Errorf("%s: best peer %q, want round-robin", sc.name, sc.s.BestPeer)
		}
		for _, variant := range []string{"c3-psi", "c3-no-ping-gate", "c3-no-probation", "c3-keep-peak"} {
			if _, ok := sc.s.Policies[variant]; !ok {
				t.Errorf("%s: no %s variant in %v", sc.name, variant, sc.s.Policies)
			}
		}
	}
	if !strings.Contains(sum.Stalled.Degradation, "SIGSTOP") || strings.Contains(sum.Stalled.Degradation, "; 0 stalls") {
		t.Errorf("stalled degradation %q, want SIGSTOP stalls applied", sum.Stalled.Degradation)
	}
	if parsed["replica_cpu_percent"] != 90.0 || !strings.Contains(sum.Degraded.Degradation, "throttled it for") {
		t.Errorf("replica_cpu_percent %v, degraded %q; want 90 and the kernel's throttled time", parsed["replica_cpu_percent"], sum.Degraded.Degradation)
	}
	if e := sum.OpenSearchEndpoints; e.NodeCPUPercent != 90 || !strings.Contains(e.Degraded.Degradation, "throttled it for") {
		t.Errorf("endpoint part: node_cpu_percent %d, degraded %q; want 90 and the kernel's throttled time", e.NodeCPUPercent, e.Degraded.Degradation)
	}
	if parsed["isolated_servers"] != cfg.IsolateServers || sum.OpenSearchEndpoints.IsolatedServers != cfg.IsolateServers {
		t.Errorf("isolated_servers %v, endpoint part %v; want %v", parsed["isolated_servers"], sum.OpenSearchEndpoints.IsolatedServers, cfg.IsolateServers)
	}
	for _, root := range []string{cgroupCPURoot, cgroupCPUSetRoot} {
		if left, _ := filepath.Glob(filepath.Join(root, "baedal-replbench-*")); len(left) > 0 {
			t.Errorf("cgroups left after the run: %v", left)
		}
	}
	if own, _ := os.ReadFile("/proc/self/cpuset"); strings.TrimSpace(string(own)) != "/" || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("after the run this process is in cpuset %q with GOMAXPROCS %d, want / and %d", own, runtime.GOMAXPROCS(0), procs)
	}
	if parsed["bench"] != "replicas" {
		t.Fatalf("bench = %v, want replicas", parsed["bench"])
	}
	for name, r := range map[string]Ratios{"healthy": sum.Healthy.Ratios, "degraded": sum.Degraded.Ratios, "stalled": sum.Stalled.Ratios,
		"recovering": sum.Recovering.Ratios, "opensearch_ars": sum.OpenSearchARS.Ratios,
		"opensearch_endpoints.healthy": ep.Healthy.Ratios, "opensearch_endpoints.degraded": ep.Degraded.Ratios} {
		if r.ThroughputRatio <= 0 || r.P99Ratio <= 0 {
			t.Errorf("%s ratios %+v: a side measured nothing", name, r)
		}
	}
	if sum.OpenSearchARS.Skipped != "" {
		t.Errorf("OpenSearch part skipped: %s", sum.OpenSearchARS.Skipped)
	}
	html, err := os.ReadFile(filepath.Join(cfg.ReportDir, "replicas.html"))
	if err != nil {
		t.Errorf("no HTML report: %v", err)
	}
	for _, section := range []string{"Redis timelines, stalled", "OpenSearch shard-copy ARS", "OpenSearch endpoints, degraded", "C3 vs the best peer on the OpenSearch endpoints, recovering"} {
		if !strings.Contains(string(html), section) {
			t.Errorf("HTML report lacks the section %q", section)
		}
	}
	if !strings.Contains(sum.Degraded.Degradation, "limited to 10% of one core") {
		t.Errorf("degradation %q, want the 10%% CPU quota", sum.Degraded.Degradation)
	}
}

// TestEndpointContendersAreOsreadAsShippedAndEveryPeer checks the sides of
// the OpenSearch endpoint comparison: c3 configured as osread ships it
// (peak cost, ejection, its sampler on), the Ψ-ranked variant, and each
// peer without a sampler.
func TestEndpointContendersAreOsreadAsShippedAndEveryPeer(t *testing.T) {
	cfg := Config{}.WithDefaults()
	list := contenders(cfg, true)
	var names []string
	for _, k := range list {
		names = append(names, k.name)
	}
	want := []string{"c3", "c3-psi", "c3-auto-concentrate", "c3-ejected-pings", "round-robin", "random", "lowest-ping", "lowest-ping-tolerance", "peak-ewma", "least-request"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("endpoint contenders %v, want %v", names, want)
	}
	for _, k := range list {
		oc := k.endpointConfig(cfg, scenarioDegraded).WithDefaults()
		if err := oc.Validate(); err != nil {
			t.Errorf("%s: %v", k.name, err)
		}
		if oc.Policy.Policy != k.policy {
			t.Errorf("%s: policy %s, want %s", k.name, oc.Policy.Policy, k.policy)
		}
		if sampled := oc.SampleInterval > 0; sampled != k.ours {
			t.Errorf("%s: sample interval %s, want a sampler exactly for our selector", k.name, oc.SampleInterval)
		}
		if wantPeak := k.ours && !k.psi; oc.Policy.PeakCost != wantPeak || (oc.Policy.SlowFactor > 0) != wantPeak {
			t.Errorf("%s: PeakCost %t, SlowFactor %v; want peak cost and ejection exactly on c3 and its unranked-by-Ψ variants (osread's default; c3-psi ranks by Ψ)", k.name, oc.Policy.PeakCost, oc.Policy.SlowFactor)
		}
		if (oc.EjectedPingInterval > 0) != (k.name == "c3-ejected-pings") {
			t.Errorf("%s: EjectedPingInterval %s, want it on exactly on c3-ejected-pings", k.name, oc.EjectedPingInterval)
		}
		if oc.Policy.AutoConcentrate != (k.name == "c3-auto-concentrate") {
			t.Errorf("%s: AutoConcentrate %t, want it exactly on c3-auto-concentrate", k.name, oc.Policy.AutoConcentrate)
		}
	}
	if got := contenders(Config{NoAblations: true, Policies: []replica.PolicyName{replica.PolicyRoundRobin}}, true); len(got) != 2 {
		t.Errorf("no ablations, round-robin only: %d contenders %+v, want c3 and round-robin", len(got), got)
	}
}

// TestVariantsPickTheVariantsOfC3 checks --variants: only the variants
// named run, the endpoint part keeps those that apply to osread, and an
// unknown name is an error naming the allowed ones.
func TestVariantsPickTheVariantsOfC3(t *testing.T) {
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	var cfg Config
	cfg.Flags(fs)
	if err := fs.Parse([]string{"--variants", "c3-hedge, c3-auto-concentrate", "--policies", "lowest-ping"}); err != nil {
		t.Fatal(err)
	}
	names := func(list []contender) string {
		var out []string
		for _, k := range list {
			out = append(out, k.name)
		}
		return strings.Join(out, ",")
	}
	if got, want := names(contenders(cfg, false)), "c3,c3-hedge,c3-auto-concentrate,lowest-ping"; got != want {
		t.Errorf("Redis contenders %s, want %s", got, want)
	}
	if got, want := names(contenders(cfg, true)), "c3,c3-auto-concentrate,lowest-ping"; got != want {
		t.Errorf("endpoint contenders %s, want %s", got, want)
	}
	for k, v := range contenders(cfg, false) {
		if v.ours != (k < 3) || v.hedge != (v.name == "c3-hedge") || v.autoConcentrate != (v.name == "c3-auto-concentrate") {
			t.Errorf("contender %+v: wrong flags", v)
		}
	}
	cfg.Variants = []string{"c3-fast"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "variants") || !strings.Contains(err.Error(), "c3-keep-peak") {
		t.Errorf("unknown variant: error %v, want one naming the field and the allowed variants", err)
	}
	cfg.Variants, cfg.NoAblations = []string{"c3-psi"}, true
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "no-ablations") {
		t.Errorf("variants with no-ablations: error %v, want one naming both", err)
	}
}

// TestSummaryOfASkippedPartHasNoZeroFigures checks that a part that did not
// run (--skip-redis, --skip-opensearch) prints no zero scenarios that could
// pass for figures, only why it was skipped.
func TestSummaryOfASkippedPartHasNoZeroFigures(t *testing.T) {
	raw, err := json.Marshal(Summary{Bench: "replicas", RedisSkipped: "skipped by --skip-redis",
		OpenSearchEndpoints: EndpointsResult{Skipped: "skipped by --skip-opensearch"}})
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"healthy", "degraded", "stalled", "recovering", "clients", "timelines"} {
		if _, ok := top[key]; ok {
			t.Errorf("summary %s has %s, want no Redis figures when the Redis part was skipped", raw, key)
		}
	}
	if got := string(top["opensearch_endpoints"]); got != `{"skipped":"skipped by --skip-opensearch"}` {
		t.Errorf("opensearch_endpoints = %s, want only why it was skipped", got)
	}
}

// A percentile ratio's interval covers the spread between paired rounds,
// which a bootstrap over the pooled reads does not see: here every round
// has 1,000 reads, and ours has the better p99 in two rounds and the worse
// in the other two.
func TestPercentileIntervalsCoverTheRounds(t *testing.T) {
	side := func(p99s ...time.Duration) bench.LoadResult {
		var all bench.LoadResult
		for _, p99 := range p99s {
			rec := bench.NewLatencyRecorder()
			for i := range 1000 {
				d := time.Millisecond
				if i >= 980 {
					d = p99
				}
				rec.Record(d)
			}
			all.Merge(bench.LoadResult{Ops: 1000, Elapsed: time.Second, Latency: rec})
		}
		return all
	}
	ms := time.Millisecond
	base := side(10*ms, 10*ms, 10*ms, 10*ms)
	ours := side(8*ms, 12*ms, 8*ms, 12*ms)
	r := ratios(ours, base, 1)
	if r.P99RatioRounds.Rounds != 4 || r.P99RatioRounds.Min > 0.81 || r.P99RatioRounds.Max < 1.19 {
		t.Fatalf("p99 rounds %+v, want 4 rounds from 0.8 to 1.2", r.P99RatioRounds)
	}
	pooled := bench.QuantileRatioCI(base.Latency, ours.Latency, 0.99, 1)
	if !(r.P99RatioCI95.Low <= pooled.Low && r.P99RatioCI95.High >= pooled.High) {
		t.Errorf("p99 interval %v does not cover the pooled bootstrap %v", r.P99RatioCI95, pooled)
	}
	if rounds := r.P99RatioRounds.CI95; !(r.P99RatioCI95.Low <= rounds.Low && r.P99RatioCI95.High >= rounds.High) || rounds.High-rounds.Low <= pooled.High-pooled.Low {
		t.Errorf("p99 interval %v does not cover the rounds' t interval %v, or that is not the wider (pooled %v)", r.P99RatioCI95, rounds, pooled)
	}
}

// The victim timeline splits a round into tenths: a policy that sends the
// victim every read for the first half of a round and none after shows
// that in its tenths, and a tenth without reads shows 0.
func TestVictimTimelineSplitsTheRoundIntoTenths(t *testing.T) {
	p, err := replica.New(3, replica.Config{Policy: replica.PolicyRoundRobin})
	if err != nil {
		t.Fatal(err)
	}
	const d = 400 * time.Millisecond
	var v victimTimeline
	for range 2 { // two rounds add up
		v.record(p, d, func() bench.LoadResult {
			start := time.Now()
			for time.Since(start) < d {
				r := 1 + rand.IntN(2)
				if time.Since(start) < d/2-d/20 { // the first half, less a sampling step
					r = 0
				}
				p.Start(r)
				p.Done(r, replica.Result{Latency: time.Millisecond})
				time.Sleep(time.Millisecond)
			}
			return bench.LoadResult{}
		})
	}
	shares := v.shares()
	if len(shares) != timelineBuckets {
		t.Fatalf("%d tenths, want %d", len(shares), timelineBuckets)
	}
	for b, share := range shares {
		switch {
		case b < 4 && share < 0.9:
			t.Errorf("tenth %d: victim share %.3f, want all reads (tenths %v)", b, share, shares)
		case b >= 5 && share > 0.1:
			t.Errorf("tenth %d: victim share %.3f, want none (tenths %v)", b, share, shares)
		}
	}
	if empty := (&victimTimeline{}).shares(); slices.ContainsFunc(empty, func(s float64) bool { return s != 0 }) {
		t.Errorf("no reads: tenths %v, want all 0", empty)
	}
}
