package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/baedal/baedal/backend"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
)

// TestSearchFallsBackToAnEquivalentLayout makes the split layout red (its
// shop index is created with a primary that may be allocated nowhere) while
// nested is healthy and caught up: a search that names no layout is answered
// by nested and says so, and counted; a search that names split is a 503
// naming the layout, with Retry-After, never a 500 and never answered by
// another layout.
func TestSearchFallsBackToAnEquivalentLayout(t *testing.T) {
	st := stacktest.Require(t)
	ns := stacktest.Namespace(t)
	ctx := context.Background()
	cfg := Defaults()
	cfg.API.Addr = "127.0.0.1:0"
	cfg.Backends.OpenSearch.URLs = st.OpenSearchURLs
	cfg.Backends.Redis.Addr = st.RedisAddr
	cfg.Backends.Postgres.URL = st.PostgresURL
	cfg.Indexer.Layout.Prefix = ns + "_"
	cfg.Indexer.Log.Prefix = ns + ":"
	cfg.Feed.KeyPrefix = ns + ":feed:"
	cfg.Search.Timeout = 2 * time.Second
	// Split is then the default layout (hot, the default where it runs,
	// is not served).
	cfg.Indexer.Layouts = []layout.Kind{layout.Split, layout.Nested}

	client, err := backend.OpenOpenSearch(backend.OpenSearchConfig{URLs: st.OpenSearchURLs, RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	osc := osapi.New(client)
	idx := cfg.Indexer.Layout
	t.Cleanup(func() {
		for _, k := range cfg.Indexer.Layouts {
			_ = idx.DeleteIndices(context.Background(), osc, k)
		}
	})
	// The split shop index, red: its only copy may live on no node.
	raw, err := idx.IndexBody(layout.RoleShops)
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	body["settings"].(map[string]any)["index"].(map[string]any)["routing.allocation.require._name"] = "no-such-node"
	body["aliases"] = map[string]any{idx.Alias(layout.RoleShops): map[string]any{"is_write_index": true}}
	raw, _ = json.Marshal(body)
	if err := osc.Do(ctx, http.MethodPut, "/"+idx.Alias(layout.RoleShops)+"_v1?wait_for_active_shards=0", raw, nil); err != nil {
		t.Fatal(err)
	}
	addr := serve(t, cfg)

	get := func(path string) (int, http.Header, map[string]any) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %d, not JSON: %s", path, resp.StatusCode, b)
		}
		return resp.StatusCode, resp.Header, m
	}
	const q = "/v1/search?lat=37.5&lon=127.03&sort=distance" // reads the shop index first
	// Nested becomes searchable once its index exists and its indexer has
	// a consumer group (then its lag is known and 0).
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, _, m := get(q)
		if code == http.StatusOK {
			if m["layout"] != "nested" || m["fallback_from"] != "split" {
				t.Fatalf("fallback answer: layout %v, fallback_from %v; want nested, split", m["layout"], m["fallback_from"])
			}
			break
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("search with split red: %d %v, want 200 (fallback) or 503 while nested starts", code, m)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fallback to nested within 60 s: %d %v", code, m)
		}
		time.Sleep(250 * time.Millisecond)
	}
	code, h, m := get(q + "&layout=split")
	if code != http.StatusServiceUnavailable || h.Get("Retry-After") == "" || m["unavailable"] != "layout split" {
		t.Errorf("search naming the red layout: %d %v (Retry-After %q), want 503 naming layout split with Retry-After", code, m, h.Get("Retry-After"))
	}
	if d, _ := m["detail"].(string); strings.Contains(d, "exception") || strings.Contains(d, ns) {
		t.Errorf("503 detail leaks internals: %q", d)
	}
	if code, _, m := get(q + "&layout=nested"); code != http.StatusOK || m["fallback_from"] != nil {
		t.Errorf("search naming the healthy layout: %d %v", code, m)
	}
	code, _, m = get("/readyz")
	if code != http.StatusServiceUnavailable || m["status"] != "unavailable" {
		t.Errorf("/readyz with split red: %d %v, want 503 unavailable", code, m)
	}
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `baedal_search_fallbacks_total{from="split",to="nested"} `) {
		t.Errorf("no fallback counted in /metrics")
	}
}
