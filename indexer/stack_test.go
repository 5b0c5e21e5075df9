package indexer

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/eventlog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/localstack"
)

func TestMain(m *testing.M) { os.Exit(stacktest.Main(m)) }

// testEnv is a namespaced slice of the shared stack.
type testEnv struct {
	st      *localstack.State
	ns      string
	clients *backend.Clients
	os      *osapi.Client
	cfg     Config
}

func openClients(t testing.TB, st *localstack.State) *backend.Clients {
	t.Helper()
	bc := backend.Defaults()
	bc.OpenSearch.URLs = st.OpenSearchURLs
	bc.Redis.Addr = st.RedisAddr
	bc.Postgres.URL = st.PostgresURL
	clients, err := backend.Open(context.Background(), bc)
	if err != nil {
		t.Fatal(err)
	}
	return clients
}

// testConfig is the indexer configuration of a namespace: index prefix and
// Redis key prefix both derived from ns.
func testConfig(ns string) Config {
	cfg := Defaults()
	cfg.Layouts = []layout.Kind{layout.Nested, layout.Split}
	cfg.Layout.Prefix = ns + "_"
	cfg.Log.Prefix = ns + ":"
	cfg.Log.Partitions = 3
	cfg.RetryBase, cfg.RetryMax = 10*time.Millisecond, 200*time.Millisecond
	return cfg
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	st := stacktest.Require(t)
	e := &testEnv{st: st, ns: stacktest.Namespace(t)}
	e.clients = openClients(t, st)
	e.os = osapi.New(e.clients.OpenSearch)
	e.cfg = testConfig(e.ns)
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range []layout.Kind{layout.Nested, layout.Split} {
			_ = e.cfg.Layout.DeleteIndices(ctx, e.os, k)
		}
		stacktest.DeleteKeys(ctx, e.clients.Redis, e.ns+":*", "{"+e.ns+":*")
		e.clients.Close()
	})
	return e
}

