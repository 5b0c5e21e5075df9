package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/testenv"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

// TestNodeLoss runs the whole server on a 3-node OpenSearch cluster of its
// own (default settings: replicas auto-expand to 1), with searches on every
// layout at a steady rate and change events flowing, and SIGKILLs one data
// node, then, once the cluster is green again, the elected cluster manager.
// During each outage every search must answer 200 (replicas serve) or 503
// with Retry-After, never anything else; after the node is started again
// the cluster must return to green, every accepted event must be in every
// layout (0 lost, 0 dead-lettered), and the layouts must answer the same.
//
// One cluster serves both cases and the catalog is small: this test is in
// the CI budget. It fails in CI when the cluster cannot start and is skipped
// locally.
func TestNodeLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster (about 3 minutes)")
	}
	st := startCluster(t)
	ctx := context.Background()

	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.API.AdminToken = "node-loss-test-admin-token"
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.RetryBase, cfg.Indexer.RetryMax = 50*time.Millisecond, time.Second
	addr := serve(t, cfg)
	kinds := cfg.Indexer.Layouts
	waitReady(t, addr, kinds, 1)

	client, err := backend.OpenOpenSearch(backend.OpenSearchConfig{URLs: st.OpenSearchURLs, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	osc := osapi.New(client)

	// The catalog, then a steady flow of changes; the reference is every
	// accepted event applied in order.
	const numShops = 60
	load := &eventLoad{t: t, addr: addr, ref: map[int64]*catalog.ShopState{}}
	var initial []catalog.Event
	for _, s := range catalog.NewGenerator(23).Shops(numShops) {
		initial = append(initial, s.UpsertEvent())
	}
	load.post(initial)
	waitIndexed(t, osc, cfg, load.reference(), 90*time.Second)

	stream := catalog.NewEventStream(23, numShops)
	searches := &searchLoad{addr: addr, counts: map[string]map[string]map[int]int{}}
	searches.phase.Store("before")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // ~20 events/s
		for tick := time.NewTicker(200 * time.Millisecond); ; {
			select {
			case <-stop:
				tick.Stop()
				return
			case <-tick.C:
				load.post([]catalog.Event{stream.Next(), stream.Next(), stream.Next(), stream.Next()})
			}
		}
	})
	wg.Go(func() { searches.run(stop, 60*time.Millisecond) }) // ~16 searches/s
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	time.Sleep(2 * time.Second)

	for _, master := range []bool{false, true} {
		name := "data node"
		if master {
			name = "cluster manager"
		}
		victim := pickVictim(t, ctx, osc, master)
		searches.phase.Store("outage: " + name)
		if err := st.Kill(victim); err != nil {
			t.Fatal(err)
		}
		t.Logf("SIGKILLed %s (%s)", victim, name)
		time.Sleep(8 * time.Second)

		searches.phase.Store("restart: " + name)
		restarted := time.Now()
		if err := st.RestartOpenSearchNode(ctx, victim); err != nil {
			t.Fatalf("restart %s: %v", victim, err)
		}
		joined := time.Since(restarted)
		waitGreen(t, osc, 120*time.Second)
		t.Logf("%s: %s rejoined %.1f s after its restart, cluster green after %.1f s", name, victim, joined.Seconds(), time.Since(restarted).Seconds())
		searches.phase.Store("after: " + name)
		time.Sleep(2 * time.Second)
	}
	stopLoad()

	// Searches: 200 or 503 with Retry-After only, and replicas served most.
	searches.mu.Lock()
	phases := slices.Sorted(maps.Keys(searches.counts))
	for _, phase := range phases {
		t.Logf("searches %-26s %v", phase+":", searches.counts[phase])
		for label, codes := range searches.counts[phase] {
			ok, total := codes[200], 0
			for _, n := range codes {
				total += n
			}
			if strings.HasPrefix(phase, "outage") && (total < 5 || ok == 0) {
				t.Errorf("%s, %s: %d searches, %d answered 200; want steady searches, served by the replicas", phase, label, total, ok)
			}
		}
	}
	if len(searches.bad) > 0 {
		t.Errorf("%d searches answered neither 200 nor 503 with Retry-After; first: %s", searches.badCount, strings.Join(searches.bad, "\n"))
	}
	searches.mu.Unlock()

	// Events: none lost, none dead-lettered, the layouts equal.
	if load.failures.Load() > 0 {
		t.Errorf("%d event posts were not accepted (Redis is up: all must be)", load.failures.Load())
	}
	ref := load.reference()
	waitIndexed(t, osc, cfg, ref, 120*time.Second)
	t.Logf("events accepted: %d, over %d shops; all in every layout", load.accepted.Load(), len(ref))
	checkNoDeadLetters(t, addr, cfg.API.AdminToken)
	for _, alias := range append(cfg.Indexer.Layout.Aliases(layout.Nested), cfg.Indexer.Layout.Aliases(layout.Split)...) {
		if err := osc.Do(ctx, http.MethodPost, "/"+alias+"/_refresh", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	checkLayoutsAnswerAlike(t, addr, kinds)
}

// waitGreen waits until the cluster is green with no shard relocating.
func waitGreen(t *testing.T, osc *osapi.Client, timeout time.Duration) {
	t.Helper()
	var health struct {
		Status     string `json:"status"`
		Relocating int    `json:"relocating_shards"`
		Unassigned int    `json:"unassigned_shards"`
	}
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); {
		err = osc.Do(context.Background(), http.MethodGet, "/_cluster/health?wait_for_status=green&timeout=2s", nil, &health)
		if err == nil && health.Status == "green" && health.Relocating == 0 {
			return
		}
		if err != nil || health.Status == "green" {
			time.Sleep(200 * time.Millisecond)
		}
	}
	t.Fatalf("cluster not green within %s: %+v %v", timeout, health, err)
}

