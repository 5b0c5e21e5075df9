package searcher

import (
	"context"
	"strings"
	"testing"

	"github.com/baedal/baedal/internal/stacktest"
	"github.com/baedal/baedal/layout"
	"github.com/baedal/baedal/query"
)

// TestTextMatchesMostWords checks the TermsToMatch policy on every layout: a
// text whose only common word is 메뉴 (in most descriptions) finds nothing, a
// text of symbols alone finds nothing,
// and every shop a two-word text finds has a matched menu whose name,
// description and shop name hold both words, while each word alone finds
// more shops.
func TestTextMatchesMostWords(t *testing.T) {
	st := stacktest.Require(t)
	ctx := context.Background()
	osc, idx := openIndex(t, st.OpenSearchURLs)
	kinds := stacktest.Layouts(t, osc)
	loadLayouts(t, osc, idx, kinds, generateStates(1500, 0))
	s := newSearcher(osc, idx, Defaults(), kinds)
	search := func(q string, k layout.Kind) *Response {
		t.Helper()
		resp, err := s.Search(ctx, query.Request{Q: q, Sort: query.SortRelevance, Page: 1, Size: 100}, k)
		if err != nil {
			t.Fatalf("%s %q: %v", k, q, err)
		}
		return resp
	}
	// The longest texts allowed stay under OpenSearch's clause limit.
	var long []rune
	for i := range query.MaxQueryRune {
		long = append(long, rune(0xAC00+i*37))
	}
	for _, q := range []string{strings.Repeat("치킨 피자 ", query.MaxQueryRune/6), string(long)} {
		for _, k := range kinds {
			search(q, k)
		}
	}
	for _, k := range kinds {
		if n := search("메뉴", k).Total; n == 0 {
			t.Fatalf("%s: 메뉴 alone matches nothing: the test's premise is wrong", k)
		}
		if got := search("존재하지않는메뉴xyz", k); got.Total != 0 {
			t.Errorf("%s: 존재하지않는메뉴xyz matched %d shops, want none", k, got.Total)
		}
		// A text of symbols alone is a valid text query (api/openapi.json
		// says so) that the analyzers turn into no word: it matches no shop
		// on any layout, rather than every shop or an error.
		for _, q := range []string{"±", "!!!", "★ ☆ ...", "-"} {
			if got := search(q, k); got.Total != 0 || len(got.Shops) != 0 {
				t.Errorf("%s: the text %q matched %d shops, want none", k, q, got.Total)
			}
		}
		both := search("불고기 피자", k)
		if both.Total == 0 || both.Total >= search("피자", k).Total || both.Total >= search("불고기", k).Total {
			t.Errorf("%s: 불고기 피자 matched %d shops: want some, and fewer than either word alone", k, both.Total)
		}
		for _, shop := range both.Shops {
			found := false
			for _, m := range shop.MatchedMenus {
				text := m.Name + " " + m.Description + " " + shop.Name
				found = found || (strings.Contains(text, "불고기") && strings.Contains(text, "피자"))
			}
			if !found {
				t.Errorf("%s: shop %d (%s) matched 불고기 피자 without a menu holding both words: %+v", k, shop.ID, shop.Name, shop.MatchedMenus)
			}
		}
	}
}
