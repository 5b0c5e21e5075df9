// Package osread picks, per request, the OpenSearch endpoint a
// replica.Policy ranks best when several are configured: an http.RoundTripper
// that rewrites each request's scheme and host to the chosen endpoint,
// retries an idempotent request on the next-best endpoint when one fails, and
// reports every response to the policy. It is the OpenSearch read path of S3
// (adaptive replica selection); Set/GetAdaptiveReplicaSelection turn on and
// report OpenSearch's own shard-copy ARS, which ranks shard copies inside the
// cluster the same way.
//
// Where each C3 term comes from:
//
//   - R (response time): from sending the request to closing the response
//     body, measured by the Transport.
//   - os (outstanding): counted by the policy until the body is closed.
//   - µ̄ (service time): the response's "took" (milliseconds), read from the
//     first bytes of a search response body as it streams to the caller, or
//     given by the caller with ReportTook; between replies, the background
//     sampler's Δquery_time_in_millis / Δquery_total of the node
//     (_nodes/_local/stats, shard-level query phase).
//   - q (queue length): the node's search thread pool queue
//     (_nodes/_local/stats thread_pool.search.queue), sampled in the
//     background per endpoint, as Elasticsearch's ARS uses it.
//
// C3 ranks endpoints by peak-EWMA latency × (outstanding+1) and ejects
// silent ones (replica.Config.PeakCost, SlowFactor), unless Config.PsiRank:
// then by Ψ from the terms above. The sampler also pings every node
// (HEAD /, PingInterval): an ejected node whose pings are fast again is
// back early (replica.Config.PingGate), and one whose pings stay slow is
// kept out. Without pings an ejection only ended when its timer did, and
// the timer doubles with each repeat up to MaxEjectTime (30 s): a node
// that recovered from a CPU cap, or from a GC pause, stayed out that long.
//
// Main invariant: every request the Transport starts on an endpoint is ended
// at the policy exactly once: on a transport error, on a retried 502/503/504,
// or when the caller closes the response body.
package osread

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/replica"
)

// Defaults used for zero fields of Config.
const (
	// DefaultSlowFactor and DefaultPullInterval are the Policy's
	// SlowFactor and PullInterval with C3 unless PsiRank: the Redis read
	// path's (redisread), where peak cost was tuned.
	DefaultSlowFactor   = 10
	DefaultPullInterval = 100 * time.Millisecond
	// DefaultPingGate is the Policy.PingGate with C3 unless PsiRank, as
	// redisread's: a node whose pings take over 10 × the typical node's,
	// and longer than the best node's searches, is ejected until they
	// recover.
	DefaultPingGate       = 10
	DefaultSampleInterval = time.Second
	DefaultPingInterval   = 250 * time.Millisecond
	DefaultSampleTimeout  = 2 * time.Second
	DefaultPath           = "opensearch"
)

// Config configures a Transport. Zero fields take the defaults.
type Config struct {
	// Policy chooses and tunes the endpoint selection policy.
	Policy replica.Config
	// SampleInterval is how often the background sampler reads each node's
	// search thread pool and query stats. Negative disables it.
	SampleInterval time.Duration
	// PingInterval is how often the background sampler pings each node
	// (HEAD /, timed). Negative disables the pings.
	PingInterval time.Duration
	// EjectedPingInterval, when positive and pings are on, is how often a
	// node C3 has ejected is pinged: its pings bring it back early. Zero:
	// every PingInterval, as the others (see redisread's).
	EjectedPingInterval time.Duration
	// SampleTimeout bounds one sample of one node.
	SampleTimeout time.Duration
	// Path names this read path in metrics and logs.
	Path string
	// PsiRank keeps C3 ranking by Ψ instead of by peak-EWMA latency ×
	// (outstanding+1) with silent endpoints ejected (SlowFactor). Peak
	// cost is the default since 2026-11-27: with one node at 10% of a
	// core, C3 ranked by Ψ still sent that node 7–12% of the searches and
	// served a third of what peak cost did (BENCHMARKS.md S3).
	PsiRank bool
}

