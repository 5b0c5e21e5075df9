package searcher

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/baedal/baedal/api"
	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// A search past its deadline is refused for itself only: a 503 with
// Retry-After that names no layout, never answered again by another layout
// (which would double its cost), and the layout keeps answering searches
// that fit their deadline. Before, a timeout counted as the layout being
// unavailable: "layout split is unavailable", then a fallback.
func TestSearchPastItsDeadlineIsRefusedAlone(t *testing.T) {
	st := stacktest.Require(t)
	ctx := context.Background()
	osc, idx := openIndex(t, st.OpenSearchURLs)
	kinds := stacktest.Layouts(t, osc)
	states := generateStates(60, 0)
	loadLayouts(t, osc, idx, kinds, states)
	caughtUp := func(context.Context, layout.Kind) (time.Duration, error) { return 0, nil }
	for _, k := range kinds {
		cfg := Defaults()
		cfg.Timeout = time.Microsecond // every search runs past it
		late := newSearcher(osc, idx, cfg, kinds)
		late.SetServed([]layout.Kind{k})
		fallbacks := prometheus.NewRegistry()
		fb := NewFallback(DefaultFallback(), kinds, caughtUp, fallbacks)
		srv := api.New(api.Defaults(), nil, prometheus.NewRegistry())
		RegisterRoutes(srv, late, fb)

		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/search?q=%EC%B9%98%ED%82%A8", nil))
		var p api.Problem
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s: %d %s, want a 503 problem", k, rec.Code, rec.Body.String())
		}
		if rec.Header().Get("Retry-After") == "" || p.Unavailable != "" || !strings.Contains(p.Detail, "deadline") || strings.Contains(p.Detail, "layout") {
			t.Errorf("%s: Retry-After %q, problem %+v; want Retry-After, a detail about the deadline, no layout named", k, rec.Header().Get("Retry-After"), p)
		}
		if families, err := fallbacks.Gather(); err != nil || len(families) != 0 {
			t.Errorf("%s: fallbacks counted after a timeout: %v %v, want none", k, families, err)
		}
		if why := late.Unavailable(k); why != "" {
			t.Errorf("%s: marked unavailable after one slow search: %s", k, why)
		}
		if _, err := newSearcher(osc, idx, Defaults(), kinds).Search(ctx, query.Request{Q: "치킨", Sort: query.SortRelevance, Page: 1, Size: 20}, k); err != nil {
			t.Errorf("%s: a search within its deadline: %v", k, err)
		}
	}
}
