package indexer

import (
	"testing"

	"github.com/baedal/baedal/catalog"
)

// TestHotRowDigestVectors holds the Go digest to vectors computed by an
// independent implementation (Python, in the commit that added it); the
// plugin's HotTableTest holds the Java side to the same vectors, so a node's
// `_status` digest can be compared with the digest of the events' states.
func TestHotRowDigestVectors(t *testing.T) {
	a := HotEntry{ID: 1, Version: 7, Open: true, DeliveryMinutes: 30, DeliveryFee: 2000, Rating: 4.5, ReviewCount: 120}
	b := HotEntry{ID: 9223372036854774, Version: 3, DeliveryMinutes: 45, Rating: 3.9}
	if got := HotRowDigest(a); got != 0x76c8f2b523da1b2d {
		t.Errorf("HotRowDigest(%+v) = %016x, want 76c8f2b523da1b2d", a, got)
	}
	if got := HotRowDigest(b); got != 0x19e7a11e1a78eb3b {
		t.Errorf("HotRowDigest(%+v) = %016x, want 19e7a11e1a78eb3b", b, got)
	}
	state := func(e HotEntry, deleted bool) *catalog.ShopState {
		return &catalog.ShopState{Version: e.Version, Deleted: deleted, Shop: catalog.Shop{ID: e.ID, Open: e.Open,
			DeliveryMinutes: e.DeliveryMinutes, DeliveryFee: e.DeliveryFee, Rating: e.Rating, ReviewCount: e.ReviewCount}}
	}
	gone := state(HotEntry{ID: 5, Version: 2}, true)
	if got := HotTableDigest([]*catalog.ShopState{state(b, false), gone, state(a, false)}); got != "90b093d33e530668" {
		t.Errorf("HotTableDigest of two live shops and a deleted one = %s, want 90b093d33e530668", got)
	}
	if got := HotTableDigest(nil); got != "0000000000000000" {
		t.Errorf("HotTableDigest of no shops = %s, want 16 zeros", got)
	}
}
