package replbench

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/replica"
	"github.com/baedal/baedal/replica/redisread"
)

// Client processes. In a deployment many application servers read from
// the same replicas, each with a selector of its own that sees only its
// own reads: the herd that C3 was designed against. The Redis part runs
// its closed loop in Config.ClientProcesses child processes of the
// benchmark's own binary, each with Clients/ClientProcesses of the
// clients and, for every contender, a redisread.ReadClient of its own
// (selector, connections, statistics). The parent coordinates: it opens a
// scenario in every process, starts each side's round in all of them at
// the same instant, applies the scenario's condition to the servers, and
// merges the processes' latency histograms and per-replica read counts.
// A child reads gob requests on stdin and answers on stdout; it exits when
// stdin ends, and the kernel kills it when the parent dies (Pdeathsig).

// clientProcessEnv marks a process started as a client process.
const clientProcessEnv = "BAEDAL_REPLBENCH_CLIENT_PROCESS"

// IsClientProcess says whether this process was started by Run as one of
// its client processes. Its main must then call ServeClientProcess and
// exit: the binary that runs the benchmark (baedal, or a test binary in
// its TestMain) is also the client processes' binary.
func IsClientProcess() bool { return os.Getenv(clientProcessEnv) == "1" }

// hostSetup opens one scenario in one client process.
type hostSetup struct {
	// Config is the run's configuration; contenders(Config, false) and
	// their readConfig give the same sides, in the same order, as in the
	// parent. (gob leaves out Config.Tuning.Now, a func.)
	Config   Config
	Redis    backend.RedisConfig
	Prefix   string
	Scenario string
	// Process is this process's index; Clients its closed-loop clients.
	Process, Clients int
}

// roundRequest runs side Side's round Round for Duration from Start.
type roundRequest struct {
	Side, Round int
	Duration    time.Duration
	Start       time.Time
}

// hostRequest is one request to a client process; exactly one field is set.
type hostRequest struct {
	Open   *hostSetup
	Round  *roundRequest
	Status bool
}

// hostResponse answers a hostRequest; Err is set when it failed.
type hostResponse struct {
	PID    int
	Err    string
	Round  *roundResult
	Status []sideStatus
}

// roundResult is what one process measured in one side's round.
type roundResult struct {
	Ops, Errors int64
	Elapsed     time.Duration
	Latency     bench.LatencyCounts
	// Chosen[i][r] counts the reads started on replica r in the i-th step
	// of the round (Step long, from the round's start).
	Chosen [][]uint64
	Step   time.Duration
}

// sideStatus is one contender's selector state in one process at the end
// of a scenario: reads started on each replica, ejections, hedges.
type sideStatus struct {
	Chosen    []uint64
	Ejections []Ejections
	Hedges    *replica.HedgeStats
}

// clientHost is one process's read clients for one scenario: one
// redisread.ReadClient per contender.
type clientHost struct {
	setup   hostSetup
	readers []*redisread.ReadClient
}

func openHost(s hostSetup) (*clientHost, error) {
	h := &clientHost{setup: s}
	for _, k := range contenders(s.Config, false) {
		c, err := redisread.Open(s.Redis, k.readConfig(s.Config, s.Scenario), nil, nil)
		if err != nil {
			h.close()
			return nil, fmt.Errorf("open the %s client: %w", k.name, err)
		}
		h.readers = append(h.readers, c)
	}
	return h, nil
}

func (h *clientHost) close() {
	for _, c := range h.readers {
		c.Close()
	}
	h.readers = nil
}

func (h *clientHost) runRound(ctx context.Context, req roundRequest) (roundResult, error) {
	if req.Side < 0 || req.Side >= len(h.readers) {
		return roundResult{}, fmt.Errorf("side %d: this scenario has %d sides", req.Side, len(h.readers))
	}
	time.Sleep(time.Until(req.Start))
	c := h.readers[req.Side]
	step := sampleStep(req.Duration)
	var load bench.LoadResult
	chosen := sampleChosen(c.Policy(), step, func() {
		load = bench.RunClosedLoop(ctx, h.setup.Clients, req.Duration, timelineReader(c, h.setup, req.Round))
	})
	return roundResult{Ops: load.Ops, Errors: load.Errors, Elapsed: load.Elapsed, Latency: load.Latency.Counts(), Chosen: chosen, Step: step}, nil
}

