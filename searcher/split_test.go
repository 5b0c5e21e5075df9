package searcher

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
	"github.com/baedal/baedal/searcher/rank"
)

// TestTotalFeeFilterWithoutCarriedValue runs the max_total_fee script alone,
// so it sees shops that have no carried value, as it can when Lucene runs it
// before the terms filter of the shop step (seen on 20,000 shops: HTTP 400, a
// null pointer in the script). Such shops must fail the filter, not the search.
func TestTotalFeeFilterWithoutCarriedValue(t *testing.T) {
	st := stacktest.Require(t)
	ctx := context.Background()
	osc, idx := openIndex(t, st.OpenSearchURLs)
	if err := idx.EnsureIndices(ctx, osc, layout.Split); err != nil {
		t.Fatal(err)
	}
	states := generateStates(20, 0)
	writeDocs(t, osc, idx, layout.Split, states)
	var carried int64
	var fee int
	for id, s := range states {
		carried, fee = id, s.Shop.DeliveryFee
		break
	}
	search := func(minExtra map[string]int64, max int) []string {
		t.Helper()
		body := obj{"query": obj{"bool": obj{"filter": arr{totalFeeFilter(minExtra, max)}}}, "size": 100, "_source": false}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		var out searchResponse
		if err := osc.Do(ctx, http.MethodPost, "/"+idx.Alias(layout.RoleShops)+"/_search", raw, &out); err != nil {
			t.Fatalf("max_total_fee filter with %d carried values: %v", len(minExtra), err)
		}
		var ids []string
		for _, h := range out.Hits.Hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
	if got := search(map[string]int64{}, 1<<30); len(got) != 0 {
		t.Errorf("no carried values: got shops %v, want none", got)
	}
	key := idKey(carried)
	if got := search(map[string]int64{key: 500}, fee+500); len(got) != 1 || got[0] != key {
		t.Errorf("shop %s with fee %d + extra 500 under %d: got %v, want only it", key, fee, fee+500, got)
	}
	if got := search(map[string]int64{key: 501}, fee+500); len(got) != 0 {
		t.Errorf("shop %s with fee %d + extra 501 over %d: got %v, want none", key, fee, fee+500, got)
	}
}

// TestHighlightQueryKeepsHighlights checks that highlighting with only the
// clauses on the highlighted fields (matchedMenusInnerHits) marks exactly what
// highlighting with the whole text query marks, for every matched menu of
// every shop, over the equivalence test's words.
func TestHighlightQueryKeepsHighlights(t *testing.T) {
	st := stacktest.Require(t)
	ctx := context.Background()
	osc, idx := openIndex(t, st.OpenSearchURLs)
	if err := idx.EnsureIndices(ctx, osc, layout.Split); err != nil {
		t.Fatal(err)
	}
	writeDocs(t, osc, idx, layout.Split, generateStates(400, 0))
	highlights := func(q string, wholeQuery bool) map[string]string {
		t.Helper()
		ih := matchedMenusInnerHits(q, rank.Defaults())
		ih["size"] = 100
		if wholeQuery {
			delete(ih["highlight"].(obj), "highlight_query")
		}
		r := query.Request{Q: q}
		body := obj{"query": nestedMenus(menuPredicate(&r, rank.Defaults(), true, nil), ih), "size": 1000, "_source": false}
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		var out searchResponse
		if err := osc.Do(ctx, http.MethodPost, "/"+idx.Alias(layout.RoleMenus)+"/_search", raw, &out); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, h := range out.Hits.Hits {
			for _, m := range matchedMenus(h) {
				got[fmt.Sprintf("shop %s menu %d", h.ID, m.ID)] = fmt.Sprint(m.Highlight)
			}
		}
		return got
	}
	marked := 0
	for _, q := range queryWords {
		want, got := highlights(q, true), highlights(q, false)
		if len(got) != len(want) {
			t.Errorf("q=%s: %d matched menus with the highlight query, %d with the whole query", q, len(got), len(want))
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("q=%s %s: highlight %s, whole query gives %s", q, k, got[k], w)
			}
			if strings.Contains(w, "<em>") {
				marked++
			}
		}
	}
	if marked < 50 {
		t.Errorf("only %d menus had a highlight: too few to compare", marked)
	}
}