// WithDefaults returns c with zero fields replaced by the defaults.
func (c Config) WithDefaults() Config {
	c.Policy.PeakCost = (c.Policy.Policy == "" || c.Policy.Policy == replica.PolicyC3) && !c.PsiRank
	if c.Policy.PeakCost {
		if c.Policy.SlowFactor == 0 {
			c.Policy.SlowFactor = DefaultSlowFactor
		}
		if c.Policy.PullInterval == 0 {
			c.Policy.PullInterval = DefaultPullInterval
		}
		if c.Policy.PingGate == 0 {
			c.Policy.PingGate = DefaultPingGate
		}
	}
	c.Policy = c.Policy.WithDefaults()
	if c.SampleInterval == 0 {
		c.SampleInterval = DefaultSampleInterval
	}
	if c.PingInterval == 0 {
		c.PingInterval = DefaultPingInterval
	}
	if c.SampleTimeout == 0 {
		c.SampleTimeout = DefaultSampleTimeout
	}
	if c.Path == "" {
		c.Path = DefaultPath
	}
	return c
}

// Validate reports every invalid field by name.
func (c Config) Validate() error {
	d := c.WithDefaults()
	return errors.Join(c.Policy.Validate(), replica.ValidateSampler("osread", d.SampleInterval, d.SampleTimeout),
		replica.ValidateSampler("osread ping", d.PingInterval, d.SampleTimeout),
		replica.ValidateEjectedPingInterval("osread", d.EjectedPingInterval))
}

// Flags binds the configuration to flags named prefix+"policy", … (e.g.
// prefix "opensearch-endpoint-").
func (c *Config) Flags(fs *flag.FlagSet, prefix string) {
	*c = c.WithDefaults()
	c.Policy.Flags(fs, prefix)
	fs.DurationVar(&c.SampleInterval, prefix+"sample-interval", c.SampleInterval, "how often to sample each node's search thread pool (negative: off)")
	fs.DurationVar(&c.PingInterval, prefix+"ping-interval", c.PingInterval, "how often to ping each node, HEAD / (negative: off)")
	fs.DurationVar(&c.EjectedPingInterval, prefix+"ejected-ping-interval", c.EjectedPingInterval, "how often to ping a node C3 has ejected, with pings on (0: every ping-interval)")
	fs.DurationVar(&c.SampleTimeout, prefix+"sample-timeout", c.SampleTimeout, "timeout of one sample of one node")
	fs.BoolVar(&c.PsiRank, prefix+"psi-rank", c.PsiRank, "C3: rank by Ψ instead of peak-EWMA latency × (outstanding+1)")
}

// Transport is an http.RoundTripper over several OpenSearch endpoints.
// Requests may carry any host: the Transport replaces scheme and host with
// the chosen endpoint's and keeps path and query. Safe for concurrent use.
type Transport struct {
	cfg       Config
	log       *slog.Logger
	base      http.RoundTripper
	endpoints []*url.URL
	names     []string
	policy    replica.Policy
	orders    sync.Pool // *[]int
	open      sync.Map  // *http.Response → *trackedBody until its body is closed

	stopSampler context.CancelFunc
	samplerDone sync.WaitGroup
	closeOnce   sync.Once
}