func (h *clientHost) status() []sideStatus {
	out := make([]sideStatus, len(h.readers))
	for i, c := range h.readers {
		st := c.Status()
		var stats []replica.ReplicaStats
		for _, r := range st.Replicas {
			out[i].Chosen = append(out[i].Chosen, r.Chosen)
			stats = append(stats, r.ReplicaStats)
		}
		out[i].Ejections, out[i].Hedges = ejectionsOf(stats), st.Hedges
	}
	return out
}

// ServeClientProcess is a client process's main loop: it answers the
// parent's requests from in on out until in ends, and closes its clients.
func ServeClientProcess(in io.Reader, out io.Writer) error {
	dec, enc := gob.NewDecoder(in), gob.NewEncoder(out)
	var host *clientHost
	defer func() {
		if host != nil {
			host.close()
		}
	}()
	for {
		var req hostRequest
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("replbench client process %d: read a request: %w", os.Getpid(), err)
		}
		resp := hostResponse{PID: os.Getpid()}
		var err error
		switch {
		case req.Open != nil:
			if host != nil {
				host.close()
				host = nil
			}
			host, err = openHost(*req.Open)
		case host == nil:
			err = errors.New("no scenario open")
		case req.Round != nil:
			var r roundResult
			r, err = host.runRound(context.Background(), *req.Round)
			resp.Round = &r
		case req.Status:
			resp.Status = host.status()
		}
		if err != nil {
			resp.Err = err.Error()
		}
		if err := enc.Encode(resp); err != nil {
			return fmt.Errorf("replbench client process %d: answer: %w", os.Getpid(), err)
		}
	}
}

// clientProc is a running client process, seen from the parent.
type clientProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	enc   *gob.Encoder
	dec   *gob.Decoder
	// broken is set once a call failed; the process is then killed and
	// takes no more requests.
	broken error
}

// clientProcs are the benchmark's client processes.
type clientProcs struct {
	procs []*clientProc
}

// startClientProcs starts n client processes of this binary; their
// stderr goes to stderr. They inherit this process's cgroups (the clients'
// CPUs with IsolateServers).
func startClientProcs(n int, stderr io.Writer) (*clientProcs, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("replbench: client processes: find this binary: %w", err)
	}
	ps := &clientProcs{}
	for range n {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), clientProcessEnv+"=1")
		cmd.Stderr = stderr
		dieWithParent(cmd)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, errors.Join(err, ps.stop())
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, errors.Join(err, ps.stop())
		}
		if err := cmd.Start(); err != nil {
			return nil, errors.Join(fmt.Errorf("replbench: start client process %s: %w", exe, err), ps.stop())
		}
		ps.procs = append(ps.procs, &clientProc{cmd: cmd, stdin: stdin, enc: gob.NewEncoder(stdin), dec: gob.NewDecoder(stdout)})
	}
	return ps, nil
}

// pids returns the processes' PIDs.
func (ps *clientProcs) pids() []int {
	var out []int
	for _, p := range ps.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}

// call sends reqs[i] to process i, all at once, and returns the answers.
// A process that does not answer within timeout is killed.
func (ps *clientProcs) call(reqs []hostRequest, timeout time.Duration) ([]hostResponse, error) {
	resps := make([]hostResponse, len(ps.procs))
	errs := make([]error, len(ps.procs))
	var wg sync.WaitGroup
	for i, p := range ps.procs {
		wg.Go(func() { resps[i], errs[i] = p.call(reqs[i], timeout) })
	}
	wg.Wait()
	for i, r := range resps {
		if errs[i] == nil && r.Err != "" {
			errs[i] = fmt.Errorf("replbench: client process %d (pid %d): %s", i, r.PID, r.Err)
		}
	}
	return resps, errors.Join(errs...)
}