// startCluster starts a stack with a 3-node OpenSearch cluster on free
// ports and stops it (by PID) when the test ends, keeping its logs if the
// test failed.
func startCluster(t *testing.T) *localstack.State {
	t.Helper()
	dir, err := os.MkdirTemp("", "baedal-nodeloss-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // PostgreSQL runs as postgres
		t.Fatal(err)
	}
	lc := localstack.Defaults()
	lc.StateDir, lc.PortBase, lc.OpenSearchNodes = dir, 0, 3
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	st, err := localstack.Up(ctx, lc, &progress)
	if err != nil {
		_ = localstack.Down(dir, io.Discard)
		os.RemoveAll(dir)
		testenv.Unavailable(t, fmt.Errorf("start a 3-node cluster: %w\n%s", err, progress.String()))
	}
	t.Cleanup(func() {
		if err := localstack.Down(dir, io.Discard); err != nil {
			t.Errorf("stop the cluster in %s: %v", dir, err)
		}
		if t.Failed() {
			t.Logf("the cluster's logs are kept in %s/logs", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return st
}

// pickVictim returns the elected cluster manager, or the other node that
// holds the most primaries of the layouts' indices.
func pickVictim(t *testing.T, ctx context.Context, osc *osapi.Client, master bool) string {
	t.Helper()
	var managers []struct {
		Node string `json:"node"`
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cat/cluster_manager?format=json", nil, &managers); err != nil || len(managers) != 1 {
		t.Fatalf("elected cluster manager: %v %v", managers, err)
	}
	if master {
		return managers[0].Node
	}
	var shards []struct {
		Index, Prirep, Node string
	}
	if err := osc.Do(ctx, http.MethodGet, "/_cat/shards/baedal_*?format=json&h=index,prirep,node", nil, &shards); err != nil {
		t.Fatal(err)
	}
	primaries := map[string]int{}
	for _, s := range shards {
		if s.Node != managers[0].Node && s.Node != "" {
			primaries[s.Node] += map[string]int{"p": 100, "r": 1}[s.Prirep]
		}
	}
	best := ""
	for n, c := range primaries {
		if best == "" || c > primaries[best] {
			best = n
		}
	}
	if best == "" {
		t.Fatalf("no node but the cluster manager holds a shard: %+v", shards)
	}
	return best
}

// eventLoad posts events and keeps the reference of the accepted ones.
type eventLoad struct {
	t                  *testing.T
	addr               string
	mu                 sync.Mutex
	ref                map[int64]*catalog.ShopState
	accepted, failures atomic.Int64
}

func (l *eventLoad) post(events []catalog.Event) {
	body, err := json.Marshal(events)
	if err != nil {
		l.t.Error(err)
		return
	}
	resp, err := http.Post("http://"+l.addr+"/v1/events", "application/json", bytes.NewReader(body))
	if err != nil {
		l.failures.Add(1)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		l.failures.Add(1)
		return
	}
	l.accepted.Add(int64(len(events)))
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range events {
		s := l.ref[ev.AggregateID()]
		if s == nil {
			s = new(catalog.ShopState)
			l.ref[ev.AggregateID()] = s
		}
		_, _ = s.Apply(ev)
	}
}

// reference returns each shop's expected version (0: must not exist).
func (l *eventLoad) reference() map[int64]int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[int64]int64, len(l.ref))
	for id, s := range l.ref {
		if !s.Deleted {
			out[id] = s.Version
		}
		if _, ok := out[id]; !ok {
			out[id] = 0
		}
	}
	return out
}

// waitIndexed waits until every layout holds every shop at its expected
// version (read back in real time, every part of the shop aggregated).
func waitIndexed(t *testing.T, osc *osapi.Client, cfg Config, want map[int64]int64, timeout time.Duration) {
	t.Helper()
	ids := slices.Sorted(maps.Keys(want))
	var diff string
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		diff = ""
		for _, k := range cfg.Indexer.Layouts {
			ix, err := indexer.New(cfg.Indexer, k, osc, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			held, err := ix.Fetch(context.Background(), ids)
			if err != nil {
				diff = err.Error()
				break
			}
			missing := 0
			for _, id := range ids {
				if got := held[id].Aggregate(k); got.Version != want[id] && !(want[id] == 0 && got.Deleted) {
					if missing++; missing == 1 {
						diff = fmt.Sprintf("%s: shop %d at version %d, want %d", k, id, got.Version, want[id])
					}
				}
			}
			if missing > 0 {
				diff += fmt.Sprintf(" (%d shops behind)", missing)
				break
			}
		}
		if diff == "" {
			return
		}
	}
	t.Fatalf("the layouts did not reach every accepted event within %s: %s", timeout, diff)
}

func checkNoDeadLetters(t *testing.T, addr, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/v1/admin/dead-letters", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Total       int64             `json:"total"`
		DeadLetters []json.RawMessage `json:"dead_letters"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("dead letters: %d %v", resp.StatusCode, err)
	}
	if page.Total != 0 {
		t.Errorf("%d events dead-lettered during the node losses; first: %s", page.Total, page.DeadLetters[0])
	}
}

// faultSearches are the searches of the load and of the final comparison.
var faultSearches = []string{
	"q=%EC%B9%98%ED%82%A8&lat=37.4979&lon=127.0276",
	"lat=37.5&lon=127.03&sort=distance&size=20",
	"q=%ED%94%BC%EC%9E%90&sort=rating&open_now=true",
	"lat=37.55&lon=126.98&sort=eta&max_delivery_fee=3000",
}

// checkLayoutsAnswerAlike compares every layout's answer to each search.
func checkLayoutsAnswerAlike(t *testing.T, addr string, kinds []layout.Kind) {
	t.Helper()
	for _, q := range faultSearches {
		var first string
		for _, k := range kinds {
			resp, err := http.Get("http://" + addr + "/v1/search?" + q + "&layout=" + string(k))
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Total int `json:"total"`
				Shops []struct {
					ID      int64 `json:"id"`
					Version int64 `json:"version"`
				} `json:"shops"`
			}
			err = json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s on %s: %d %v", q, k, resp.StatusCode, err)
			}
			got := fmt.Sprintf("total %d, shops %v", r.Total, r.Shops)
			if first == "" {
				first = got
			} else if got != first {
				t.Errorf("%s: %s answers %s, %s answers %s", q, k, got, kinds[0], first)
			}
		}
	}
}

// searchLoad sends searches at a steady rate, cycling through the default
// layout (no layout named) and each layout, and counts status codes by
// phase and layout.
type searchLoad struct {
	addr     string
	phase    atomic.Value // string
	mu       sync.Mutex
	counts   map[string]map[string]map[int]int // phase → layout → status → n
	bad      []string
	badCount int
}

func (s *searchLoad) run(stop <-chan struct{}, every time.Duration) {
	labels := []string{"default", string(layout.Nested), string(layout.Split)}
	client := &http.Client{Timeout: 30 * time.Second}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		label := labels[i%len(labels)]
		url := "http://" + s.addr + "/v1/search?" + faultSearches[(i/len(labels))%len(faultSearches)]
		if label != "default" {
			url += "&layout=" + label
		}
		phase := s.phase.Load().(string)
		code, retryAfter, body := 0, "", ""
		if resp, err := client.Get(url); err != nil {
			body = err.Error()
		} else {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			code, retryAfter, body = resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
		}
		s.mu.Lock()
		if s.counts[phase] == nil {
			s.counts[phase] = map[string]map[int]int{}
		}
		if s.counts[phase][label] == nil {
			s.counts[phase][label] = map[int]int{}
		}
		s.counts[phase][label][code]++
		if code != http.StatusOK && (code != http.StatusServiceUnavailable || retryAfter == "") {
			s.badCount++
			if len(s.bad) < 5 {
				s.bad = append(s.bad, fmt.Sprintf("%s %s: %d %s", phase, label, code, body))
			}
		}
		s.mu.Unlock()
	}
}