// NewTransport returns a Transport over endpoints (http(s)://host:port),
// sending through base (nil: a new http.Transport with header timeout), and
// starts its background sampler. reg may be nil. Close stops the sampler.
func NewTransport(endpoints []string, base http.RoundTripper, cfg Config, log *slog.Logger, reg prometheus.Registerer) (*Transport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, errors.New("osread: endpoints: need at least one")
	}
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if base == nil {
		base = &http.Transport{
			MaxIdleConnsPerHost:   64,
			ResponseHeaderTimeout: 30 * time.Second,
			IdleConnTimeout:       90 * time.Second,
		}
	}
	t := &Transport{cfg: cfg, log: log, base: base}
	for _, raw := range endpoints {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("osread: endpoints: got %q, want an http(s)://host:port URL", raw)
		}
		t.endpoints = append(t.endpoints, u)
		t.names = append(t.names, u.Host)
	}
	n := len(t.endpoints)
	t.orders.New = func() any { s := make([]int, 0, n); return &s }
	p, err := replica.New(n, cfg.Policy)
	if err != nil {
		return nil, fmt.Errorf("osread: %w", err)
	}
	t.policy = p
	if reg != nil {
		if err := reg.Register(replica.NewCollector(p, "baedal_opensearch_read", cfg.Path, t.names)); err != nil {
			return nil, fmt.Errorf("osread: register metrics of path %q: %w", cfg.Path, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.stopSampler = cancel
	if cfg.SampleInterval > 0 || cfg.PingInterval > 0 {
		client := &http.Client{Transport: t.base, Timeout: cfg.SampleTimeout}
		for r := range t.endpoints {
			t.samplerDone.Add(1)
			go t.sampleLoop(ctx, client, r)
		}
	}
	return t, nil
}

// Policy returns the policy ranking the endpoints.
func (t *Transport) Policy() replica.Policy { return t.policy }

// Endpoints returns the endpoints' host:port in policy order.
func (t *Transport) Endpoints() []string { return append([]string(nil), t.names...) }

// Close stops the background sampler.
func (t *Transport) Close() error {
	t.closeOnce.Do(func() {
		t.stopSampler()
		t.samplerDone.Wait()
	})
	return nil
}

// ErrAllFailed is returned (wrapped, with each endpoint's error) when no
// endpoint answered.
var ErrAllFailed error = allFailed{}

// allFailed is ErrAllFailed: it says the backend is unavailable
// (api.BackendUnavailable), so an API route answers it 503.
type allFailed struct{}

func (allFailed) Error() string              { return "osread: every endpoint failed" }
func (allFailed) UnavailableBackend() string { return "opensearch" }

// RoundTrip sends req to the best endpoint. On a transport error or a 502,
// 503 or 504 it retries on the next-best endpoint when the request can be
// replayed (no body, or GetBody set).
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	bufp := t.orders.Get().(*[]int)
	order := t.policy.Select((*bufp)[:0])
	*bufp = order
	defer t.orders.Put(bufp)
	var errs []error
	for i, r := range order {
		if i > 0 {
			if req.Context().Err() != nil || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
				break
			}
			t.policy.Start(r)
		}
		out := req.Clone(req.Context())
		out.URL.Scheme = t.endpoints[r].Scheme
		out.URL.Host = t.endpoints[r].Host
		out.Host = ""
		if i > 0 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				t.policy.Done(r, replica.Result{})
				errs = append(errs, fmt.Errorf("replay body: %w", err))
				break
			}
			out.Body = body
		}
		start := time.Now()
		resp, err := t.base.RoundTrip(out)
		if err != nil {
			failed := req.Context().Err() == nil
			t.policy.Done(r, replica.Result{Latency: time.Since(start), Failed: failed})
			errs = append(errs, fmt.Errorf("endpoint %s: %w", t.names[r], err))
			continue
		}
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			if i < len(order)-1 {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				t.policy.Done(r, replica.Result{Latency: time.Since(start), Failed: true})
				errs = append(errs, fmt.Errorf("endpoint %s: status %d", t.names[r], resp.StatusCode))
				continue
			}
		}
		body := &trackedBody{body: resp.Body, transport: t, resp: resp, replica: r, start: start, failed: resp.StatusCode >= 500}
		t.open.Store(resp, body)
		resp.Body = body
		return resp, nil
	}
	return nil, fmt.Errorf("%w (%s %s): %w", ErrAllFailed, req.Method, req.URL.Path, errors.Join(errs...))
}

