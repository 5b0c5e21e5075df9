package searcher

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/baedal/baedal/query"
)

// A text of several words scores each word in the shop name as the word
// alone would (its phrase forms), besides the whole text's forms, each
// phrase once; a one-word text keeps its own forms only.
func TestShopNamePhrases(t *testing.T) {
	if got, want := shopNamePhrases([]string{"치킨"}, true), phraseForms([]string{"치킨"}, true); !slices.Equal(got, want) {
		t.Errorf("one word: %q, want its phrase forms %q", got, want)
	}
	got := shopNamePhrases([]string{"후라이드", "치킨"}, true)
	for _, want := range []string{"후라이드 치킨", "후라이드 chicken", "후라이드", "치킨", "chicken"} {
		if !slices.Contains(got, want) {
			t.Errorf("후라이드 치킨: %q lacks %q", got, want)
		}
	}
	synonymsOfEachOther := shopNamePhrases([]string{"burger", "버거"}, true)
	seen := map[string]bool{}
	for _, p := range synonymsOfEachOther {
		if seen[p] {
			t.Errorf("burger 버거: %q holds %q twice", synonymsOfEachOther, p)
		}
		seen[p] = true
	}
	if !seen["burger"] || !seen["버거"] {
		t.Errorf("burger 버거: %q lacks a word's own phrase", synonymsOfEachOther)
	}
	if got := shopNamePhrases([]string{"불고기", "피자"}, false); !slices.Equal(got, []string{"불고기 피자", "불고기", "피자"}) {
		t.Errorf("without synonyms: %q", got)
	}
}

// With a location the filter is the largest radius any shop may have;
// only open_now adds the per-shop radius (can take an order now), so a
// shop outside its radius is otherwise a candidate, shown and marked.
func TestDeliveryAreaFiltersOnlyUnderOpenNow(t *testing.T) {
	lat, lon := 37.5, 127.0
	perShop := func(point obj) obj { return obj{"per_shop_radius": point} }
	for _, tc := range []struct {
		openNow bool
		want    []string
	}{{false, []string{"geo_distance"}}, {true, []string{"geo_distance", "per_shop_radius"}}} {
		r := &query.Request{Lat: &lat, Lon: &lon, OpenNow: tc.openNow}
		var kinds []string
		for _, f := range coldShopFilters(r, perShop) {
			for k := range f.(obj) {
				kinds = append(kinds, k)
			}
		}
		if !slices.Equal(kinds, tc.want) {
			t.Errorf("open_now=%v: filters %v, want %v", tc.openNow, kinds, tc.want)
		}
		field, err := json.Marshal(deliversField(r))
		if err != nil || !strings.Contains(string(field), "delivery_radius_km") {
			t.Errorf("open_now=%v: the delivers mark is %s (%v), want the radius script", tc.openNow, field, err)
		}
	}
	if f := deliversField(&query.Request{}); f != nil {
		t.Errorf("without a location: delivers field %v, want none", f)
	}
}