func (p *clientProc) call(req hostRequest, timeout time.Duration) (hostResponse, error) {
	if p.broken != nil {
		return hostResponse{}, p.broken
	}
	type answer struct {
		resp hostResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		var a answer
		if a.err = p.enc.Encode(req); a.err == nil {
			a.err = p.dec.Decode(&a.resp)
		}
		done <- a
	}()
	select {
	case a := <-done:
		if a.err != nil {
			p.broken = fmt.Errorf("replbench: client process pid %d: %w", p.cmd.Process.Pid, a.err)
			p.cmd.Process.Kill()
		}
		return a.resp, p.broken
	case <-time.After(timeout):
		p.broken = fmt.Errorf("replbench: client process pid %d did not answer within %s; killed it", p.cmd.Process.Pid, timeout)
		p.cmd.Process.Kill()
		return hostResponse{}, p.broken
	}
}

// stop closes every process's stdin, which ends it, and waits for it; a
// process still running after 10 s is killed.
func (ps *clientProcs) stop() error {
	var errs []error
	for _, p := range ps.procs {
		p.stdin.Close()
		waited := make(chan error, 1)
		go func() { waited <- p.cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil && p.broken == nil {
				errs = append(errs, fmt.Errorf("replbench: client process pid %d: %w", p.cmd.Process.Pid, err))
			}
		case <-time.After(10 * time.Second):
			p.cmd.Process.Kill()
			<-waited
			errs = append(errs, fmt.Errorf("replbench: client process pid %d did not end within 10s of its stdin closing; killed it", p.cmd.Process.Pid))
		}
	}
	ps.procs = nil
	return errors.Join(errs...)
}

// clientsOf returns how many of total clients process p of n runs.
func clientsOf(p, n, total int) int {
	c := total / n
	if p < total%n {
		c++
	}
	return c
}

// open opens scenario in every process, the clients split between them.
func (ps *clientProcs) open(base hostSetup) error {
	reqs := make([]hostRequest, len(ps.procs))
	for i := range reqs {
		s := base
		s.Process, s.Clients = i, clientsOf(i, len(ps.procs), base.Config.Clients)
		reqs[i] = hostRequest{Open: &s}
	}
	_, err := ps.call(reqs, time.Minute)
	return err
}

// startSkew is how far ahead of the requests a round's common start is
// set, so that every process has its request before it.
const startSkew = 50 * time.Millisecond

// round runs side's round in every process from the same instant and
// merges what they measured: operations and latencies summed, the round's
// time the longest process's, reads per replica and step summed.
func (ps *clientProcs) round(side, round int, d time.Duration) (bench.LoadResult, [][]uint64, time.Duration, error) {
	req := roundRequest{Side: side, Round: round, Duration: d, Start: time.Now().Add(startSkew)}
	reqs := make([]hostRequest, len(ps.procs))
	for i := range reqs {
		reqs[i] = hostRequest{Round: &req}
	}
	resps, err := ps.call(reqs, d+2*time.Minute)
	if err != nil {
		return bench.LoadResult{}, nil, 0, err
	}
	load := bench.LoadResult{Latency: bench.NewLatencyRecorder()}
	var chosen [][]uint64
	for _, resp := range resps {
		r := resp.Round
		load.Ops += r.Ops
		load.Errors += r.Errors
		load.Elapsed = max(load.Elapsed, r.Elapsed)
		load.Latency.AddCounts(r.Latency)
		chosen = addChosen(chosen, r.Chosen)
	}
	return load, chosen, sampleStep(d), nil
}

// status returns every side's selector state summed over the processes.
func (ps *clientProcs) status() ([]sideStatus, error) {
	reqs := make([]hostRequest, len(ps.procs))
	for i := range reqs {
		reqs[i] = hostRequest{Status: true}
	}
	resps, err := ps.call(reqs, time.Minute)
	if err != nil {
		return nil, err
	}
	var sum []sideStatus
	for _, resp := range resps {
		if sum == nil {
			sum = make([]sideStatus, len(resp.Status))
		}
		for i, s := range resp.Status {
			sum[i].add(s)
		}
	}
	return sum, nil
}

