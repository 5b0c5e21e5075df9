package nodeloss

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/baedal/baedal/catalog"
	"github.com/baedal/baedal/indexer"
	"github.com/baedal/baedal/internal/osapi"
	"github.com/baedal/baedal/layout"
)

// HotTableCheck is one node's baedal-hot table at the end of a run, beside
// the hot rows the accepted events describe and those the shop index holds
// (the table follows the node's copy of the shop index).
type HotTableCheck struct {
	Node   string `json:"node"`
	Ready  bool   `json:"ready"`
	Shops  int    `json:"shops"`
	Digest string `json:"digest"`
	// WantShops and WantDigest are the live shops of the accepted events'
	// states; ShopIndexDigest is the digest of the shop index's documents.
	WantShops       int    `json:"want_shops"`
	WantDigest      string `json:"want_digest"`
	ShopIndexDigest string `json:"shop_index_digest"`
	// Tombstones is what the node's table holds; WantTombstones the shops
	// the accepted events deleted (after creating them), whose head
	// tombstones must survive restarts of one node or of the whole cluster.
	Tombstones     int `json:"tombstones"`
	WantTombstones int `json:"want_tombstones"`
	// Disagreeing is what the plugin's check of the table against the
	// node's own copy found (0 when they agree).
	Disagreeing int `json:"disagreeing"`
	// RowDiffs, when the table differs, names the first shops whose row, as
	// a search on the hot menu index reads it, differs from the events'
	// state or the shop index (the search reads every shard's own node, so
	// on several nodes it is not this node's table alone).
	RowDiffs []string `json:"row_diffs,omitempty"`
}

// Equal reports whether the node's table is ready and holds exactly the
// events' live rows, and the shop index agrees with both.
func (c HotTableCheck) Equal() bool {
	return c.Ready && c.Shops == c.WantShops && c.Digest == c.WantDigest && c.ShopIndexDigest == c.WantDigest &&
		c.Tombstones == c.WantTombstones && c.Disagreeing == 0
}

// checkHotTables compares every data node's table (the plugin's checked
// `_status`: live rows and their digest, indexer.HotTableDigest) with the states the
// accepted events describe and with the shop index's documents, until they
// agree or timeout passes (a restarted node may still be rebuilding), and
// returns the last comparison: one check per node that answered (a node
// that did not is missing from it, and the caller counts it).
func checkHotTables(ctx context.Context, osc *osapi.Client, cfg indexer.Config, nodes int, states map[int64]*catalog.ShopState, timeout time.Duration) ([]HotTableCheck, error) {
	ids := slices.Sorted(maps.Keys(states))
	var live []*catalog.ShopState
	deleted := 0
	for _, id := range ids {
		switch s := states[id]; {
		case !s.Deleted && s.Version > 0:
			live = append(live, s)
		case s.Deleted:
			deleted++
		}
	}
	want := indexer.HotTableDigest(live)
	ix, err := indexer.New(cfg, layout.Hot, osc, nil, nil)
	if err != nil {
		return nil, err
	}
	alias := cfg.Layout.Alias(layout.RoleHotShops)
	var checks []HotTableCheck
	for deadline := time.Now().Add(timeout); ; time.Sleep(500 * time.Millisecond) {
		held, err := ix.Fetch(ctx, ids)
		if err != nil {
			return nil, fmt.Errorf("nodeloss: read the hot shop index: %w", err)
		}
		var indexed []*catalog.ShopState
		for _, id := range ids {
			if s := held[id].Aggregate(layout.Hot); !s.Deleted && s.Version > 0 {
				indexed = append(indexed, &s)
			}
		}
		// A node still recovering its copy makes `_status` a 503: retried.
		status, err := layout.FetchHotStatus(ctx, osc, alias, true)
		if err != nil && !osapi.Retryable(err) {
			return nil, fmt.Errorf("nodeloss: %w", err)
		}
		checks = nil
		for _, node := range slices.Sorted(maps.Keys(status.Nodes)) {
			n := status.Nodes[node]
			c := HotTableCheck{Node: node, Ready: n.Ready, Shops: int(n.Shops), Digest: n.Digest,
				WantShops: len(live), WantDigest: want, ShopIndexDigest: indexer.HotTableDigest(indexed),
				Tombstones: int(n.Tombstones), WantTombstones: deleted, Disagreeing: -1}
			if n.Disagreeing != nil {
				c.Disagreeing = *n.Disagreeing
			}
			checks = append(checks, c)
		}
		done := len(checks) == nodes && !slices.ContainsFunc(checks, func(c HotTableCheck) bool { return !c.Equal() })
		if done || ctx.Err() != nil {
			return checks, nil
		}
		if time.Now().After(deadline) {
			diffs, err := hotRowDiffs(ctx, osc, cfg, states, held)
			if err != nil {
				diffs = []string{"the rows could not be read: " + err.Error()}
			}
			for i := range checks {
				if !checks[i].Equal() {
					checks[i].RowDiffs = diffs
				}
			}
			return checks, nil
		}
	}
}

// maxRowDiffs bounds HotTableCheck.RowDiffs.
const maxRowDiffs = 10

// hotRowDiffs reads every shop's table row as search does (the hot menu
// index with the plugin's fetch extension) and names the first shops whose
// row is not the events' state or not the shop index's document.
func hotRowDiffs(ctx context.Context, osc *osapi.Client, cfg indexer.Config, states map[int64]*catalog.ShopState, held map[int64]*indexer.ShopParts) ([]string, error) {
	body := fmt.Appendf(nil, `{"size":%d,"_source":["id"],"query":{"match_all":{}},"sort":[{"id":"asc"}],"ext":{"baedal_hot":{"table":%q}}}`,
		len(states)+100, cfg.Layout.Alias(layout.RoleHotShops))
	var resp struct {
		Hits struct {
			Hits []struct {
				Source struct {
					ID int64 `json:"id"`
				} `json:"_source"`
				Fields map[string][]indexer.HotEntry `json:"fields"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := osc.Do(ctx, http.MethodPost, "/"+cfg.Layout.Alias(layout.RoleHotMenus)+"/_search", body, &resp); err != nil {
		return nil, err
	}
	inTable := make(map[int64]indexer.HotEntry)
	for _, h := range resp.Hits.Hits {
		for _, row := range h.Fields["baedal_hot"] {
			row.ID = h.Source.ID
			inTable[row.ID] = row
		}
	}
	var diffs []string
	for _, id := range slices.Sorted(maps.Keys(states)) {
		want := indexer.HotEntryOf(states[id])
		var indexed indexer.HotEntry
		if p := held[id]; p != nil {
			s := p.Aggregate(layout.Hot)
			indexed = indexer.HotEntryOf(&s)
		}
		got, ok := inTable[id]
		if want.Deleted && !ok && (indexed.Deleted || indexed.Version == 0) {
			continue
		}
		if !ok || got != want || indexed != want {
			diffs = append(diffs, fmt.Sprintf("shop %d: table %+v (found %v), events %+v, shop index %+v", id, got, ok, want, indexed))
			if len(diffs) == maxRowDiffs {
				break
			}
		}
	}
	return diffs, nil
}
