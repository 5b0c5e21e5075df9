package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
)

// HotEntry is one shop's row of the baedal-hot plugin's table: the whole hot
// state at the aggregate version, as the plugin reads it from the shop's
// head document (docs/hot-layout.md).
type HotEntry struct {
	ID              int64   `json:"id"`
	Version         int64   `json:"version"`
	Deleted         bool    `json:"deleted,omitempty"`
	Open            bool    `json:"open"`
	DeliveryMinutes int     `json:"delivery_minutes"`
	DeliveryFee     int     `json:"delivery_fee"`
	Rating          float64 `json:"rating"`
	ReviewCount     int     `json:"review_count"`
}

// HotEntryOf returns the table row of a shop state.
func HotEntryOf(st *catalog.ShopState) HotEntry {
	if st.Deleted {
		return HotEntry{ID: st.Shop.ID, Version: st.Version, Deleted: true}
	}
	s := &st.Shop
	return HotEntry{ID: s.ID, Version: st.Version, Open: s.Open, DeliveryMinutes: s.DeliveryMinutes,
		DeliveryFee: s.DeliveryFee, Rating: s.Rating, ReviewCount: s.ReviewCount}
}

// HotRowDigest is the digest of one live table row, as the plugin computes
// it (HotTable.rowDigest): h = splitmix64(id), then h = splitmix64(h + v) for
// the version, open (1 or 0), delivery_minutes, delivery_fee, the IEEE 754
// bits of rating and review_count, in wrapping 64-bit arithmetic. A table's
// digest (the `digest` of each node in `_status`, in hex) is the sum of its
// live rows' digests, so HotTableDigest of the states the events describe
// equals it exactly when the node holds those rows.
func HotRowDigest(e HotEntry) uint64 {
	open := uint64(0)
	if e.Open {
		open = 1
	}
	h := splitmix64(uint64(e.ID))
	for _, v := range []uint64{uint64(e.Version), open, uint64(int64(e.DeliveryMinutes)), uint64(int64(e.DeliveryFee)),
		math.Float64bits(e.Rating), uint64(int64(e.ReviewCount))} {
		h = splitmix64(h + v)
	}
	return h
}

// HotTableDigest is the digest of a table holding the live shops among
// states, as the plugin's `_status` reports it: 16 hex digits.
func HotTableDigest(states []*catalog.ShopState) string {
	var sum uint64
	for _, st := range states {
		if !st.Deleted {
			sum += HotRowDigest(HotEntryOf(st))
		}
	}
	return fmt.Sprintf("%016x", sum)
}

// splitmix64 is the finalizer of SplitMix64 (Steele, Lea and Flood, 2014).
func splitmix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// PurgeHotTombstones deletes the hot layout's head tombstones whose
// retention ended (deleted_at before now minus retention) from the
// shop-head index behind alias, and returns how many it deleted. Each
// node's baedal-hot table drops the row when its copy applies the delete. A
// shop recreated meanwhile is a newer document, so the delete-by-query's
// version check skips it (conflicts=proceed).
func PurgeHotTombstones(ctx context.Context, os *osapi.Client, alias string, retention time.Duration) (int, error) {
	body := fmt.Appendf(nil, `{"query":{"bool":{"filter":[{"term":{"deleted":true}},{"range":{"deleted_at":{"lt":"now-%ds"}}}]}}}`,
		int64(retention.Seconds()))
	var out struct {
		Deleted  int               `json:"deleted"`
		Failures []json.RawMessage `json:"failures"`
	}
	if err := os.Do(ctx, http.MethodPost, "/"+alias+"/_delete_by_query?conflicts=proceed&slices=auto", body, &out); err != nil {
		return 0, fmt.Errorf("indexer: purge hot tombstones older than %s from %s: %w", retention, alias, err)
	}
	if len(out.Failures) > 0 {
		return out.Deleted, fmt.Errorf("indexer: purge hot tombstones from %s: %d failures, first: %s", alias, len(out.Failures), out.Failures[0])
	}
	return out.Deleted, nil
}