// add sums o into s, replica by replica.
func (s *sideStatus) add(o sideStatus) {
	for len(s.Chosen) < len(o.Chosen) {
		s.Chosen = append(s.Chosen, 0)
	}
	for r, n := range o.Chosen {
		s.Chosen[r] += n
	}
	if len(o.Ejections) > 0 {
		for len(s.Ejections) < len(o.Ejections) {
			s.Ejections = append(s.Ejections, Ejections{})
		}
		for r, e := range o.Ejections {
			t := &s.Ejections[r]
			t.Slow, t.Silent, t.Ping, t.PingExtensions = t.Slow+e.Slow, t.Silent+e.Silent, t.Ping+e.Ping, t.PingExtensions+e.PingExtensions
		}
	}
	if o.Hedges != nil {
		if s.Hedges == nil {
			s.Hedges = &replica.HedgeStats{}
		}
		s.Hedges.Reads += o.Hedges.Reads
		s.Hedges.Hedges += o.Hedges.Hedges
		s.Hedges.HedgeWins += o.Hedges.HedgeWins
		s.Hedges.Cancelled += o.Hedges.Cancelled
	}
}

// shares returns the fraction of reads started on each replica.
func (s sideStatus) shares() []float64 {
	var total uint64
	for _, n := range s.Chosen {
		total += n
	}
	out := make([]float64, len(s.Chosen))
	for r, n := range s.Chosen {
		if total > 0 {
			out[r] = float64(n) / float64(total)
		}
	}
	return out
}

// sampleStep is how often a round samples its policy's reads per replica:
// a twentieth of the round, at most 50 ms (two steps per herding window).
func sampleStep(d time.Duration) time.Duration {
	return max(min(d/20, 50*time.Millisecond), time.Millisecond)
}

// sampleChosen runs run while it counts, every step, the reads p started
// on each replica since the previous count; entry i of the result is the
// step from i×step to (i+1)×step after the start (by the clock, so a late
// tick adds to the step it lands in, not the next index).
func sampleChosen(p replica.Policy, step time.Duration, run func()) [][]uint64 {
	start := time.Now()
	prev := chosenPerReplica(p)
	var out [][]uint64
	sample := func() {
		now := chosenPerReplica(p)
		i := int(time.Since(start) / step)
		for len(out) <= i {
			out = append(out, make([]uint64, len(now)))
		}
		for r := range now {
			out[i][r] += now[r] - prev[r]
		}
		prev = now
	}
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		ticker := time.NewTicker(step)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				sample()
			}
		}
	}()
	run()
	close(done)
	<-sampled
	sample()
	return out
}

// chosenPerReplica returns the requests p started on each replica.
func chosenPerReplica(p replica.Policy) []uint64 {
	stats := p.Snapshot(nil)
	out := make([]uint64, len(stats))
	for _, s := range stats {
		if s.Replica >= 0 && s.Replica < len(out) {
			out[s.Replica] = s.Chosen
		}
	}
	return out
}

// addChosen adds b into a step by step and replica by replica.
func addChosen(a, b [][]uint64) [][]uint64 {
	for i, per := range b {
		for len(a) <= i {
			a = append(a, nil)
		}
		for len(a[i]) < len(per) {
			a[i] = append(a[i], 0)
		}
		for r, n := range per {
			a[i][r] += n
		}
	}
	return a
}

// timelineReader returns the closed-loop operation of one process's
// clients, one feed read as the feed service does it (hybrid fan-out): one
// pipeline with the newest 20–50 entries of a random user's home timeline
// (ZREVRANGE) and the newest 20 posts of two followed celebrities
// (ZREVRANGEBYSCORE … LIMIT 0 20). Each client's random stream is seeded
// by the run's seed, the round, the process and the client.
func timelineReader(c *redisread.ReadClient, s hostSetup, round int) func(ctx context.Context, client int) error {
	cfg := s.Config
	rngs := make([]*rand.Rand, s.Clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(cfg.Seed+uint64(round), uint64(s.Process)<<32|uint64(i)))
	}
	celebs := min(celebrities, cfg.Users)
	return func(ctx context.Context, client int) error {
		rng := rngs[client]
		home := s.Prefix + strconv.Itoa(rng.IntN(cfg.Users))
		limit := 20 + rng.IntN(31)
		pulled := [2]string{s.Prefix + strconv.Itoa(rng.IntN(celebs)), s.Prefix + strconv.Itoa(rng.IntN(celebs))}
		_, err := redisread.Read(ctx, c, func(ctx context.Context, rdb *redis.Client) (struct{}, error) {
			return struct{}{}, readFeed(ctx, rdb, home, limit, pulled)
		})
		return err
	}
}
