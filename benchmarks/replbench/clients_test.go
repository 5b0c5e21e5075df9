package replbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/localstack"
	"github.com/baedal/baedal/replica"
)

// testParentEnv makes the test binary act as a benchmark that starts two
// client processes, prints their PIDs and waits to be killed.
const testParentEnv = "BAEDAL_REPLBENCH_TEST_PARENT"

// TestMain lets the test binary be the client processes' binary too, as
// the baedal binary is (cmd/baedal's main).
func TestMain(m *testing.M) {
	switch {
	case IsClientProcess():
		if err := ServeClientProcess(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case os.Getenv(testParentEnv) == "1":
		os.Unsetenv(testParentEnv)
		procs, err := startClientProcs(2, os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(strings.Trim(fmt.Sprint(procs.pids()), "[]"))
		time.Sleep(time.Hour) // until the test kills this process
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// processGone says whether pid has exited and been reaped or is a zombie.
func processGone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses: "pid (comm) S ...".
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	return len(rest) > 1 && rest[1] == 'Z'
}

// A benchmark killed mid-run (SIGKILL: no deferred stop runs) leaves no
// client process behind: the kernel kills them with it.
func TestClientProcessesDieWithTheirParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(exe)
	parent.Env = append(os.Environ(), testParentEnv+"=1")
	parent.Stderr = os.Stderr
	stdout, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer parent.Process.Kill()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the parent printed no PIDs: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(line) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("PID %q: %v", f, err)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 || pids[0] == pids[1] {
		t.Fatalf("client processes %v, want 2 distinct", pids)
	}
	for _, pid := range pids {
		if processGone(pid) {
			t.Fatalf("client process %d is not running while its parent runs", pid)
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent.Process.Pid) {
			t.Fatalf("client process %d has parent %v, want %d", pid, fields, parent.Process.Pid)
		}
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for !processGone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("client process %d still runs 10 s after its parent was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// replicaStackForTest returns a running stack with 3 Redis replicas: the
// one in BAEDAL_TEST_STATE_DIR if it has them, else a dedicated one that
// the test stops.
func replicaStackForTest(t *testing.T, ctx context.Context) *localstack.State {
	t.Helper()
	if dir := os.Getenv("BAEDAL_TEST_STATE_DIR"); dir != "" {
		if st, err := localstack.Load(dir); err == nil && len(st.RedisReplicaAddrs) >= 3 {
			return st
		}
	}
	var log bytes.Buffer
	st, stop, err := openStack(ctx, Config{}.WithDefaults(), 1, &log)
	if err != nil {
		testenv.Unavailable(t, fmt.Errorf("%w\n%s", err, log.String()))
	}
	t.Cleanup(stop)
	return st
}

// N client processes each keep a selector of their own: after a round,
// each one's selector counted exactly the reads that process made, not
// the others', and the merged round is the sum of the processes'. Stopped,
// they leave no process behind.
func TestClientProcessesShareNoSelectorState(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st := replicaStackForTest(t, ctx)
	cfg := Config{Users: 100, EntriesPerUser: 50, Clients: 6, ClientProcesses: 3, NoAblations: true,
		Policies: []replica.PolicyName{replica.PolicyC3, replica.PolicyRoundRobin}}.WithDefaults()
	prefix := "tl:clients-test:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	var log bytes.Buffer
	if err := loadTimelines(ctx, st, prefix, cfg, &log); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	rcfg := backend.Defaults().Redis
	rcfg.Addr, rcfg.ReplicaAddrs, rcfg.PoolSize = st.RedisAddr, st.RedisReplicaAddrs[:3], 8
	procs, err := startClientProcs(cfg.ClientProcesses, &lockedWriter{w: &log})
	if err != nil {
		t.Fatal(err)
	}
	pids := procs.pids()
	defer func() {
		if procs.procs != nil {
			procs.stop()
		}
	}()
	if err := procs.open(hostSetup{Config: cfg, Redis: rcfg, Prefix: prefix, Scenario: scenarioHealthy}); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	const d = 400 * time.Millisecond
	req := roundRequest{Side: 0, Round: 0, Duration: d, Start: time.Now().Add(startSkew)}
	resps, err := procs.call([]hostRequest{{Round: &req}, {Round: &req}, {Round: &req}}, time.Minute)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	status, err := procs.call([]hostRequest{{Status: true}, {Status: true}, {Status: true}}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{os.Getpid(): true}
	var total int64
	for i, resp := range resps {
		r := resp.Round
		if seen[resp.PID] || resp.PID != pids[i] {
			t.Errorf("process %d answered from pid %d (pids %v, this test %d): want its own process", i, resp.PID, pids, os.Getpid())
		}
		seen[resp.PID] = true
		if r.Ops == 0 || r.Errors != 0 {
			t.Fatalf("process %d: %d reads, %d errors; want reads and no error\n%s", i, r.Ops, r.Errors, log.String())
		}
		total += r.Ops
		var chosen uint64
		for _, per := range r.Chosen {
			for _, n := range per {
				chosen += n
			}
		}
		var selector uint64
		for _, n := range status[i].Status[0].Chosen {
			selector += n
		}
		if chosen != uint64(r.Ops) || selector != uint64(r.Ops) {
			t.Errorf("process %d made %d reads; its selector counted %d in the round's samples and %d in all: want its own reads only", i, r.Ops, chosen, selector)
		}
		if other := status[i].Status[1].Chosen; other[0]+other[1]+other[2] != 0 {
			t.Errorf("process %d: the round-robin side, which did not run, counted reads %v", i, other)
		}
	}
	merged, _, _, err := procs.round(0, 1, d)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Ops == 0 || merged.Latency.Count() != merged.Ops || merged.Elapsed < d {
		t.Errorf("merged round: %d reads, %d latencies, %s; want the processes' reads, one latency each, at least %s", merged.Ops, merged.Latency.Count(), merged.Elapsed, d)
	}
	sum, err := procs.status()
	if err != nil {
		t.Fatal(err)
	}
	var all uint64
	for _, n := range sum[0].Chosen {
		all += n
	}
	if all != uint64(total+merged.Ops) {
		t.Errorf("selectors counted %d reads over both rounds, the processes made %d + %d", all, total, merged.Ops)
	}
	if err := procs.stop(); err != nil {
		t.Fatalf("stop: %v\n%s", err, log.String())
	}
	for _, pid := range pids {
		if !processGone(pid) {
			t.Errorf("client process %d still runs after stop", pid)
		}
	}
}

// Herding: reads all on one replica, then all on another, are windows at
// a top share of 1 with one herd move between them; reads spread evenly
// are windows at a third with none over half.
func TestHerdingFollowsTheMostLoadedReplica(t *testing.T) {
	const step, d = 50 * time.Millisecond, time.Second
	var herd, spread herding
	var chosen, even [][]uint64
	for i := range 20 {
		if i < 10 {
			chosen = append(chosen, []uint64{30, 0, 0})
		} else {
			chosen = append(chosen, []uint64{0, 0, 30})
		}
		even = append(even, []uint64{10, 10, 10})
	}
	herd.add(chosen, step, d)
	spread.add(even, step, d)
	h, s := herd.summary(), spread.summary()
	if h.Windows != 10 || h.WindowMs != 100 || h.TopShareMean != 1 || h.OverHalf != 1 || h.TopMovesPerS != 1 || h.HerdMovesPerS != 1 {
		t.Errorf("herd: %+v, want 10 windows of 100 ms at a top share of 1 and one move in 1 s", h)
	}
	if s.TopShareMax > 0.34 || s.OverHalf != 0 || s.HerdMovesPerS != 0 {
		t.Errorf("even spread: %+v, want top shares of a third and no herd", s)
	}
	if (&herding{}).summary() != nil {
		t.Error("no reads: want no herding figures")
	}
}

// Peer dominance is over 1 exactly when a peer beats C3 on both
// throughput and p99, and the target judges the worst peer.
func TestPeerDominanceJudgesThePeerBetterOnBoth(t *testing.T) {
	side := func(opsPerRound int64, p99 time.Duration) bench.LoadResult {
		var all bench.LoadResult
		for range 4 {
			rec := bench.NewLatencyRecorder()
			for i := range 2000 {
				d := time.Millisecond + time.Duration(i%7)*10*time.Microsecond
				if i%100 >= 98 {
					d = p99
				}
				rec.Record(d)
			}
			all.Merge(bench.LoadResult{Ops: opsPerRound, Elapsed: time.Second, Latency: rec})
		}
		return all
	}
	ms := time.Millisecond
	ours := side(1000, 10*ms)
	_, faster, _ := peerDominance(ours, map[string]bench.LoadResult{"faster-only": side(1300, 20*ms), "lower-p99-only": side(700, 5*ms)}, 1)
	if faster > 1 {
		t.Errorf("peers each better on one figure only: dominance %v, want at most 1", faster)
	}
	peers, worst, ci := peerDominance(ours, map[string]bench.LoadResult{"both": side(1300, 5*ms), "neither": side(900, 20*ms)}, 1)
	if got := peers["both"].Dominance; worst != got || got < 1.2 || !ci.Known() || ci.Low <= 1 {
		t.Errorf("a peer with 1.3x the reads and half the p99: dominance %v (worst %v, %v), want about 1.3 with an interval over 1", got, worst, ci)
	}
	verdict := bench.AtMost(1.0).Evaluate(worst, ci)
	if verdict.Verdict != bench.VerdictMissed {
		t.Errorf("verdict %+v, want missed", verdict)
	}
}

// Only the judged set-up has targets, nine of them; another set-up keeps
// its figures with none.
func TestTargetsOnlyInTheJudgedSetup(t *testing.T) {
	judged := Summary{IsolatedServers: true, ReplicaCPUPercent: 30, ClientProcesses: 3}
	got := targets(judged)
	want := []string{"degraded.vs_best_peer.p999_ratio", "degraded.vs_best_peer.p99_ratio", "degraded.vs_best_peer.throughput_ratio",
		"healthy.peer_dominance", "healthy.vs_best_peer.throughput_ratio", "stalled.peer_dominance", "stalled.vs_best_peer.throughput_ratio",
		"recovering.peer_dominance", "recovering.vs_best_peer.throughput_ratio"}
	if len(got) != len(want) {
		t.Errorf("judged set-up: targets %v, want %v", got, want)
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("judged set-up: no target %s", name)
		}
	}
	if got["degraded.vs_best_peer.throughput_ratio"].Target != 0.95 || got["degraded.vs_best_peer.p999_ratio"].Target != 0.5 {
		t.Errorf("degraded targets %+v", got)
	}
	for _, s := range []Summary{{ReplicaCPUPercent: 30, ClientProcesses: 3}, {IsolatedServers: true, ClientProcesses: 3},
		{IsolatedServers: true, ReplicaCPUPercent: 30, ClientProcesses: 1}, {IsolatedServers: true, ReplicaCPUPercent: 30, ClientProcesses: 3, RedisSkipped: "skipped"}} {
		if got := targets(s); len(got) != 0 {
			t.Errorf("set-up %+v: targets %v, want none", s, got)
		}
	}
	if err := (Config{Clients: 2, ClientProcesses: 3}).Validate(); err == nil || !strings.Contains(err.Error(), "client-processes: got 3") {
		t.Errorf("3 processes for 2 clients: %v, want an error naming client-processes", err)
	}
}