// ReportTook gives the Transport the server's "took" of resp (a response it
// returned) before the caller closes its body, for responses whose body does
// not start with a "took" field. It works whatever wraps resp.Body (an
// http.Client with a Timeout does) and reports whether resp is open and
// came from t.
func (t *Transport) ReportTook(resp *http.Response, took time.Duration) bool {
	v, ok := t.open.Load(resp)
	if !ok {
		return false
	}
	v.(*trackedBody).reportedTook.Store(int64(took) + 1) // +1: zero means "not reported"
	return true
}

// trackedBody ends the request at the policy when closed, with the response
// time up to then and the "took" read from the body's first bytes.
type trackedBody struct {
	body      io.ReadCloser
	transport *Transport
	resp      *http.Response
	replica   int
	start     time.Time
	failed    bool

	head         [48]byte // the body's first bytes, to find "took"
	headLen      int
	reportedTook atomic.Int64
	closeOnce    sync.Once
}

func (b *trackedBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if b.headLen < len(b.head) && n > 0 {
		b.headLen += copy(b.head[b.headLen:], p[:n])
	}
	return n, err
}

func (b *trackedBody) Close() error {
	err := b.body.Close()
	b.closeOnce.Do(func() {
		res := replica.Result{Latency: time.Since(b.start), Failed: b.failed}
		if v := b.reportedTook.Load(); v > 0 {
			res.ServiceTime, res.HasServiceTime = time.Duration(v-1), true
		} else if took, ok := parseLeadingTook(b.head[:b.headLen]); ok {
			res.ServiceTime, res.HasServiceTime = took, true
		}
		b.transport.open.Delete(b.resp)
		b.transport.policy.Done(b.replica, res)
	})
	return err
}

