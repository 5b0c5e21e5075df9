package searcher

import (
	"fmt"
	"testing"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/query"
)

func shops(s ...catalog.Shop) []ShopHit {
	out := make([]ShopHit, len(s))
	for i := range s {
		out[i].Shop = s[i]
	}
	return out
}

// The re-check flags a returned closed shop under open_now, a fee over the
// bound, and a page whose shown values break its sort order; a consistent
// page passes.
func TestHotDisagreementsFlagsContradictingRows(t *testing.T) {
	fee := 2000
	r := &query.Request{OpenNow: true, MaxDeliveryFee: &fee, Sort: query.SortDeliveryMinutes}
	good := shops(catalog.Shop{Open: true, DeliveryMinutes: 10}, catalog.Shop{Open: true, DeliveryMinutes: 10, DeliveryFee: 2000},
		catalog.Shop{Open: true, DeliveryMinutes: 30})
	if got := hotDisagreements(r, good); len(got) != 0 {
		t.Errorf("a consistent page: %v, want none", got)
	}
	bad := shops(catalog.Shop{Open: true, DeliveryMinutes: 20}, catalog.Shop{DeliveryMinutes: 15},
		catalog.Shop{Open: true, DeliveryMinutes: 40, DeliveryFee: 2500})
	got := hotDisagreements(r, bad)
	if got["filter"] != 2 || got["order"] != 1 {
		t.Errorf("closed shop, fee 2500 > 2000, 15 after 20: got %v, want filter 2, order 1", got)
	}
	outside := shops(catalog.Shop{Open: true}, catalog.Shop{Open: true})
	no, yes := false, true
	outside[0].Delivers, outside[1].Delivers = &yes, &no
	if got := hotDisagreements(&query.Request{OpenNow: true}, outside); got["filter"] != 1 {
		t.Errorf("an open shop outside its radius under open_now: got %v, want filter 1", got)
	}
	if got := hotDisagreements(&query.Request{}, outside); len(got) != 0 {
		t.Errorf("an open shop outside its radius without open_now: got %v, want none", got)
	}
	r = &query.Request{Sort: query.SortRating}
	if got := hotDisagreements(r, shops(catalog.Shop{Rating: 4.1}, catalog.Shop{Rating: 4.5})); got["order"] != 1 {
		t.Errorf("rating sorts descending: 4.5 after 4.1 is out of order, got %v", got)
	}
}

// OpenSearch answers 500 "all shards failed" when every copy of a shard was
// out of reach (here: the node holding one copy just killed, the others not
// serving while a cluster manager is elected, seen in app/nodeloss): the
// layout is unavailable for the moment (503, and a fallback may answer). A
// 500 whose shards failed for another reason stays an error.
func TestAllShardsFailedForLostCopiesIsUnavailable(t *testing.T) {
	lost := &osapi.StatusError{Status: 500, Body: `{"error":{"root_cause":[{"type":"node_not_connected_exception","reason":"[opensearch-3][127.0.0.1:30847] Node not connected"}],"type":"search_phase_execution_exception","reason":"all shards failed","phase":"query","grouped":true}}`}
	if !unavailable(fmt.Errorf("searcher: step hot: %w", lost)) {
		t.Errorf("all shards failed on a lost node: not unavailable")
	}
	bug := &osapi.StatusError{Status: 500, Body: `{"error":{"root_cause":[{"type":"null_pointer_exception","reason":"x"}],"type":"search_phase_execution_exception","reason":"all shards failed"}}`}
	if unavailable(bug) {
		t.Errorf("all shards failed on a null pointer: unavailable, want an error")
	}
}
