package indexbench

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/bench"
	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// fakeOpenSearch answers a client like a node with the baedal-hot plugin
// would, for what the hot freshness probe and runnableKinds ask.
type fakeOpenSearch struct {
	mu       sync.Mutex
	versions map[int64]int64 // the table: shop id → version
	requests int
	fail503  int // answer the first fail503 searches with 503
	plugins  map[string][]string
}

func (f *fakeOpenSearch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/_nodes/plugins":
		nodes := map[string]any{}
		for name, plugins := range f.plugins {
			var ps []map[string]string
			for _, p := range plugins {
				ps = append(ps, map[string]string{"name": p})
			}
			nodes["id-"+name] = map[string]any{"name": name, "plugins": ps}
		}
		json.NewEncoder(w).Encode(map[string]any{"nodes": nodes})
	case strings.HasSuffix(r.URL.Path, "_hot_menus/_search"):
		f.requests++
		if f.requests <= f.fail503 {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"reason":"table not ready"},"status":503}`))
			return
		}
		var body struct {
			Query struct {
				Terms struct {
					ID []int64 `json:"id"`
				} `json:"terms"`
			} `json:"query"`
			Ext struct {
				Hot struct {
					Table string `json:"table"`
				} `json:"baedal_hot"`
			} `json:"ext"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Ext.Hot.Table == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var hits []any
		for _, id := range body.Query.Terms.ID {
			hits = append(hits, map[string]any{"_id": strconv.FormatInt(id, 10),
				"fields": map[string]any{"baedal_hot": []any{map[string]any{"version": f.versions[id]}}}})
		}
		json.NewEncoder(w).Encode(map[string]any{"hits": map[string]any{"hits": hits}})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (f *fakeOpenSearch) set(id, version int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.versions[id] = version
}

func fakeClient(t *testing.T, f *fakeOpenSearch) *osapi.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := backend.Defaults().OpenSearch
	cfg.URLs = []string{srv.URL}
	c, err := backend.OpenOpenSearch(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return osapi.New(c)
}

// TestHotProbeTimesTheFirstSearchShowingTheVersion: a sample is recorded
// when a search first shows its shop at its version or newer, not before
// (an older version, a 503 while the table is not ready); a sample never
// shown is given up, not recorded.
func TestHotProbeTimesTheFirstSearchShowingTheVersion(t *testing.T) {
	f := &fakeOpenSearch{versions: map[int64]int64{1: 4, 2: 1}, fail503: 2}
	rec := bench.NewLatencyRecorder()
	lc := layout.Defaults()
	lc.Prefix = "baedal_bench_index_"
	p := newHotProbe(fakeClient(t, f), lc, rec, 300*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, 1)
	go func() { errs <- p.run(ctx) }()

	start := time.Now()
	p.add(catalog.Event{ID: 1, Type: catalog.EntityShop, Version: 5}, start)
	p.add(catalog.Event{ID: 1, Type: catalog.EntityShop, Version: 6}, start.Add(time.Hour)) // already pending: kept as is
	p.add(catalog.Event{ID: 2, Type: catalog.EntityShop, Version: 3}, start)                // never shown
	time.Sleep(40 * time.Millisecond)
	if rec.Count() != 0 {
		t.Fatalf("recorded %d samples while the table held older versions", rec.Count())
	}
	f.set(1, 5)
	for deadline := time.Now().Add(5 * time.Second); rec.Count() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if rec.Count() != 1 {
		t.Fatalf("recorded %d samples, want 1", rec.Count())
	}
	if d := rec.Quantile(0.5); d < 40*time.Millisecond || d > 5*time.Second {
		t.Errorf("recorded %s, want the time from the append to the search that showed version 5 (>= 40ms)", d)
	}
	time.Sleep(400 * time.Millisecond) // past the timeout of shop 2's sample
	cancel()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if gaveUp := p.stop(); gaveUp != 1 || rec.Count() != 1 {
		t.Errorf("gave up %d samples and recorded %d, want 1 and 1", gaveUp, rec.Count())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.requests <= f.fail503 {
		t.Errorf("%d searches: the probe stopped at a 503", f.requests)
	}
}

func TestRunnableKindsSkipsHotWithoutThePluginOnEveryNode(t *testing.T) {
	f := &fakeOpenSearch{plugins: map[string][]string{"n1": {"analysis-nori", layout.HotPlugin}, "n2": {"analysis-nori"}}}
	osc := fakeClient(t, f)
	kinds, skipped, err := runnableKinds(context.Background(), osc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, []layout.Kind{layout.Nested, layout.Split}) || !strings.Contains(skipped["hot"], "n2") ||
		!strings.Contains(skipped["hot"], layout.HotPlugin) || strings.Contains(skipped["hot"], "n1") {
		t.Errorf("one node without the plugin: kinds %v, skipped %v; want nested, split and hot skipped naming n2 and the plugin", kinds, skipped)
	}
	f.plugins["n2"] = append(f.plugins["n2"], layout.HotPlugin)
	kinds, skipped, err = runnableKinds(context.Background(), osc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(kinds, layout.Kinds()) || len(skipped) != 0 {
		t.Errorf("every node with the plugin: kinds %v, skipped %v; want every layout, none skipped", kinds, skipped)
	}
}
