package osread

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/replica"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

func TestParseLeadingTook(t *testing.T) {
	cases := []struct {
		head string
		want time.Duration
		ok   bool
	}{
		{`{"took":12,"timed_out":false}`, 12 * time.Millisecond, true},
		{` { "took" : 0 , "x":1}`, 0, true},
		{"{\n  \"took\" : 345,\n", 345 * time.Millisecond, true},
		{`{"took":12`, 0, false}, // cut: the number may go on
		{`{"timed_out":false,"took":12}`, 0, false},
		{`{"took":"12"}`, 0, false},
		{`{"took":-1}`, 0, false},
		{`[1,2]`, 0, false},
		{``, 0, false},
		{`{"took":9999999999999999999}`, 0, false},
	}
	for _, c := range cases {
		got, ok := parseLeadingTook([]byte(c.head))
		if got != c.want || ok != c.ok {
			t.Errorf("parseLeadingTook(%q) = %s, %v; want %s, %v", c.head, got, ok, c.want, c.ok)
		}
	}
}

func FuzzParseLeadingTook(f *testing.F) {
	for _, s := range []string{`{"took":12,"timed_out":false}`, `{"took":`, `{"took":1}`, "{\"took\"\t:\t7\n", `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		d, ok := parseLeadingTook(head)
		if !ok && d != 0 {
			t.Fatalf("not ok but %s", d)
		}
		if ok && (d < 0 || !strings.Contains(string(head), "took")) {
			t.Fatalf("ok with %s from %q", d, head)
		}
	})
}

func TestDecodeNodeSearchStats(t *testing.T) {
	body := `{"nodes":{"abc":{"indices":{"search":{"query_total":40,"query_time_in_millis":80}},"thread_pool":{"search":{"queue":3,"active":2}}}}}`
	got, err := decodeNodeSearchStats(strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	want := nodeSearchStats{Queue: 3, Active: 2, QueryTotal: 40, QueryTimeMS: 80, ok: true}
	if got != want {
		t.Fatalf("decode = %+v, want %+v", got, want)
	}
	if _, err := decodeNodeSearchStats(strings.NewReader(`{"nodes":{}}`)); err == nil || !strings.Contains(err.Error(), "got 0 nodes") {
		t.Fatalf("no node: %v, want an error naming the node count", err)
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	if err := (Config{SampleInterval: time.Millisecond}).Validate(); err == nil || !strings.Contains(err.Error(), "SampleInterval") {
		t.Fatalf("1ms SampleInterval: %v, want an error naming SampleInterval", err)
	}
	if _, err := NewTransport([]string{"127.0.0.1:9200"}, nil, Config{SampleInterval: -1}, nil, nil); err == nil || !strings.Contains(err.Error(), `"127.0.0.1:9200"`) {
		t.Fatalf("endpoint without scheme: %v, want an error quoting it", err)
	}
	if _, err := NewTransport(nil, nil, Config{}, nil, nil); err == nil {
		t.Fatal("no endpoints: want an error")
	}
}

// C3 ships with peak cost and ejection; --…-psi-rank brings back Ψ without
// them, also when the flags were bound from the defaults; another policy
// gets neither.
func TestConfigPeakCostUnlessPsiRank(t *testing.T) {
	parse := func(args ...string) Config {
		var c Config
		fs := flag.NewFlagSet("osread", flag.ContinueOnError)
		c.Flags(fs, "e-")
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return c.WithDefaults()
	}
	cases := []struct {
		name          string
		cfg           Config
		peak, ejected bool
	}{
		{"default", Config{}.WithDefaults(), true, true},
		{"flags", parse(), true, true},
		{"PsiRank", Config{PsiRank: true}.WithDefaults(), false, false},
		{"--e-psi-rank", parse("-e-psi-rank"), false, true}, // the flag's slow factor stays
		{"round-robin", Config{Policy: replica.Config{Policy: replica.PolicyRoundRobin}}.WithDefaults(), false, false},
	}
	for _, c := range cases {
		if c.cfg.Policy.PeakCost != c.peak || (c.cfg.Policy.SlowFactor > 0) != c.ejected {
			t.Errorf("%s: PeakCost %t, SlowFactor %v; want peak cost %t, ejection %t", c.name, c.cfg.Policy.PeakCost, c.cfg.Policy.SlowFactor, c.peak, c.ejected)
		}
	}
	if d := (Config{}).WithDefaults(); d.Policy.SlowFactor != DefaultSlowFactor || d.Policy.PullInterval != DefaultPullInterval || d.Policy.PingGate != DefaultPingGate {
		t.Errorf("defaults: SlowFactor %v, PullInterval %v, PingGate %v; want %v, %v, %v", d.Policy.SlowFactor, d.Policy.PullInterval, d.Policy.PingGate, DefaultSlowFactor, DefaultPullInterval, DefaultPingGate)
	}
}

// hangingEndpoint returns an http:// URL whose listener accepts
// connections and never answers, as a stopped node's does.
func hangingEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}

// The sampler pings every node and samples its stats on a loop of its own:
// a node that never answers (stopped) gets no ping counted and holds back
// neither the live node's pings nor its stats.
func TestSamplerPingsEachNodeWhileAnotherHangs(t *testing.T) {
	st := stacktest.Require(t)
	// A shared loop would wait out the hanging node's 30 s timeout
	// between two pings of the live one.
	cfg := Config{SampleInterval: 50 * time.Millisecond, PingInterval: 20 * time.Millisecond, SampleTimeout: 30 * time.Second}
	tr, err := NewTransport([]string{hangingEndpoint(t), st.OpenSearchURLs[0]}, nil, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := statsOf(tr, 1)
		if live.Pings >= 5 && live.Ping > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("live node after 10 s: %+v; want at least 5 pings while the other node hangs", live)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hung := statsOf(tr, 0); hung.Pings != 0 {
		t.Fatalf("the node that never answers has %d pings counted", hung.Pings)
	}
}

// A node C3 has ejected is pinged every EjectedPingInterval instead of
// every PingInterval: its pings are what bring it back early. The test
// ejects node 0 by silence through the policy itself (a read held on it
// while node 1 answers), so that the real node stays up and is pinged.
func TestEjectedNodeIsPingedMoreOften(t *testing.T) {
	st := stacktest.Require(t)
	for _, tc := range []struct {
		name         string
		ejectedPings time.Duration
		min, max     uint64
	}{{"pinged every 20ms", 20 * time.Millisecond, 8, 100}, {"ejected pings off", 0, 0, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{SampleInterval: -1, PingInterval: 2 * time.Second, EjectedPingInterval: tc.ejectedPings,
				Policy: replica.Config{MinSilence: 10 * time.Millisecond, EjectTime: 5 * time.Second}}
			// Two endpoints of the one test node: each is pinged on its own.
			tr, err := NewTransport([]string{st.OpenSearchURLs[0], st.OpenSearchURLs[0]}, nil, cfg, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			p := tr.Policy()
			for r := range 2 { // both nodes have stats
				p.Start(r)
				p.Done(r, replica.Result{Latency: time.Millisecond})
			}
			p.Start(0) // held: node 0 is silent from now on
			defer p.Done(0, replica.Result{Latency: time.Millisecond})
			deadline := time.Now().Add(5 * time.Second)
			for !p.Ejected(0) {
				if time.Now().After(deadline) {
					t.Fatalf("node 0 silent for 5 s while node 1 answers is not ejected: %+v", statsOf(tr, 0))
				}
				p.Start(1)
				p.Done(1, replica.Result{Latency: time.Millisecond})
				p.Done(p.Pick(), replica.Result{Latency: time.Millisecond})
				time.Sleep(5 * time.Millisecond)
			}
			before := statsOf(tr, 0).Pings
			time.Sleep(500 * time.Millisecond)
			if !p.Ejected(0) {
				t.Fatalf("node 0 back within its 5 s ejection: %+v", statsOf(tr, 0))
			}
			if n := statsOf(tr, 0).Pings - before; n < tc.min || n > tc.max {
				t.Errorf("ejected node: %d pings in 500 ms, want %d..%d", n, tc.min, tc.max)
			}
		})
	}
}

// deadEndpoint returns an http:// URL on which nothing listens.
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestTransportSkipsDownEndpointAndReportsTook(t *testing.T) {
	st := stacktest.Require(t)
	live := st.OpenSearchURLs[0]
	dead := deadEndpoint(t)
	reg := prometheus.NewRegistry()
	tr, err := NewTransport([]string{dead, live}, nil, Config{Policy: replica.Config{Policy: replica.PolicyRoundRobin}, SampleInterval: 20 * time.Millisecond, Path: "test"}, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const requests = 10
	for i := range requests {
		// The request names a host that is neither endpoint: the Transport
		// rewrites it.
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://opensearch.invalid/_search", strings.NewReader(`{"size":0,"query":{"match_all":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("search %d: %v", i, err)
		}
		var body struct {
			Took     *int `json:"took"`
			TimedOut bool `json:"timed_out"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || body.Took == nil {
			t.Fatalf("search %d: status %d, took %v, err %v", i, resp.StatusCode, body.Took, err)
		}
	}
	stats := tr.Policy().Snapshot(nil)
	if stats[0].Failures == 0 {
		t.Fatalf("down endpoint has no failures: it was never tried (stats %+v)", stats)
	}
	if stats[1].Chosen < requests || !stats[1].HasStats || stats[1].ServiceTime < 0 {
		t.Fatalf("live endpoint: %+v, want every request answered there with stats", stats[1])
	}
	for _, s := range stats {
		if s.Outstanding != 0 {
			t.Fatalf("endpoint %d has %d outstanding after every body was closed", s.Replica, s.Outstanding)
		}
	}
	// ReportTook gives the service time of a response without "took" (the
	// health response has none), through an http.Client that wraps bodies.
	one, err := NewTransport([]string{live}, nil, Config{SampleInterval: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	resp, err := (&http.Client{Transport: one, Timeout: 30 * time.Second}).Get(live + "/_cluster/health")
	if err != nil {
		t.Fatal(err)
	}
	if !one.ReportTook(resp, 7*time.Millisecond) {
		t.Fatal("ReportTook on an open Transport response returned false")
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got := statsOf(one, 0).ServiceTime; got != 7*time.Millisecond {
		t.Fatalf("service time after ReportTook(7ms) = %s, want 7ms", got)
	}
	if one.ReportTook(resp, time.Millisecond) {
		t.Fatal("ReportTook after the body was closed returned true")
	}
	if one.ReportTook(&http.Response{Body: io.NopCloser(strings.NewReader(""))}, time.Millisecond) {
		t.Fatal("ReportTook on a foreign response returned true")
	}
	// Every endpoint down: the error names both.
	down, err := NewTransport([]string{dead, deadEndpoint(t)}, nil, Config{SampleInterval: -1}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	_, err = (&http.Client{Transport: down}).Get("http://x/_search")
	if !errors.Is(err, ErrAllFailed) || !strings.Contains(err.Error(), strings.TrimPrefix(dead, "http://")) {
		t.Fatalf("every endpoint down: %v, want ErrAllFailed naming %s", err, dead)
	}
}

func statsOf(tr *Transport, r int) replica.ReplicaStats { return tr.Policy().Snapshot(nil)[r] }

func TestAdaptiveReplicaSelectionSetting(t *testing.T) {
	st := stacktest.Require(t)
	base := st.OpenSearchURLs[0]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hc := &http.Client{Timeout: 30 * time.Second}
	defer SetAdaptiveReplicaSelection(context.Background(), hc, base, true) // the default
	for _, on := range []bool{false, true} {
		if err := SetAdaptiveReplicaSelection(ctx, hc, base, on); err != nil {
			t.Fatal(err)
		}
		rep, err := GetAdaptiveReplicaSelection(ctx, hc, base)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Enabled != on {
			t.Fatalf("after setting %s=%t the cluster reports %t", ARSSetting, on, rep.Enabled)
		}
		if len(rep.Nodes) != len(st.OpenSearchURLs) {
			t.Fatalf("ARS report has %d nodes, want %d", len(rep.Nodes), len(st.OpenSearchURLs))
		}
	}
}