func (e *testEnv) indexer(t *testing.T, k layout.Kind) *Indexer {
	t.Helper()
	if err := e.cfg.Layout.EnsureIndices(context.Background(), e.os, k); err != nil {
		t.Fatal(err)
	}
	ix, err := New(e.cfg, k, e.os, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// expectedShops applies events in order to the generated states of shops
// 1..numShops with catalog.ShopState.Apply, and records for the split layout
// the version of the last event that touched each document.
type expectedShop struct {
	state               catalog.ShopState
	shopPart, menusPart int64 // split document versions
	hotMenusPart        int64 // hot menu document version (its shop document is at shopPart)
}

func expectedShops(t testing.TB, seed uint64, numShops int, events []catalog.Event) map[int64]*expectedShop {
	t.Helper()
	out := make(map[int64]*expectedShop)
	for i, st := range catalog.NewGenerator(seed).Shops(numShops) {
		out[catalog.ShopID(i)] = &expectedShop{state: st, shopPart: st.Version, menusPart: st.Version, hotMenusPart: st.Version}
	}
	for _, ev := range events {
		id := ev.AggregateID()
		ex := out[id]
		if ex == nil {
			ex = &expectedShop{}
			out[id] = ex
		}
		applied, err := ex.state.Apply(ev)
		if err != nil {
			t.Fatalf("expected state: event %+v: %v", ev, err)
		}
		if !applied {
			continue
		}
		shop, menus := layout.SplitTouches(ev)
		if shop {
			ex.shopPart = ev.Version
		}
		if menus {
			ex.menusPart = ev.Version
		}
		if _, hotMenus := layout.HotTouches(ev); hotMenus {
			ex.hotMenusPart = ev.Version
		}
	}
	return out
}

// fetchSources reads every document of an alias by id (realtime _mget).
func fetchSources(t testing.TB, osc *osapi.Client, alias string, ids []int64) map[int64]map[string]any {
	t.Helper()
	out := make(map[int64]map[string]any)
	for start := 0; start < len(ids); start += 500 {
		chunk := ids[start:min(start+500, len(ids))]
		strIDs := make([]string, len(chunk))
		for i, id := range chunk {
			strIDs[i] = strconv.FormatInt(id, 10)
		}
		body, _ := json.Marshal(map[string]any{"ids": strIDs})
		var resp struct {
			Docs []struct {
				ID      string         `json:"_id"`
				Found   bool           `json:"found"`
				Version int64          `json:"_version"`
				Source  map[string]any `json:"_source"`
			} `json:"docs"`
		}
		if err := osc.Do(context.Background(), http.MethodPost, "/"+alias+"/_mget", body, &resp); err != nil {
			t.Fatal(err)
		}
		for _, d := range resp.Docs {
			if d.Found {
				id, _ := strconv.ParseInt(d.ID, 10, 64)
				if v, _ := d.Source["version"].(float64); int64(v) != d.Version {
					t.Errorf("%s/%s: source version %v != external _version %d", alias, d.ID, d.Source["version"], d.Version)
				}
				out[id] = d.Source
			}
		}
	}
	return out
}

func asJSONMap(t testing.TB, v any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// compareLayout checks every document of a layout against the expected
// states: same version, same fields; deleted shops have no document. It
// returns how many documents were stale or missing.
func compareLayout(t testing.TB, osc *osapi.Client, cfg *layout.Config, k layout.Kind, want map[int64]*expectedShop) (bad int) {
	t.Helper()
	ids := make([]int64, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	type docCheck struct {
		role  string
		build func(ex *expectedShop) (version int64, doc any)
	}
	var checks []docCheck
	switch k {
	case layout.Nested:
		checks = []docCheck{{layout.RoleNested, func(ex *expectedShop) (int64, any) {
			return ex.state.Version, layout.BuildNested(&ex.state, ex.state.Version)
		}}}
	case layout.Hot:
		checks = []docCheck{
			{layout.RoleHotShops, func(ex *expectedShop) (int64, any) { return ex.shopPart, layout.BuildHotHead(&ex.state, ex.shopPart) }},
			{layout.RoleHotMenus, func(ex *expectedShop) (int64, any) {
				return ex.hotMenusPart, layout.BuildHotMenus(&ex.state, ex.hotMenusPart)
			}},
		}
		bad += compareHotTable(t, osc, cfg, ids, want)
	default:
		checks = []docCheck{
			{layout.RoleShops, func(ex *expectedShop) (int64, any) { return ex.shopPart, layout.BuildShop(&ex.state, ex.shopPart) }},
			{layout.RoleMenus, func(ex *expectedShop) (int64, any) { return ex.menusPart, layout.BuildMenus(&ex.state, ex.menusPart) }},
		}
	}
	for _, c := range checks {
		alias := cfg.Alias(c.role)
		got := fetchSources(t, osc, alias, ids)
		for _, id := range ids {
			ex := want[id]
			doc, found := got[id]
			if ex.state.Deleted && c.role == layout.RoleHotShops {
				// The hot layout keeps the head as a tombstone at the delete's version.
				if !found || doc["deleted"] != true || doc["version"] != float64(ex.state.Version) {
					bad++
					t.Errorf("%s: shop %d deleted at version %d: its head is %v, want a tombstone at that version", alias, id, ex.state.Version, doc)
				}
				continue
			}
			if ex.state.Deleted {
				if found {
					bad++
					t.Errorf("%s: shop %d deleted at version %d but its document is there at version %v", alias, id, ex.state.Version, doc["version"])
				}
				continue
			}
			if !found {
				bad++
				t.Errorf("%s: shop %d (version %d) has no document", alias, id, ex.state.Version)
				continue
			}
			version, wantDoc := c.build(ex)
			if !reflect.DeepEqual(doc, asJSONMap(t, wantDoc)) {
				bad++
				if bad <= 5 {
					t.Errorf("%s: shop %d: document version %v differs from the expected version %d:\n got %v\nwant %v", alias, id, doc["version"], version, doc, asJSONMap(t, wantDoc))
				}
			}
		}
	}
	return bad
}

// compareHotTable checks the baedal-hot table's row of every live shop, as
// the hot layout's search reads it, against the expected state.
func compareHotTable(t testing.TB, osc *osapi.Client, cfg *layout.Config, ids []int64, want map[int64]*expectedShop) (bad int) {
	t.Helper()
	if err := osc.Do(context.Background(), http.MethodPost, "/"+cfg.Alias(layout.RoleHotMenus)+"/_refresh", nil, nil); err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(map[string]any{
		"size": len(ids), "_source": false, "query": map[string]any{"terms": map[string]any{"id": ids}},
		"ext": map[string]any{"baedal_hot": map[string]any{"table": cfg.Alias(layout.RoleHotShops)}},
	})
	var resp struct {
		Hits struct {
			Hits []struct {
				ID     string                `json:"_id"`
				Fields map[string][]HotEntry `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := osc.Do(context.Background(), http.MethodPost, "/"+cfg.Alias(layout.RoleHotMenus)+"/_search", body, &resp); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, h := range resp.Hits.Hits {
		id, _ := strconv.ParseInt(h.ID, 10, 64)
		ex := want[id]
		rows := h.Fields["baedal_hot"]
		if ex == nil || ex.state.Deleted || len(rows) != 1 {
			bad++
			t.Errorf("hot table: shop %d: rows %+v, expected state %+v", id, rows, ex)
			continue
		}
		seen++
		row := rows[0]
		row.ID = id // the fetched row does not repeat the id
		if wantRow := HotEntryOf(&ex.state); row != wantRow {
			bad++
			if bad <= 5 {
				t.Errorf("hot table: shop %d: row %+v, want %+v", id, row, wantRow)
			}
		}
	}
	live := 0
	for _, id := range ids {
		if !want[id].state.Deleted {
			live++
		}
	}
	if seen != live {
		bad++
		t.Errorf("hot table: %d live shops answered, want %d", seen, live)
	}
	return bad
}

// messyBatches cuts events into batches of size n and adds, to each batch,
// redeliveries of random earlier events (duplicates, out of order).
func messyBatches(r *rand.Rand, events []catalog.Event, n int) [][]catalog.Event {
	var out [][]catalog.Event
	for start := 0; start < len(events); start += n {
		batch := slices.Clone(events[start:min(start+n, len(events))])
		for range n / 5 {
			if start == 0 {
				break
			}
			// Only events already delivered in an earlier batch come again,
			// anywhere in this batch: a redelivery after a crash.
			old := events[r.IntN(start)]
			batch = slices.Insert(batch, r.IntN(len(batch)+1), old)
		}
		out = append(out, batch)
	}
	return out
}

func initialLoad(seed uint64, numShops int) []catalog.Event {
	var out []catalog.Event
	for _, st := range catalog.NewGenerator(seed).Shops(numShops) {
		out = append(out, st.UpsertEvent())
	}
	return out
}

func streamEvents(seed uint64, numShops, n int) []catalog.Event {
	s := catalog.NewEventStream(seed, numShops)
	out := make([]catalog.Event, n)
	for i := range out {
		out[i] = s.Next()
	}
	return out
}

// TestApplyNeverMakesADocumentOlder applies the realistic event stream with
// duplicates and out-of-order redeliveries in every batch, through a warm and
// then a cold held state, and compares every document of both layouts with
// the states catalog.ShopState.Apply computes from the same events in order.
func TestApplyNeverMakesADocumentOlder(t *testing.T) {
	e := newTestEnv(t)
	const seed, numShops = 11, 150
	events := streamEvents(seed, numShops, 3000)
	want := expectedShops(t, seed, numShops, events)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []layout.Kind{layout.Nested, layout.Split} {
		t.Run(string(k), func(t *testing.T) {
			ix := e.indexer(t, k)
			load, err := ix.Apply(ctx, initialLoad(seed, numShops))
			if err != nil || load.Applied != numShops || len(load.Rejected) != 0 {
				t.Fatalf("initial load: %+v, %v", load, err)
			}
			var total Stats
			for i, batch := range messyBatches(r, events, 250) {
				if i == 6 { // from here on, a cold state read back from OpenSearch
					ix = e.indexer(t, k)
				}
				st, err := ix.Apply(ctx, batch)
				if err != nil {
					t.Fatal(err)
				}
				if len(st.Rejected) > 0 {
					t.Fatalf("batch %d rejected %+v", i, st.Rejected[0])
				}
				total.Stale += st.Stale
				total.Docs += st.Docs
				total.Fetched += st.Fetched
			}
			if total.Stale == 0 || total.Fetched == 0 {
				t.Errorf("the test did not exercise stale redeliveries (%d) or cold reads (%d)", total.Stale, total.Fetched)
			}
			if bad := compareLayout(t, e.os, &e.cfg.Layout, k, want); bad > 0 {
				t.Errorf("%d documents lost or stale", bad)
			}
		})
	}
}

// TestBulkRetriesTooManyRequests provokes a real 429 from OpenSearch: the
// flood-stage block index.blocks.read_only_allow_delete answers every write
// with 429 cluster_block_exception. Apply must retry until the block is
// lifted and then write everything.
func TestBulkRetriesTooManyRequests(t *testing.T) {
	e := newTestEnv(t)
	const seed, numShops = 12, 30
	ix := e.indexer(t, layout.Nested)
	ctx := context.Background()
	if _, err := ix.Apply(ctx, initialLoad(seed, numShops)); err != nil {
		t.Fatal(err)
	}
	index := e.cfg.Layout.Alias(layout.RoleNested) + "_v1"
	setBlock := func(on bool) {
		body := `{"index.blocks.read_only_allow_delete":` + strconv.FormatBool(on) + `}`
		if !on {
			body = `{"index.blocks.read_only_allow_delete":null}`
		}
		if err := e.os.Do(ctx, http.MethodPut, "/"+index+"/_settings", []byte(body), nil); err != nil {
			t.Fatal(err)
		}
	}
	setBlock(true)
	events := streamEvents(seed, numShops, 200)
	type result struct {
		st  Stats
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := ix.Apply(ctx, events)
		done <- result{st, err}
	}()
	retries := ix.m.retries.WithLabelValues(string(layout.Nested))
	deadline := time.Now().Add(30 * time.Second)
	for counterValue(retries) < 3 {
		if time.Now().After(deadline) {
			setBlock(false)
			t.Fatal("no retries while the index refused writes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-done:
		setBlock(false)
		t.Fatalf("Apply returned while the index was blocked: %+v %v", r.st, r.err)
	default:
	}
	setBlock(false)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.st.Retries < 3 || len(r.st.Rejected) != 0 {
		t.Errorf("stats %+v: want >= 3 retries and no rejection", r.st)
	}
	if bad := compareLayout(t, e.os, &e.cfg.Layout, layout.Nested, expectedShops(t, seed, numShops, events)); bad > 0 {
		t.Errorf("%d documents lost or stale after the retries", bad)
	}
}

// TestPoisonGoesToTheDeadLetterStream runs the stream worker over entries
// that cannot be indexed: a document OpenSearch refuses (the nested index is
// created with "tags" mapped as integer, so shop names in tags answer 400), a
// partial upsert of an unknown shop, a malformed entry and an entry delivered
// more than MaxAttempts times. Each goes to the dead-letter stream with its
// reason; the good events are indexed and everything is acknowledged.
func TestPoisonGoesToTheDeadLetterStream(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	e.cfg.Layouts = []layout.Kind{layout.Nested}
	e.cfg.MaxAttempts = 3
	// A nested index whose mapping lacks "phone".
	raw, err := e.cfg.Layout.IndexBody(layout.RoleNested)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	json.Unmarshal(raw, &body)
	body["mappings"].(map[string]any)["properties"].(map[string]any)["tags"] = map[string]any{"type": "integer"}
	alias := e.cfg.Layout.Alias(layout.RoleNested)
	body["aliases"] = map[string]any{alias: map[string]any{"is_write_index": true}}
	raw, _ = json.Marshal(body)
	if err := e.os.Do(ctx, http.MethodPut, "/"+alias+"_v1", raw, nil); err != nil {
		t.Fatal(err)
	}

	evlog := newLog(t, e)
	// The good shop has no tags; the refused one has tags the index cannot
	// parse as integers (mapper_parsing_exception, HTTP 400).
	gen := catalog.NewGenerator(13)
	var good, refused catalog.ShopState
	for i := 0; good.Version == 0 || refused.Version == 0; i++ {
		st := gen.Shop(i)
		if len(st.Shop.Tags) == 0 && good.Version == 0 {
			good = st
		} else if len(st.Shop.Tags) > 0 && refused.Version == 0 {
			refused = st
		}
	}
	goodEv := good.UpsertEvent()
	minutes := 30
	unknown := catalog.ShopUpsertEvent(4, 5, &catalog.ShopFields{DeliveryMinutes: &minutes})
	// An entry delivered MaxAttempts+1 times before the worker sees it.
	tired := good.UpsertEvent()
	tired.Version = 2
	tiredIDs, err := evlog.Append(ctx, []catalog.Event{tired})
	if err != nil {
		t.Fatal(err)
	}
	c := evlog.Consumer(GroupName(layout.Nested), evlog.Partition(tired.ID))
	if err := c.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	// Deliver everything of that partition once, then re-read it
	// MaxAttempts times without acknowledging.
	if _, err := c.ReadNew(ctx, 100, 0); err != nil {
		t.Fatal(err)
	}
	for range e.cfg.MaxAttempts {
		if _, err := c.ReadPending(ctx, "0", 100); err != nil {
			t.Fatal(err)
		}
	}

	if _, err := evlog.Append(ctx, []catalog.Event{refused.UpsertEvent(), goodEv, unknown}); err != nil {
		t.Fatal(err)
	}
	p := evlog.Partition(good.Shop.ID)
	if err := e.clients.Redis.XAdd(ctx, &redis.XAddArgs{Stream: evlog.StreamKey(p), Values: []any{"e", `{"type":"shop",`, "t", "1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	runWorkerUntilDrained(t, e, evlog, 30*time.Second)

	letters, err := evlog.DeadLetters(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, d := range letters {
		reasons[d.Stream+"/"+d.EntryID] = d.Reason
		t.Logf("dead letter %s attempts %d: %s", d.EntryID, d.Attempts, d.Reason)
	}
	wantReasons := []string{"mapper_parsing_exception", "new shop needs every field", "malformed JSON", "more than max-attempts 3"}
	for _, w := range wantReasons {
		found := false
		for _, r := range reasons {
			found = found || strings.Contains(r, w)
		}
		if !found {
			t.Errorf("no dead letter with reason %q", w)
		}
	}
	if r := reasons[evlog.StreamKey(evlog.Partition(tired.ID))+"/"+tiredIDs[0]]; !strings.Contains(r, "max-attempts") {
		t.Errorf("the entry delivered %d times was not dead-lettered for attempts: %q", e.cfg.MaxAttempts+1, r)
	}
	docs := fetchSources(t, e.os, alias, []int64{good.Shop.ID, refused.Shop.ID})
	if d, ok := docs[good.Shop.ID]; !ok || d["version"] != float64(1) {
		t.Errorf("the good shop %d: document %v, want version 1 (version 2 was dead-lettered)", good.Shop.ID, d["version"])
	}
	if _, ok := docs[refused.Shop.ID]; ok {
		t.Errorf("the refused shop %d has a document", refused.Shop.ID)
	}
}

// TestFreshnessIsMeasured runs the worker on a few events and checks that
// the freshness probe observed visibility.
func TestFreshnessIsMeasured(t *testing.T) {
	e := newTestEnv(t)
	ctx := context.Background()
	e.cfg.Layouts = []layout.Kind{layout.Split}
	evlog := newLog(t, e)
	if _, err := evlog.Append(ctx, initialLoad(14, 20)); err != nil {
		t.Fatal(err)
	}
	var samples []time.Duration
	w, err := NewWorker(e.cfg, layout.Split, evlog, e.os, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Duration, 100)
	w.OnFreshness = func(d time.Duration) { got <- d }
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(runCtx) }()
	select {
	case d := <-got:
		samples = append(samples, d)
	case <-time.After(30 * time.Second):
		t.Error("no freshness sample within 30 s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(samples) > 0 && samples[0] <= 0 {
		t.Errorf("freshness %s, want > 0", samples[0])
	}
}

func newLog(t testing.TB, e *testEnv) *eventlog.Log {
	t.Helper()
	l, err := eventlog.New(e.cfg.Log, e.clients.Redis, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// drained reports whether every partition's group of every configured
// layout has neither lag nor pending entries.
func drained(ctx context.Context, cfg Config, evlog *eventlog.Log) (bool, error) {
	for _, k := range cfg.Layouts {
		for p := range cfg.Log.Partitions {
			lag, pending, err := evlog.Consumer(GroupName(k), p).Lag(ctx)
			if err != nil {
				return false, err
			}
			if lag != 0 || pending != 0 {
				return false, nil
			}
		}
	}
	return true, nil
}

// runWorkerUntilDrained runs Run until every group is drained.
func runWorkerUntilDrained(t testing.TB, e *testEnv, evlog *eventlog.Log, timeout time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, e.cfg, e.clients, nil, nil) }()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := drained(context.Background(), e.cfg, evlog)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			t.Fatalf("the worker did not drain the log within %s (last error: %v)", timeout, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func counterValue(c interface{ Write(*dto.Metric) error }) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}
