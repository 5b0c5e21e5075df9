package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/internal/osapi"
)

// HotEntry is one shop's row of the baedal-hot plugin's table: the whole hot
// state at the aggregate version, so an update is idempotent
// (docs/hot-layout.md).
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

// HotTablePath returns the REST path of an action on the table of a shop
// index (or alias): "_update", "_status" or "_rebuild".
func HotTablePath(shopIndex, action string) string {
	return "/_baedal/hot/" + shopIndex + "/" + action
}

// hotUpdateResponse is the part of the plugin's update answer we read.
type hotUpdateResponse struct {
	Nodes struct {
		Total, Successful, Failed int
	} `json:"nodes"`
	Applied int `json:"applied"`
	Stale   int `json:"stale"`
}

// maxHotEntries bounds one table update (~120 bytes per entry).
const maxHotEntries = 5000

// writeHotTable sends the current hot row of every shop of the batch
// (applied events or not, except the poisoned ones and shops that never
// existed) to the table on every node, retrying 429s, 5xx (a node that did
// not take the update: the plugin answers 503) and transport errors until
// deadline. Rows go for every shop of a batch, so a worker killed after the
// heads were written but before the rows were sent still sends them on
// redelivery, when every event of the batch is stale.
//
// Rows are idempotent (the table keeps the newest version), so re-sending
// one costs a few bytes and never makes the table older.
func (ix *Indexer) writeHotTable(ctx context.Context, c Coalesced, poisoned map[int64]string, deadline time.Time, stats *Stats) error {
	var rows []HotEntry
	for _, shopID := range slices.Sorted(maps.Keys(c.States)) {
		head := &c.States[shopID].Parts[PartHotShop]
		if _, bad := poisoned[shopID]; bad || head.Version == 0 {
			continue
		}
		rows = append(rows, HotEntryOf(head))
	}
	if len(rows) == 0 {
		return nil
	}
	path := HotTablePath(ix.cfg.Layout.Alias(PartHotShop.Role()), "_update")
	for start := 0; start < len(rows); start += maxHotEntries {
		chunk := rows[start:min(start+maxHotEntries, len(rows))]
		body, err := json.Marshal(map[string]any{"shops": chunk})
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				stats.Retries++
				ix.m.retries.WithLabelValues(ix.label).Inc()
				if err := sleepCtx(ctx, backoff(attempt, ix.cfg.RetryBase, ix.cfg.RetryMax)); err != nil {
					return fmt.Errorf("indexer: hot table update of %d shops: %w", len(chunk), err)
				}
			}
			var out hotUpdateResponse
			start := time.Now()
			err := ix.os.Do(ctx, http.MethodPost, path, body, &out)
			stats.Bulk += time.Since(start)
			if err == nil {
				break
			}
			if !osapi.Retryable(err) || ctx.Err() != nil || time.Now().After(deadline) {
				return fmt.Errorf("indexer: hot table update of %d shops, attempt %d: %w", len(chunk), attempt+1, err)
			}
			ix.log.Warn("hot table update failed, retrying", "shops", len(chunk), "attempt", attempt+1, "err", err)
		}
	}
	return nil
}
