package indexer

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// writeHotTable sends the hot rows of the heads about to be written (todo:
// indexes into c.Actions) to the table on every node, retrying 429s, 5xx
// (a node that did not take the update: the plugin answers 503) and transport
// errors until deadline. It runs between the menu documents and the heads:
// if the worker dies after it, the heads are older and the batch is applied
// again, so the table never holds a version that no redelivery would write
// to the shop index.
func (ix *Indexer) writeHotTable(ctx context.Context, c Coalesced, heads []int, deadline time.Time, stats *Stats) error {
	path := HotTablePath(ix.cfg.Layout.Alias(PartHotShop.Role()), "_update")
	for start := 0; start < len(heads); start += maxHotEntries {
		chunk := heads[start:min(start+maxHotEntries, len(heads))]
		rows := make([]HotEntry, len(chunk))
		for i, a := range chunk {
			act := c.Actions[a]
			rows[i] = HotEntryOf(&c.States[act.ShopID].Parts[act.Part])
		}
		body, err := json.Marshal(map[string]any{"shops": rows})
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				stats.Retries++
				ix.m.retries.WithLabelValues(ix.label).Inc()
				if err := sleepCtx(ctx, backoff(attempt, ix.cfg.RetryBase, ix.cfg.RetryMax)); err != nil {
					return fmt.Errorf("indexer: hot table update of %d shops: %w", len(rows), err)
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
				return fmt.Errorf("indexer: hot table update of %d shops, attempt %d: %w", len(rows), attempt+1, err)
			}
			ix.log.Warn("hot table update failed, retrying", "shops", len(rows), "attempt", attempt+1, "err", err)
		}
	}
	return nil
}