// parseLeadingTook reads N from a body that starts with {"took":N (the form of
// every OpenSearch search response), in milliseconds.
func parseLeadingTook(head []byte) (time.Duration, bool) {
	head = bytes.TrimLeft(head, " \t\r\n")
	rest, ok := bytes.CutPrefix(head, []byte("{"))
	if !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	rest, ok = bytes.CutPrefix(rest, []byte(`"took"`))
	if !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	rest, ok = bytes.CutPrefix(rest, []byte(":"))
	if !ok {
		return 0, false
	}
	rest = bytes.TrimLeft(rest, " \t\r\n")
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	if end == 0 || end == len(rest) || end > 12 { // digits must be followed by a delimiter
		return 0, false
	}
	ms, err := strconv.ParseInt(string(rest[:end]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// sampleLoop pings endpoint r's node each PingInterval (each
// EjectedPingInterval while C3 has it ejected) and samples its stats each
// SampleInterval (each off when negative) until ctx ends. Each
// endpoint has a loop of its own, so that a node that does not answer (its
// sample waits out SampleTimeout) holds back no other node's samples.
func (t *Transport) sampleLoop(ctx context.Context, client *http.Client, r int) {
	defer t.samplerDone.Done()
	var prev nodeSearchStats
	var pingedAt, sampledAt time.Time
	due := func(last *time.Time, every time.Duration) bool {
		if every <= 0 || time.Since(*last) < every {
			return false
		}
		*last = time.Now()
		return true
	}
	tick := t.cfg.PingInterval
	if tick <= 0 || (t.cfg.SampleInterval > 0 && t.cfg.SampleInterval < tick) {
		tick = t.cfg.SampleInterval
	}
	ejectedPings := t.cfg.PingInterval > 0 && t.cfg.EjectedPingInterval > 0
	if ejectedPings {
		tick = min(tick, t.cfg.EjectedPingInterval)
	}
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		if due(&pingedAt, t.cfg.PingInterval) || ejectedPings && t.policy.Ejected(r) && due(&pingedAt, t.cfg.EjectedPingInterval) {
			t.pingNode(ctx, client, r)
		}
		if due(&sampledAt, t.cfg.SampleInterval) {
			t.sampleNode(ctx, client, r, &prev)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// pingNode times HEAD / on endpoint r (OpenSearch answers it from the node
// itself) and reports the round trip to the policy; a ping that fails or
// times out reports nothing, as silence already counts against the node.
func (t *Transport) pingNode(ctx context.Context, client *http.Client, r int) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.SampleTimeout)
	defer cancel()
	req, err := t.nodeRequest(ctx, http.MethodHead, r, "/")
	if err != nil {
		return
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.policy.ObservePing(r, time.Since(start))
	}
}

// nodeRequest is a request for path on endpoint r's node itself.
func (t *Transport) nodeRequest(ctx context.Context, method string, r int, path string) (*http.Request, error) {
	u := t.endpoints[r]
	return http.NewRequestWithContext(ctx, method, u.Scheme+"://"+u.Host+path, nil)
}

// nodeSearchStats is the part of _nodes/_local/stats the sampler reads.
type nodeSearchStats struct {
	Queue       float64
	Active      float64
	QueryTotal  uint64
	QueryTimeMS uint64
	ok          bool
}

// sampleStatsPath asks a node for its own search pool and query counters.
const sampleStatsPath = "/_nodes/_local/stats/thread_pool,indices?filter_path=nodes.*.thread_pool.search.queue,nodes.*.thread_pool.search.active,nodes.*.indices.search.query_total,nodes.*.indices.search.query_time_in_millis"

func (t *Transport) sampleNode(ctx context.Context, client *http.Client, r int, prev *nodeSearchStats) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.SampleTimeout)
	defer cancel()
	req, err := t.nodeRequest(ctx, http.MethodGet, r, sampleStatsPath)
	if err != nil {
		return
	}
	resp, err := client.Do(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return
	}
	cur, err := decodeNodeSearchStats(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.log.Debug("opensearch node sample unreadable", "endpoint", t.names[r], "error", err)
		return
	}
	defer func() { *prev = cur }()
	var service time.Duration
	if prev.ok && cur.QueryTotal > prev.QueryTotal && cur.QueryTimeMS >= prev.QueryTimeMS {
		service = time.Duration(float64(cur.QueryTimeMS-prev.QueryTimeMS) / float64(cur.QueryTotal-prev.QueryTotal) * float64(time.Millisecond))
	} else {
		// No query ran since the last sample: keep the service time the
		// policy has (from "took" or an earlier sample), update the queue.
		snap := t.policy.Snapshot(nil)
		if snap[r].ServiceTime == 0 {
			return
		}
		service = snap[r].ServiceTime
	}
	t.policy.ObserveServer(r, service, cur.Queue)
}

// decodeNodeSearchStats reads the filtered _nodes/_local/stats response.
func decodeNodeSearchStats(r io.Reader) (nodeSearchStats, error) {
	var body struct {
		Nodes map[string]struct {
			ThreadPool struct {
				Search struct {
					Queue  float64 `json:"queue"`
					Active float64 `json:"active"`
				} `json:"search"`
			} `json:"thread_pool"`
			Indices struct {
				Search struct {
					QueryTotal  uint64 `json:"query_total"`
					QueryTimeMS uint64 `json:"query_time_in_millis"`
				} `json:"search"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(r).Decode(&body); err != nil {
		return nodeSearchStats{}, fmt.Errorf("decode node stats: %w", err)
	}
	if len(body.Nodes) != 1 {
		return nodeSearchStats{}, fmt.Errorf("decode node stats: got %d nodes, want 1 (_local)", len(body.Nodes))
	}
	for _, n := range body.Nodes {
		return nodeSearchStats{
			Queue:       n.ThreadPool.Search.Queue,
			Active:      n.ThreadPool.Search.Active,
			QueryTotal:  n.Indices.Search.QueryTotal,
			QueryTimeMS: n.Indices.Search.QueryTimeMS,
			ok:          true,
		}, nil
	}
	panic("unreachable")
}
